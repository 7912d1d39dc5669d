//! The documentation a newcomer reads: the README stays short, and every relative link in
//! it and in `docs/` leads to a file or directory of the repository.

use std::path::Path;

use dcg_tests::repo_root;

/// The relative targets of the Markdown links `[text](target)` in `text`, without
/// `#anchors`.
fn relative_links(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find("](") {
        rest = &rest[i + 2..];
        let Some(end) = rest.find(')') else { break };
        let target = rest[..end].split('#').next().unwrap_or_default();
        if !target.is_empty() && !target.contains("://") && !target.starts_with("mailto:") {
            out.push(target.to_string());
        }
    }
    out
}

fn check_links(file: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(file).unwrap();
    let dir = file.parent().unwrap();
    relative_links(&text)
        .into_iter()
        .filter(|t| !dir.join(t).exists())
        .map(|t| format!("{}: {t}", file.display()))
        .collect()
}

#[test]
fn readme_and_docs_links_resolve() {
    let root = repo_root();
    let mut files = vec![root.join("README.md")];
    for e in std::fs::read_dir(root.join("docs")).unwrap().flatten() {
        if e.path().extension().is_some_and(|x| x == "md") {
            files.push(e.path());
        }
    }
    assert!(files.len() > 3, "docs/ has no pages");
    let broken: Vec<String> = files.iter().flat_map(|f| check_links(f)).collect();
    assert!(
        broken.is_empty(),
        "links that lead nowhere:\n{}",
        broken.join("\n")
    );
}

#[test]
fn readme_is_short_and_links_every_docs_page() {
    let root = repo_root();
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let lines = readme.lines().count();
    assert!(
        lines <= 250,
        "README.md has {lines} lines; the reference belongs in docs/"
    );
    for e in std::fs::read_dir(root.join("docs")).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        assert!(
            readme.contains(&format!("](docs/{name})")),
            "README.md does not link docs/{name}"
        );
    }
}

#[test]
fn link_finder_sees_targets() {
    assert_eq!(
        relative_links("a [x](docs/a.md#s) [y](https://e.org) [z](../b) [](#top)"),
        ["docs/a.md", "../b"]
    );
}
