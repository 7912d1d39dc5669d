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

/// BENCHMARKS.md is the current standing that `bench/run.sh` writes from
/// `bench/results/`: short, one section a measure, each with its goal and its figure.
#[test]
fn benchmarks_is_the_current_standing() {
    let root = repo_root();
    let text = std::fs::read_to_string(root.join("BENCHMARKS.md")).unwrap();
    let lines = text.lines().count();
    assert!(
        lines <= 400,
        "BENCHMARKS.md has {lines} lines; older figures belong in git history"
    );
    let script = std::fs::read_to_string(root.join("bench/run.sh")).unwrap();
    let names: Vec<&str> = script
        .lines()
        .find_map(|l| l.strip_prefix("names=("))
        .and_then(|l| l.strip_suffix(')'))
        .expect("bench/run.sh lists its measures in names=(...)")
        .split_whitespace()
        .collect();
    let sections = text.matches("\n## ").count();
    assert_eq!(sections, names.len(), "one section a measure");
    assert_eq!(
        text.matches("\nGoal: ").count(),
        names.len(),
        "a goal a measure"
    );
    for n in names {
        let result = root.join("bench/results").join(format!("{n}.txt"));
        let Ok(first) = std::fs::read_to_string(&result) else {
            let missing = format!("Not measured yet: `bash bench/run.sh {n}`.");
            assert!(text.contains(&missing), "{}: missing", result.display());
            continue;
        };
        let head = first.lines().next().unwrap_or("");
        assert!(
            head.starts_with("measured 20") && text.contains(&head[1..]),
            "{}: its figure is not the one BENCHMARKS.md shows (run bash bench/run.sh --write-only)",
            result.display()
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
