//! Running kustomize over a rendered tree: the scratch copy it runs in, finding the program, and
//! the run itself. Shared by the doors that build a kustomization after rendering a tree in place
//! ([`crate::inplace`]): kiln-flux's preview and kiln-cmp's kustomize applications.
//!
//! Nothing here checks what the kustomizations name: a caller runs
//! [`crate::kustomize_paths::check`] on the scratch copy first, and runs kustomize only when it
//! finds nothing.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;

use crate::diag::{codes, Diagnostic};
use crate::document::SourceFile;
use crate::inplace::OutFile;

/// The program that builds: `kustomize` (run as `kustomize build DIR ARGS…`) or `kubectl` (run as
/// `kubectl kustomize DIR ARGS…`), told apart by the program's file name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Program(pub PathBuf);

impl Program {
    /// Whether the program is kubectl (its file name starts with `kubectl`).
    pub fn is_kubectl(&self) -> bool {
        self.0
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("kubectl"))
    }

    /// The arguments that build `dir` with `extra` options.
    pub fn args(&self, dir: &Path, extra: &[String]) -> Vec<std::ffi::OsString> {
        let mut a: Vec<std::ffi::OsString> = vec![if self.is_kubectl() {
            "kustomize".into()
        } else {
            "build".into()
        }];
        a.push(dir.as_os_str().to_os_string());
        a.extend(extra.iter().map(Into::into));
        a
    }
}

/// The first of `names` found as a file on `PATH`.
pub fn on_path(names: &[&str]) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    for name in names {
        for dir in std::env::split_paths(&path) {
            let c = dir.join(name);
            if c.is_file() {
                return Some(c);
            }
        }
    }
    None
}

/// Run `program` over `dir` (with the working directory `cwd`), and return what it prints.
/// `shown` names `dir` in diagnostics (a scratch path means nothing to a user); `hint` says
/// what to fix when the build fails. Standard input is closed; the output must be UTF-8.
pub fn run(
    program: &Program,
    dir: &Path,
    cwd: &Path,
    extra: &[String],
    shown: &str,
    hint: &str,
) -> Result<String, Diagnostic> {
    let out = Command::new(&program.0)
        .args(program.args(dir, extra))
        .current_dir(cwd)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| {
            Diagnostic::error(
                codes::REQUEST_INVALID,
                format!("cannot run {}: {e}", program.0.display()),
            )
            .with_hint("check that kustomize (or kubectl) is installed and executable")
        })?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let stderr: Vec<&str> = stderr.lines().map(without_log_header).collect();
        let mut msg = stderr
            .join("\n")
            .trim()
            .replace(&dir.display().to_string(), shown);
        let cwd_shown = cwd.display().to_string();
        if !cwd_shown.is_empty() && cwd_shown != "/" {
            msg = msg.replace(&cwd_shown, ".");
        }
        return Err(Diagnostic::error(
            codes::REQUEST_INVALID,
            format!("kustomize build failed: {msg}"),
        )
        .in_file(shown.to_string())
        .with_hint(hint.to_string()));
    }
    String::from_utf8(out.stdout).map_err(|_| {
        Diagnostic::error(codes::NOT_UTF8, "kustomize wrote output that is not UTF-8")
            .in_file(shown.to_string())
    })
}

/// A line of kubectl's log without its header (`E1127 16:20:20.444300   12595 run.go:72] `):
/// the time and process id would make the same failure a different message every run.
fn without_log_header(line: &str) -> &str {
    let b = line.as_bytes();
    let header = b.len() > 5
        && matches!(b[0], b'E' | b'W' | b'I' | b'F')
        && b[1..5].iter().all(u8::is_ascii_digit)
        && b[5] == b' ';
    match line.find("] ") {
        Some(i) if header => &line[i + 2..],
        _ => line,
    }
}

/// `diagnostics` of a failed build with the secrets of the files it was staged from (the
/// rendered tree and the files beside it) blanked out: kustomize's messages quote the node they
/// fail on (`node contents: …`), which may be a Secret's data.
pub fn redacted(diagnostics: Vec<Diagnostic>, staged: &[&[OutFile]]) -> Vec<Diagnostic> {
    if diagnostics.is_empty() {
        return diagnostics;
    }
    let files: Vec<Arc<SourceFile>> = staged
        .iter()
        .flat_map(|fs| fs.iter())
        .filter_map(|f| {
            let text = std::str::from_utf8(&f.bytes).ok()?;
            Some(Arc::new(SourceFile {
                name: f.rel.clone(),
                text: text.to_string(),
            }))
        })
        .collect();
    let secrets = crate::request::collect_secrets(&files, &[], &[]);
    diagnostics
        .iter()
        .map(|d| secrets.redact_diagnostic(d))
        .collect()
}

/// Write a scratch copy: `others` (files outside the rendered tree, byte for byte) at their
/// paths, and `built` (the rendered tree) below `rel`.
pub fn stage(
    stage: &Path,
    rel: &Path,
    others: &[OutFile],
    built: &[OutFile],
) -> Result<(), Diagnostic> {
    let put = |path: PathBuf, f: &OutFile| -> Result<(), Diagnostic> {
        if let Some(p) = path.parent() {
            std::fs::create_dir_all(p).map_err(|e| io_err(&path, &e))?;
        }
        std::fs::write(&path, &f.bytes).map_err(|e| io_err(&path, &e))
    };
    for f in others {
        put(stage.join(&f.rel), f)?;
    }
    std::fs::create_dir_all(stage.join(rel)).map_err(|e| io_err(stage, &e))?;
    for f in built {
        put(stage.join(rel).join(&f.rel), f)?;
    }
    Ok(())
}

/// A failure to write the scratch copy.
pub fn io_err(p: &Path, e: &std::io::Error) -> Diagnostic {
    Diagnostic::error(
        codes::IO_READ,
        format!("cannot write the scratch copy: {e}"),
    )
    .in_file(p.display().to_string())
    .with_hint("check the space and permissions of the temporary directory (TMPDIR)")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubectls_log_header_is_left_out() {
        assert_eq!(
            without_log_header(
                "E1127 16:20:20.444300   12595 run.go:72] \"command failed\" err=\"x\""
            ),
            "\"command failed\" err=\"x\""
        );
        assert_eq!(without_log_header("Error: x] y"), "Error: x] y");
    }

    #[test]
    fn kubectl_and_kustomize_are_run_as_each_builds() {
        let d = Path::new("/x");
        let k = Program("/usr/bin/kubectl".into());
        assert_eq!(k.args(d, &[]), ["kustomize", "/x"]);
        let k = Program("/opt/kustomize".into());
        assert_eq!(
            k.args(d, &["--enable-helm".into()]),
            ["build", "/x", "--enable-helm"]
        );
    }
}
