//! Man pages, shell completions and the examples ending `--help`, all generated from a
//! binary's clap command, so none of them can drift from what the binary accepts.
//!
//! Both binaries (`dcg`, `dwarfscan`) call [`write_docs`] from a hidden option; the
//! generated files are committed under `tracer/cli/doc/` (the Debian package installs
//! them) and a test regenerates them and compares.

use std::io;
use std::path::{Path, PathBuf};

use clap::Command;
use clap_complete::Shell;
use roff::{bold, roman, Roff};

/// One example: what it does, and the command line.
#[derive(Debug, Clone, Copy)]
pub struct Example {
    pub what: &'static str,
    pub cmd: &'static str,
}

/// The examples of a command, by its name (`"dcg"`, `"trace"`, `"dwarfscan"`).
pub type Examples = fn(&str) -> &'static [Example];

/// The text that ends `--help`: a heading and each example, its line indented under it.
pub fn help_text(examples: &[Example]) -> String {
    let mut s = String::from("Examples:");
    for e in examples {
        s.push_str("\n  ");
        s.push_str(e.what);
        s.push_str("\n    $ ");
        s.push_str(e.cmd);
    }
    s
}

/// The man page of `cmd` (built, so that a subcommand's display name is `dcg-trace`):
/// clap_mangen's sections, with an EXAMPLES section before VERSION in place of the
/// `--help` text's examples. `source` names the program and version in the page's footer.
pub fn man_page(cmd: &Command, examples: &[Example], source: &str) -> io::Result<Vec<u8>> {
    let bare = cmd
        .clone()
        .after_help(None::<&str>)
        .after_long_help(None::<&str>);
    let man = clap_mangen::Man::new(bare)
        .manual("dcg manual")
        .source(source.to_string());
    let mut page = Vec::new();
    man.render(&mut page)?;
    if examples.is_empty() {
        return Ok(page);
    }
    let mut roff = Roff::new();
    roff.control("SH", ["EXAMPLES"]);
    for e in examples {
        roff.control("TP", []);
        roff.text([bold(e.cmd)]);
        roff.text([roman(e.what)]);
    }
    let section = roff.to_roff();
    let at = find(&page, b"\n.SH VERSION").map_or(page.len(), |i| i + 1);
    page.splice(at..at, section.into_bytes());
    Ok(page)
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// The completion script of `cmd` for `shell`, and the file name each shell looks for.
pub fn completion(cmd: &Command, shell: Shell) -> (String, Vec<u8>) {
    let name = cmd.get_name().to_string();
    let file = match shell {
        Shell::Zsh => format!("_{name}"),
        Shell::Fish => format!("{name}.fish"),
        _ => name.clone(),
    };
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut cmd.clone(), name, &mut script);
    (file, script)
}

/// The shells completions are generated for, with the directory each lives in under
/// `DIR/completions/`.
pub const SHELLS: [(Shell, &str); 3] = [
    (Shell::Bash, "bash"),
    (Shell::Zsh, "zsh"),
    (Shell::Fish, "fish"),
];

/// Write `DIR/man/NAME.1` for `cmd` and each visible subcommand (`dcg-trace.1`) and
/// `DIR/completions/{bash/NAME, zsh/_NAME, fish/NAME.fish}`; returns the files written.
pub fn write_docs(cmd: Command, examples: Examples, dir: &Path) -> io::Result<Vec<PathBuf>> {
    let mut cmd = cmd.disable_help_subcommand(true);
    cmd.build();
    let source = format!(
        "{} {}",
        cmd.get_name(),
        cmd.get_version().unwrap_or_default()
    );
    let mut written = Vec::new();
    let man_dir = dir.join("man");
    std::fs::create_dir_all(&man_dir)?;
    let mut pages = vec![(cmd.clone(), cmd.get_name().to_string())];
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        pages.push((sub.clone(), sub.get_name().to_string()));
    }
    for (page_cmd, name) in pages {
        let file_name = format!(
            "{}.1",
            page_cmd.get_display_name().unwrap_or(page_cmd.get_name())
        );
        let path = man_dir.join(file_name);
        std::fs::write(&path, man_page(&page_cmd, examples(&name), &source)?)?;
        written.push(path);
    }
    for (shell, sub) in SHELLS {
        let (file, script) = completion(&cmd, shell);
        let d = dir.join("completions").join(sub);
        std::fs::create_dir_all(&d)?;
        let path = d.join(file);
        std::fs::write(&path, script)?;
        written.push(path);
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{Arg, ArgAction};

    const EX: [Example; 2] = [
        Example {
            what: "Trace one function",
            cmd: "demo run --func open",
        },
        Example {
            what: "Everything",
            cmd: "demo run --all",
        },
    ];

    fn examples(name: &str) -> &'static [Example] {
        match name {
            "run" | "demo" => &EX,
            _ => &[],
        }
    }

    fn demo() -> Command {
        Command::new("demo")
            .version("1.2.3")
            .about("A demo")
            .subcommand(
                Command::new("run")
                    .about("Run it")
                    .arg(Arg::new("func").long("func").action(ArgAction::Append))
                    .arg(Arg::new("all").long("all").action(ArgAction::SetTrue))
                    .after_help(help_text(&EX)),
            )
            .subcommand(Command::new("secret").hide(true))
    }

    #[test]
    fn help_ends_with_the_examples() {
        let mut cmd = demo();
        let help = cmd
            .find_subcommand_mut("run")
            .unwrap()
            .render_help()
            .to_string();
        assert!(
            help.trim_end()
                .ends_with("Examples:\n  Trace one function\n    $ demo run --func open\n  Everything\n    $ demo run --all"),
            "{help}"
        );
    }

    #[test]
    fn pages_for_visible_subcommands_with_examples_before_version() {
        let dir = tempfile::tempdir().unwrap();
        let files = write_docs(demo(), examples, dir.path()).unwrap();
        let names: Vec<String> = files
            .iter()
            .map(|p| p.strip_prefix(dir.path()).unwrap().display().to_string())
            .collect();
        assert_eq!(
            names,
            [
                "man/demo.1",
                "man/demo-run.1",
                "completions/bash/demo",
                "completions/zsh/_demo",
                "completions/fish/demo.fish"
            ]
        );
        let run = std::fs::read_to_string(dir.path().join("man/demo-run.1")).unwrap();
        assert!(run.contains(".SH EXAMPLES"), "{run}");
        assert!(run.contains("\\fBdemo run \\-\\-func open\\fR"), "{run}");
        assert!(!run.contains("EXTRA"), "{run}");
        assert!(!run.contains("Examples:"), "{run}");
        // The top page has a version: the examples come before it.
        let top = std::fs::read_to_string(dir.path().join("man/demo.1")).unwrap();
        let ex = top.find(".SH EXAMPLES").expect("examples section");
        let ver = top.find(".SH VERSION").expect("version section");
        assert!(ex < ver, "{top}");
        assert!(!top.contains("secret"), "{top}");
        let bash = std::fs::read_to_string(dir.path().join("completions/bash/demo")).unwrap();
        assert!(bash.contains("--func"), "{bash}");
    }
}
