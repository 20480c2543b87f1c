//! `kiln --help` describes what kiln is today (issue 28): the three input models, the four
//! executables and the main commands, each with an example. The text is a snapshot
//! (`cli/tests/it/snapshots/`; review a change with `cargo insta review`, or accept it with
//! `INSTA_UPDATE=always`, never under CI), and every example it prints runs as printed.

use std::path::Path;

use crate::common::kiln_cmd;

/// `kiln args` in `dir`, at a fixed width: the help text is wrapped to the terminal's.
fn kiln(args: &[&str], dir: &Path) -> std::process::Output {
    kiln_cmd(dir).args(args).env("COLUMNS", "100").output()
}

fn help() -> String {
    let o = kiln(&["--help"], Path::new(env!("CARGO_MANIFEST_DIR")));
    assert_eq!(o.status.code(), Some(0));
    String::from_utf8(o.stdout).unwrap()
}

#[test]
fn help_describes_kiln_today() {
    let text = help();
    for model in ["ResourceGraphDefinitions", "component types", "kurel"] {
        assert!(text.contains(model), "no {model} in --help");
    }
    for exe in ["kiln-krm", "kiln-cmp", "kiln-flux"] {
        assert!(text.contains(exe), "no {exe} in --help");
    }
    insta::assert_snapshot!("kiln_help", text);
}

#[test]
fn every_example_in_help_runs_as_printed() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let text = help();
    // An example may continue on the next line after a `\\`, as a shell reads it.
    let joined = text.replace("\\\n", " ");
    let examples: Vec<&str> = joined
        .lines()
        .skip_while(|l| !l.starts_with("Examples"))
        .filter_map(|l| l.strip_prefix("  kiln "))
        .collect();
    assert!(examples.len() >= 7, "{text}");
    let tmp = tempfile::tempdir().unwrap();
    let mut cases = 0;
    for example in examples {
        // Run from the repository root; a file the example writes lands in a scratch copy.
        let args: Vec<String> = example
            .split_whitespace()
            .map(|a| {
                if a.ends_with("manifests.yaml") {
                    tmp.path().join(a).display().to_string()
                } else {
                    a.to_string()
                }
            })
            .collect();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = kiln(&args, &root);
        assert_eq!(
            o.status.code(),
            Some(0),
            "kiln {example}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        // An example that runs a golden case's files prints that case's expected output: the
        // case runs the same command (the harness adds no flag that changes stdout).
        if let Some(case) = golden_case(&root, example) {
            let written = tmp.path().join("manifests.yaml");
            let got = if example.contains(" -o ") {
                let text = std::fs::read_to_string(&written).unwrap();
                let body = text.strip_prefix(kiln_core::layout::FILE_MARKER);
                body.expect("a YAML file kiln writes starts with its mark")
                    .to_string()
            } else {
                String::from_utf8(o.stdout).unwrap()
            };
            let want = std::fs::read_to_string(case.join("expected.yaml")).unwrap();
            assert_eq!(
                got,
                want,
                "kiln {example} prints what {} expects",
                case.display()
            );
            cases += 1;
        }
    }
    assert!(tmp.path().join("manifests.yaml").is_file());
    assert!(cases >= 2, "the examples of golden cases were compared");
}

/// The golden case (a folder under `testdata/` holding `expected.yaml`) whose files an example
/// names with the case's command, if any.
fn golden_case(root: &Path, example: &str) -> Option<std::path::PathBuf> {
    let first = example
        .split_whitespace()
        .find(|a| a.starts_with("testdata/"))?;
    let case = root
        .join(first)
        .ancestors()
        .take_while(|d| d.starts_with(root.join("testdata")))
        .find(|d| d.join("expected.yaml").is_file())?
        .to_path_buf();
    let command = std::fs::read_to_string(case.join("command")).unwrap_or("render".into());
    example
        .starts_with(&format!("{} ", command.trim()))
        .then_some(case)
}
