//! Reading a source tree: every file under a directory, with its bytes, as the output tree
//! will hold them.
//!
//! Unlike kiln's input walk (manifests only, hidden entries skipped), the in-place build needs
//! every file: scripts, `.sourceignore`, `kustomization.yaml`. Rules:
//!
//! - version-control directories (`.git`, `.hg`, `.svn`, `.bzr`: [`crate::source::VCS_DIRS`])
//!   are left out, as Flux leaves `.git` out of its artifacts: never read, never packed;
//! - a symlink is followed when its target stays inside the confining root (its contents are
//!   copied as a regular file or directory), and refused when it leaves it or leads into a
//!   version-control directory: the tree is untrusted input, whoever named its directory;
//! - anything else that is not a regular file or directory (a fifo, a device) is refused;
//! - names must be UTF-8; each file is at most the input size limit.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use crate::diag::{codes, path_shown, Diagnostic, Diagnostics};
use crate::source::{is_vcs_name, vcs_component, vcs_refused};
use rayon::prelude::*;

/// One file of a tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct File {
    /// Its path below the tree's directory, `/`-separated.
    pub rel: String,
    /// Its contents.
    pub bytes: Vec<u8>,
    /// Whether any execute bit is set.
    pub executable: bool,
}

/// Every file below `dir` (which lies inside `root`), in sorted path order; directories are
/// implied by their files. Every problem is reported.
pub fn read(root: &Path, dir: &Path, max_file_bytes: usize) -> Result<Vec<File>, Diagnostics> {
    read_except(root, dir, max_file_bytes, &|_| false)
}

/// [`read`], leaving out (unread) every file whose path below `dir` `skip` names: a file a
/// door's output would not hold need not be read, nor fit the size limit.
pub fn read_except(
    root: &Path,
    dir: &Path,
    max_file_bytes: usize,
    skip: &(dyn Fn(&str) -> bool + Sync),
) -> Result<Vec<File>, Diagnostics> {
    let (mut found, diags) = list(root, dir);
    if diags.has_errors() {
        return Err(diags);
    }
    found.retain(|(rel, _)| !skip(rel));
    read_found(dir, found, max_file_bytes)
}

/// The `name` files of the tree at `root` (Flux's `.sourceignore`), read: found as [`read`]
/// finds files, but a problem elsewhere in the tree (a fifo, a link out) is [`read`]'s to
/// report, not this look-up's.
pub fn files_named(
    root: &Path,
    name: &str,
    max_file_bytes: usize,
) -> Result<Vec<File>, Diagnostics> {
    let (mut found, _) = list(root, root);
    found.retain(|(rel, _)| rel.rsplit('/').next() == Some(name));
    read_found(root, found, max_file_bytes)
}

/// Every file below `dir` (inside `root`), unread: each one's path below `dir` and its real
/// path; and the problems found (what could be listed is listed).
fn list(root: &Path, dir: &Path) -> (Vec<(String, PathBuf)>, Diagnostics) {
    let mut diags = Diagnostics::new();
    let croot = match fs::canonicalize(root) {
        Ok(r) => r,
        Err(e) => {
            diags.push(io(&root.display().to_string(), &e));
            return (Vec::new(), diags);
        }
    };
    let cdir = match fs::canonicalize(dir) {
        Ok(r) => r,
        Err(e) => {
            diags.push(io(&dir.display().to_string(), &e));
            return (Vec::new(), diags);
        }
    };
    // The tree's own directory, inside the root, is no more an input than a file there.
    if let Some(v) = cdir.strip_prefix(&croot).ok().and_then(vcs_component) {
        diags.push(vcs_refused(&dir.display().to_string(), &v, None));
        return (Vec::new(), diags);
    }
    if !cdir.is_dir() {
        diags.push(
            Diagnostic::error(codes::IO_READ, "not a directory")
                .in_file(dir.display().to_string())
                .with_hint("name the directory of the tree to build"),
        );
        return (Vec::new(), diags);
    }
    let mut found = Vec::new();
    let mut seen = BTreeSet::new();
    walk(
        &croot,
        &cdir,
        "",
        &dir.display().to_string(),
        &mut found,
        &mut seen,
        &mut diags,
    );
    (found, diags)
}

/// Read what [`list`] found below `dir`, in sorted path order.
fn read_found(
    dir: &Path,
    found: Vec<(String, PathBuf)>,
    max_file_bytes: usize,
) -> Result<Vec<File>, Diagnostics> {
    let mut diags = Diagnostics::new();
    let read: Vec<Result<File, Diagnostic>> = found
        .into_par_iter()
        .map(|(rel, real)| {
            let name = format!("{}/{rel}", dir.display());
            let meta = fs::metadata(&real).map_err(|e| io(&name, &e))?;
            if meta.len() > max_file_bytes as u64 {
                return Err(Diagnostic::error(
                    codes::YAML_BUDGET,
                    format!(
                        "{} bytes, more than the limit of {max_file_bytes}",
                        meta.len()
                    ),
                )
                .in_file(name)
                .with_hint(
                    "raise it with --limit input-bytes=N, or leave the file out of the tree",
                ));
            }
            let bytes = fs::read(&real).map_err(|e| io(&name, &e))?;
            Ok(File {
                rel,
                bytes,
                executable: is_executable(&meta),
            })
        })
        .collect();
    let mut files = Vec::with_capacity(read.len());
    for r in read {
        match r {
            Ok(f) => files.push(f),
            Err(d) => diags.push(d),
        }
    }
    if diags.has_errors() {
        Err(diags)
    } else {
        files.sort_by(|a, b| a.rel.cmp(&b.rel));
        Ok(files)
    }
}

#[cfg(unix)]
fn is_executable(meta: &fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    meta.permissions().mode() & 0o111 != 0
}

#[cfg(not(unix))]
fn is_executable(_meta: &fs::Metadata) -> bool {
    false
}

fn io(name: &str, e: &std::io::Error) -> Diagnostic {
    Diagnostic::error(codes::IO_READ, format!("cannot read: {e}"))
        .in_file(path_shown(name))
        .with_hint("check that the path exists and is readable")
}

fn walk(
    root: &Path,
    real: &Path,
    rel: &str,
    display: &str,
    out: &mut Vec<(String, PathBuf)>,
    seen: &mut BTreeSet<PathBuf>,
    diags: &mut Diagnostics,
) {
    if !seen.insert(real.to_path_buf()) {
        return;
    }
    let entries = match fs::read_dir(real) {
        Ok(e) => e,
        Err(e) => return diags.push(io(&join(display, rel), &e)),
    };
    let mut names: Vec<_> = entries.filter_map(Result::ok).collect();
    names.sort_by_key(|e| e.file_name());
    for e in names {
        let name = e.file_name();
        let Some(s) = name.to_str() else {
            diags.push(
                Diagnostic::error(codes::NOT_UTF8, "file name is not valid UTF-8")
                    .in_file(join(display, &join(rel, &name.to_string_lossy())))
                    .with_hint("rename the file"),
            );
            continue;
        };
        if is_vcs_name(s) {
            continue;
        }
        let child = join(rel, s);
        let shown = join(display, &child);
        let Ok(ft) = e.file_type() else {
            diags.push(
                Diagnostic::error(codes::IO_READ, "cannot read the file type").in_file(shown),
            );
            continue;
        };
        let path = real.join(&name);
        let (target, meta_is_dir, meta_is_file) = if ft.is_symlink() {
            match fs::canonicalize(&path) {
                Err(err) => {
                    diags.push(io(&shown, &err));
                    continue;
                }
                Ok(t) if !t.starts_with(root) => {
                    diags.push(
                        Diagnostic::error(
                            codes::PATH_ESCAPE,
                            format!(
                                "a symlink that leaves the tree's root: it resolves to {}",
                                t.display()
                            ),
                        )
                        .in_file(shown)
                        .with_hint("a tree's files may not leave its root; copy the file into the tree, or remove the link"),
                    );
                    continue;
                }
                Ok(t) => {
                    let below = t.strip_prefix(root).unwrap_or(&t);
                    if let Some(v) = vcs_component(below) {
                        diags.push(vcs_refused(&shown, &v, Some(below)));
                        continue;
                    }
                    let is_dir = t.is_dir();
                    let is_file = t.is_file();
                    (t, is_dir, is_file)
                }
            }
        } else {
            (path, ft.is_dir(), ft.is_file())
        };
        if meta_is_dir {
            walk(root, &target, &child, display, out, seen, diags);
        } else if meta_is_file {
            out.push((child, target));
        } else {
            diags.push(
                Diagnostic::error(
                    codes::NOT_A_FILE,
                    "neither a regular file nor a directory (a fifo, socket or device)",
                )
                .in_file(shown)
                .with_hint("a tree holds regular files and directories only; remove it"),
            );
        }
    }
}

fn join(a: &str, b: &str) -> String {
    if a.is_empty() {
        b.to_string()
    } else {
        format!("{a}/{b}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn walks_everything_but_git_sorted_with_links_inside() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path();
        fs::create_dir_all(p.join("t/sub")).unwrap();
        fs::create_dir_all(p.join("t/.git")).unwrap();
        fs::write(p.join("t/.git/HEAD"), "x").unwrap();
        fs::write(p.join("t/.sourceignore"), "*.md\n").unwrap();
        fs::write(p.join("t/sub/b.yaml"), "b: 1\n").unwrap();
        fs::write(p.join("t/a.sh"), "#!/bin/sh\n").unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            fs::set_permissions(p.join("t/a.sh"), fs::Permissions::from_mode(0o755)).unwrap();
            std::os::unix::fs::symlink("sub/b.yaml", p.join("t/link.yaml")).unwrap();
        }
        let files = read(&p.join("t"), &p.join("t"), 1 << 20).unwrap();
        let names: Vec<&str> = files.iter().map(|f| f.rel.as_str()).collect();
        assert_eq!(names, [".sourceignore", "a.sh", "link.yaml", "sub/b.yaml"]);
        assert!(files[1].executable);
        assert_eq!(files[2].bytes, b"b: 1\n");
    }

    /// Every version-control directory is left out, whatever its case; a link into one, and a
    /// tree inside one, are refused (issue 39).
    #[cfg(unix)]
    #[test]
    fn version_control_data_is_never_read() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path();
        for vcs in crate::source::VCS_DIRS.iter().chain(&[".Git"]) {
            fs::create_dir_all(p.join("t").join(vcs)).unwrap();
            fs::write(p.join("t").join(vcs).join("config"), "token").unwrap();
        }
        fs::write(p.join("t/a.yaml"), "a: 1\n").unwrap();
        let files = read(&p.join("t"), &p.join("t"), 1 << 20).unwrap();
        let names: Vec<&str> = files.iter().map(|f| f.rel.as_str()).collect();
        assert_eq!(names, ["a.yaml"]);
        fs::create_dir_all(p.join("t/sub")).unwrap();
        std::os::unix::fs::symlink("../.git/config", p.join("t/sub/link.yaml")).unwrap();
        std::os::unix::fs::symlink("../.hg", p.join("t/sub/dir")).unwrap();
        let e = read(&p.join("t"), &p.join("t/sub"), 1 << 20).unwrap_err();
        let found: Vec<(&str, bool)> =
            e.0.iter()
                .map(|d| {
                    (
                        d.code.id,
                        d.message.contains(".git") || d.message.contains(".hg"),
                    )
                })
                .collect();
        assert_eq!(found, [("KLN1002", true), ("KLN1002", true)], "{e:?}");
        let e = read(&p.join("t"), &p.join("t/.svn"), 1 << 20).unwrap_err();
        assert_eq!(e.0[0].code, codes::PATH_ESCAPE);
    }

    #[cfg(unix)]
    #[test]
    fn links_out_of_the_root_are_refused() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path();
        fs::create_dir_all(p.join("t")).unwrap();
        fs::write(p.join("secret"), "x").unwrap();
        std::os::unix::fs::symlink(p.join("secret"), p.join("t/s.yaml")).unwrap();
        let e = read(&p.join("t"), &p.join("t"), 1 << 20).unwrap_err();
        assert_eq!(e.0[0].code, codes::PATH_ESCAPE);
    }
}
