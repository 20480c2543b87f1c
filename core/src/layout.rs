//! Writing rendered objects into a directory (`kiln render -o DIR --layout …`), all or nothing.
//!
//! File names are stable and depend only on the objects:
//!
//! - `single`: `manifests.yaml`, every object in order;
//! - `by-kind`: `<kind>.yaml` (kind lowercased), objects of that kind in order; when two API groups
//!   share a kind name, the later group's file is `<kind>.<group>.yaml`;
//! - `by-resource`: `<kind>-<namespace>-<name>.yaml`, or `<kind>-<name>.yaml` without a namespace.
//!
//! Names come from the objects, so they are untrusted: a name like `../../etc/passwd` or `a/b` must
//! not leave the directory or create subdirectories. They are made filesystem-safe (anything but
//! ASCII letters, digits, `.`, `-`, `_` becomes `_`, so no `/`, `\` or NUL survives; no leading `.`,
//! so no `..`, hidden file or clash with the marker; a Windows device name such as `con` or `nul`
//! gets a `_` prefix; at most 200 bytes with the `-N.yaml` suffix) and de-duplicated case-insensitively in object order by
//! appending `-2`, `-3`, … before `.yaml`. Every name is a single path component.
//!
//! The directory is written as a whole: the files go into a temporary directory next to the
//! target, which then replaces it by rename, so a reader never sees a half-written directory and
//! an error leaves the old one untouched. kiln marks the directories it writes with a
//! `.kiln-output` file and only replaces a directory that is missing, empty, or carries that
//! marker: it never clobbers a directory someone else filled.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::diag::{codes, Diagnostic};
use crate::output;

/// The marker file kiln writes into every output directory.
pub const MARKER: &str = ".kiln-output";

/// How objects are spread over files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Layout {
    /// One file holding every object.
    #[default]
    Single,
    /// One file per kind.
    ByKind,
    /// One file per object.
    ByResource,
}

fn io(dir: &Path, what: &str, e: &std::io::Error) -> Diagnostic {
    Diagnostic::error(
        codes::IO_READ,
        format!("cannot {what} {}: {e}", dir.display()),
    )
    .in_file(dir.display().to_string())
    .with_hint("check that the output directory's parent exists and is writable")
}

/// A filesystem-safe file name stem.
fn safe(s: &str) -> String {
    let mut out: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if out.is_empty() {
        out.push('_');
    }
    if out.starts_with('.') || is_device_name(&out) {
        out.insert(0, '_');
    }
    // All characters are ASCII so byte truncation is safe.
    out.truncate(MAX_NAME - ".yaml".len());
    out
}

/// The longest file name kiln writes, in bytes (suffix included): well under the 255 of common
/// filesystems, with room for the temporary directory's prefix.
const MAX_NAME: usize = 200;

/// Whether `stem` (with `.yaml` appended) would name a device on Windows: `con`, `prn`, `aux`,
/// `nul`, `com1`–`com9`, `lpt1`–`lpt9`, whatever follows the first dot.
fn is_device_name(stem: &str) -> bool {
    let base = stem.split('.').next().unwrap_or("").to_ascii_lowercase();
    matches!(base.as_str(), "con" | "prn" | "aux" | "nul")
        || ((base.starts_with("com") || base.starts_with("lpt"))
            && base.len() == 4
            && base.as_bytes()[3].is_ascii_digit()
            && base.as_bytes()[3] != b'0')
}

fn str_at<'a>(o: &'a Value, p: &str) -> &'a str {
    o.pointer(p).and_then(Value::as_str).unwrap_or("")
}

/// Plan the files: `(file name, objects)` in first-appearance order.
pub fn plan(objects: &[Value], layout: Layout) -> Vec<(String, Vec<Value>)> {
    let mut files: Vec<(String, Vec<Value>)> = Vec::new();
    match layout {
        Layout::Single => files.push(("manifests.yaml".into(), objects.to_vec())),
        Layout::ByKind => {
            // (group, kind) → file index.
            let mut keys: Vec<(String, String)> = Vec::new();
            let mut taken: BTreeSet<String> = BTreeSet::new();
            for o in objects {
                let kind = str_at(o, "/kind").to_lowercase();
                let group = crate::scope::group_of(str_at(o, "/apiVersion")).to_lowercase();
                let key = (group.clone(), kind.clone());
                if let Some(i) = keys.iter().position(|k| *k == key) {
                    files[i].1.push(o.clone());
                    continue;
                }
                let mut stem = safe(&kind);
                if taken.contains(&format!("{stem}.yaml")) {
                    stem = safe(&format!("{kind}.{group}"));
                }
                let name = unique(&stem, &mut taken);
                keys.push(key);
                files.push((name, vec![o.clone()]));
            }
        }
        Layout::ByResource => {
            let mut taken = BTreeSet::new();
            for o in objects {
                let kind = str_at(o, "/kind").to_lowercase();
                let ns = str_at(o, "/metadata/namespace");
                let name = str_at(o, "/metadata/name");
                let stem = if ns.is_empty() {
                    safe(&format!("{kind}-{name}"))
                } else {
                    safe(&format!("{kind}-{ns}-{name}"))
                };
                files.push((unique(&stem, &mut taken), vec![o.clone()]));
            }
        }
    }
    files
}

/// `stem.yaml`, or `stem-2.yaml`, … when taken (compared case-insensitively, for filesystems
/// that fold case); the stem is shortened so the name with its suffix stays within
/// [`MAX_NAME`] bytes (a shortened name that is taken too moves on to the next number).
fn unique(stem: &str, taken: &mut BTreeSet<String>) -> String {
    let mut n = 1;
    loop {
        let suffix = if n == 1 {
            ".yaml".to_string()
        } else {
            format!("-{n}.yaml")
        };
        let keep = stem.len().min(MAX_NAME.saturating_sub(suffix.len()));
        let name = format!("{}{suffix}", &stem[..keep]);
        if taken.insert(name.to_lowercase()) {
            return name;
        }
        n += 1;
    }
}

/// Whether kiln may replace `dir`: it does not exist, or is an empty directory, or carries the
/// marker. Symlinks and files are refused.
fn check_target(dir: &Path) -> Result<bool, Diagnostic> {
    let refuse = |why: &str| {
        Diagnostic::error(codes::IO_READ, format!("refusing to write into {}: {why}", dir.display()))
            .in_file(dir.display().to_string())
            .with_hint(format!(
                "kiln only replaces directories it wrote (they hold a {MARKER} file); choose a new or empty directory"
            ))
    };
    match fs::symlink_metadata(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(io(dir, "inspect", &e)),
        Ok(m) if m.file_type().is_symlink() => Err(refuse("it is a symbolic link")),
        Ok(m) if !m.is_dir() => Err(refuse("it is not a directory")),
        Ok(_) => {
            let mut entries = fs::read_dir(dir).map_err(|e| io(dir, "read", &e))?;
            if entries.next().is_none() {
                return Ok(true);
            }
            if fs::symlink_metadata(dir.join(MARKER)).is_ok_and(|m| m.is_file()) {
                Ok(true)
            } else {
                Err(refuse("it is not empty and kiln did not create it"))
            }
        }
    }
}

fn temp_sibling(dir: &Path, what: &str) -> PathBuf {
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_else(|| "out".into());
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    dir.with_file_name(format!(
        ".{name}.kiln-{what}-{}-{nanos}",
        std::process::id()
    ))
}

/// Write the objects into `dir` with the given layout, replacing it as a whole; the files may
/// hold at most the default output limit ([`crate::limits::DEFAULT_OUTPUT_BYTES`]).
pub fn write_dir(dir: &Path, objects: &[Value], layout: Layout) -> Result<(), Diagnostic> {
    write_dir_limited(dir, objects, layout, crate::limits::DEFAULT_OUTPUT_BYTES)
}

/// Whether `-o PATH` names a single file rather than a directory: a name ending in `.yaml`,
/// `.yml` or `.json` that is not an existing directory. `kiln render DIR -o manifests.yaml` means a
/// file; making a directory of that name would surprise everyone.
pub fn is_file_target(path: &Path) -> bool {
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    ["yaml", "yml", "json"].contains(&ext) && !path.is_dir()
}

/// The first line of a YAML file kiln writes (`-o FILE.yaml`): a comment, so the file is still
/// the same objects to every reader, by which kiln knows the file is its own to replace.
pub const FILE_MARKER: &str =
    "# Written by kiln (-o): replaced as a whole on the next run; edits are lost.\n";

/// Whether kiln may replace the regular file holding `old`: empty, or written by kiln: a YAML
/// file that starts with [`FILE_MARKER`], or a JSON file that is exactly the `v1` List kiln
/// writes (JSON has no comment to carry a mark; a List from `kubectl get -o json` has `metadata`
/// besides, a hand-written manifest other fields or kinds).
fn is_own_file(path: &Path, json: bool) -> std::io::Result<bool> {
    use std::io::Read;
    if fs::metadata(path)?.len() == 0 {
        return Ok(true);
    }
    if !json {
        // The mark is all that is read: the file may be anything, of any size.
        let mut head = Vec::new();
        fs::File::open(path)?
            .take(FILE_MARKER.len() as u64)
            .read_to_end(&mut head)?;
        return Ok(head == FILE_MARKER.as_bytes());
    }
    Ok(
        match serde_json::from_reader::<_, Value>(std::io::BufReader::new(fs::File::open(path)?)) {
            Ok(Value::Object(m)) => {
                m.len() == 3
                    && m.get("apiVersion") == Some(&Value::from("v1"))
                    && m.get("kind") == Some(&Value::from("List"))
                    && m.get("items").is_some_and(Value::is_array)
            }
            _ => false,
        },
    )
}

/// Write `text` to the file `path` all or nothing: into a temporary file beside it, then renamed
/// over it, so a reader never sees half a file and a failed run leaves the old one. Over
/// `max_bytes` nothing is written (KLN1009). A directory or a symbolic link at `path` is refused,
/// and so is a file kiln did not write ([`is_own_file`]), as `-o DIR` refuses a directory it did
/// not write: `-o` naming an input or a hand-kept file by mistake must not destroy it. A YAML
/// file starts with [`FILE_MARKER`].
pub fn write_file_limited(path: &Path, text: &str, max_bytes: usize) -> Result<(), Diagnostic> {
    let json = path.extension().is_some_and(|e| e == "json");
    let marked;
    let text = if json {
        text
    } else {
        marked = format!("{FILE_MARKER}{text}");
        &marked
    };
    crate::limits::check_output_size(text.len(), max_bytes)
        .map_err(|d| d.in_file(path.display().to_string()))?;
    let file_io = |what: &str, e: &std::io::Error| {
        Diagnostic::error(
            codes::IO_READ,
            format!("cannot {what} {}: {e}", path.display()),
        )
        .in_file(path.display().to_string())
        .with_hint("check that the output file's directory exists and is writable")
    };
    match fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() || m.is_dir() => {
            return Err(Diagnostic::error(
                codes::IO_READ,
                format!(
                    "refusing to write {}: it is a {}",
                    path.display(),
                    if m.is_dir() {
                        "directory"
                    } else {
                        "symbolic link"
                    }
                ),
            )
            .in_file(path.display().to_string())
            .with_hint("name a regular file (or a directory without a .yaml/.json extension)"))
        }
        Ok(_) => {
            if !is_own_file(path, json).map_err(|e| file_io("read", &e))? {
                return Err(Diagnostic::error(
                    codes::IO_READ,
                    format!(
                        "refusing to write {}: it is not empty and kiln did not write it",
                        path.display()
                    ),
                )
                .in_file(path.display().to_string())
                .with_hint(if json {
                    "kiln only replaces files it wrote (a JSON file: exactly the v1 List kiln writes); choose a new or empty file, or remove this one"
                } else {
                    "kiln only replaces files it wrote (a YAML file: its first line is kiln's `# Written by kiln` comment); choose a new or empty file, or remove this one"
                }));
            }
        }
        Err(_) => {}
    }
    let tmp = temp_sibling(path, "file");
    fs::write(&tmp, text).map_err(|e| {
        let _ = fs::remove_file(&tmp);
        file_io("write", &e)
    })?;
    fs::rename(&tmp, path).map_err(|e| {
        let _ = fs::remove_file(&tmp);
        file_io("replace", &e)
    })
}

/// [`write_dir`] with an output limit: when the files together would hold more than
/// `max_bytes`, KLN1009 and nothing is written (the old directory stays as it was).
pub fn write_dir_limited(
    dir: &Path,
    objects: &[Value],
    layout: Layout,
    max_bytes: usize,
) -> Result<(), Diagnostic> {
    let exists = check_target(dir)?;
    // Render everything before touching the filesystem.
    let mut contents = Vec::new();
    let mut total = 0usize;
    for (name, objs) in plan(objects, layout) {
        let text = output::yaml_stream(&objs)?;
        total = total.saturating_add(text.len());
        crate::limits::check_output_prefix(total, max_bytes, true)
            .map_err(|d| d.in_file(dir.display().to_string()))?;
        contents.push((name, text));
    }
    if dir.file_name().is_none() {
        return Err(Diagnostic::error(
            codes::IO_READ,
            format!("{} is not a directory name", dir.display()),
        )
        .in_file(dir.display().to_string())
        .with_hint("name the output directory, e.g. -o out"));
    }
    let tmp = temp_sibling(dir, "new");
    let cleanup = |e: Diagnostic| {
        let _ = fs::remove_dir_all(&tmp);
        e
    };
    fs::create_dir(&tmp).map_err(|e| io(&tmp, "create", &e))?;
    fs::write(
        tmp.join(MARKER),
        "This directory was written by kiln and is replaced as a whole on the next run.\n",
    )
    .map_err(|e| cleanup(io(&tmp, "write into", &e)))?;
    for (name, text) in &contents {
        fs::write(tmp.join(name), text).map_err(|e| cleanup(io(&tmp, "write into", &e)))?;
    }
    if exists {
        // Move the old directory aside, move the new one in, then delete the old one; if the
        // second rename fails, put the old one back.
        let old = temp_sibling(dir, "old");
        fs::rename(dir, &old).map_err(|e| cleanup(io(dir, "replace", &e)))?;
        if let Err(e) = fs::rename(&tmp, dir) {
            let _ = fs::rename(&old, dir);
            return Err(cleanup(io(dir, "replace", &e)));
        }
        let _ = fs::remove_dir_all(&old);
    } else {
        fs::rename(&tmp, dir).map_err(|e| cleanup(io(dir, "create", &e)))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tmp() -> PathBuf {
        let d = std::env::temp_dir().join(format!(
            "kiln-layout-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos()
        ));
        fs::create_dir_all(&d).unwrap();
        d
    }

    fn objs() -> Vec<Value> {
        vec![
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "shop"}}),
            json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "shop"}}),
            json!({"apiVersion": "example.com/v1", "kind": "Deployment", "metadata": {"name": "web"}}),
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "system:web"}}),
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "system_web"}}),
            json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "api", "namespace": "shop"}}),
        ]
    }

    fn names(layout: Layout) -> Vec<String> {
        plan(&objs(), layout).into_iter().map(|(n, _)| n).collect()
    }

    #[test]
    fn stable_names() {
        assert_eq!(names(Layout::Single), ["manifests.yaml"]);
        assert_eq!(
            names(Layout::ByKind),
            [
                "deployment.yaml",
                "service.yaml",
                "deployment.example.com.yaml",
                "clusterrole.yaml"
            ]
        );
        assert_eq!(
            names(Layout::ByResource),
            [
                "deployment-shop-web.yaml",
                "service-shop-web.yaml",
                "deployment-web.yaml",
                "clusterrole-system_web.yaml",
                "clusterrole-system_web-2.yaml",
                "service-shop-api.yaml"
            ]
        );
        assert_eq!(safe("../etc"), "_.._etc");
        assert_eq!(safe(""), "_");
    }

    #[test]
    fn hostile_names_stay_single_components() {
        let hostile = [
            ("ConfigMap", "../../etc/passwd"),
            ("ConfigMap", "a/b/c"),
            ("ConfigMap", ".."),
            ("ConfigMap", "/abs"),
            ("ConfigMap", "back\\slash"),
            ("ConfigMap", "nul\u{0}byte"),
            ("../Evil", "x"),
            ("..", ".."),
            (".kiln-output", "x"),
            ("Con", "x"),
            ("LPT1", "x"),
            ("ConfigMap", &"n".repeat(1000)),
        ];
        let objs: Vec<Value> = hostile
            .iter()
            .map(|(k, n)| json!({"apiVersion": "v1", "kind": k, "metadata": {"name": n, "namespace": "../ns"}}))
            .collect();
        for layout in [Layout::ByKind, Layout::ByResource] {
            for (name, _) in plan(&objs, layout) {
                assert!(
                    !name.contains(['/', '\\', '\0']) && !name.starts_with('.'),
                    "{name}"
                );
                assert!(name.len() <= 200, "{name}");
                assert_eq!(Path::new(&name).components().count(), 1, "{name}");
                assert!(!is_device_name(name.trim_end_matches(".yaml")), "{name}");
                assert_ne!(name, MARKER);
            }
        }
        assert_eq!(safe("con"), "_con");
        assert_eq!(safe("com1.example.com"), "_com1.example.com");
        assert_eq!(safe("console"), "console");
        assert_eq!(safe("com0"), "com0");
        // Written for real: everything lands inside the directory.
        let d = tmp();
        let out = d.join("out");
        write_dir(&out, &objs, Layout::ByResource).unwrap();
        let inside = fs::read_dir(&out).unwrap().count();
        assert_eq!(inside, objs.len() + 1);
        let around: Vec<_> = fs::read_dir(&d)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(around, ["out"]);
        fs::remove_dir_all(d).unwrap();
    }

    /// docs/kurel.md: names are at most 200 bytes, suffix included, and distinct even when
    /// long names share their first 200 bytes (issue 40).
    #[test]
    fn long_names_stay_within_200_bytes_and_distinct() {
        let long = "n".repeat(1000);
        let objs: Vec<Value> = (0..12)
            .map(|i| {
                let name = if i % 2 == 0 { long.clone() } else { format!("{long}{i}") };
                json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}})
            })
            .chain([json!({"apiVersion": "x.example.com/v1", "kind": "n".repeat(300), "metadata": {"name": "a"}}),
                    json!({"apiVersion": "y.example.com/v1", "kind": "n".repeat(300), "metadata": {"name": "a"}})])
            .collect();
        for layout in [Layout::ByKind, Layout::ByResource] {
            let names: Vec<String> = plan(&objs, layout).into_iter().map(|(n, _)| n).collect();
            let folded: BTreeSet<String> = names.iter().map(|n| n.to_lowercase()).collect();
            assert_eq!(folded.len(), names.len(), "{names:?}");
            for n in &names {
                assert!(n.len() <= 200, "{} bytes: {n}", n.len());
            }
            let again: Vec<String> = plan(&objs, layout).into_iter().map(|(n, _)| n).collect();
            assert_eq!(names, again);
        }
    }

    #[test]
    fn writes_replaces_and_refuses() {
        let d = tmp();
        let out = d.join("out");
        write_dir(&out, &objs(), Layout::ByKind).unwrap();
        assert!(out.join(MARKER).is_file());
        assert!(out.join("service.yaml").is_file());
        let svc = fs::read_to_string(out.join("service.yaml")).unwrap();
        assert!(svc.contains("name: web") && svc.contains("---") && svc.contains("name: api"));
        // A kiln directory is replaced as a whole: no stale files survive.
        write_dir(&out, &objs()[..1], Layout::Single).unwrap();
        let mut files: Vec<_> = fs::read_dir(&out)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        files.sort();
        assert_eq!(files, [MARKER, "manifests.yaml"]);
        // Someone else's directory is refused and left alone.
        let theirs = d.join("theirs");
        fs::create_dir(&theirs).unwrap();
        fs::write(theirs.join("keep.txt"), "x").unwrap();
        let e = write_dir(&theirs, &objs(), Layout::Single).unwrap_err();
        assert!(
            e.message.contains("kiln did not create it"),
            "{}",
            e.message
        );
        assert!(theirs.join("keep.txt").is_file());
        // A file is refused; an empty directory is fine.
        let e = write_dir(&theirs.join("keep.txt"), &objs(), Layout::Single).unwrap_err();
        assert!(e.message.contains("not a directory"));
        let empty = d.join("empty");
        fs::create_dir(&empty).unwrap();
        write_dir(&empty, &objs(), Layout::ByResource).unwrap();
        assert!(empty.join("deployment-shop-web.yaml").is_file());
        // Over the output limit: KLN1009, and the old directory stays as it was.
        let e = write_dir_limited(&out, &objs(), Layout::ByResource, 100).unwrap_err();
        assert_eq!(e.code, codes::OUTPUT_LIMIT);
        assert_eq!(e.file.as_deref(), Some(out.display().to_string().as_str()));
        assert!(out.join("manifests.yaml").is_file());
        assert!(!out.join("deployment-shop-web.yaml").exists());
        // No temporary directories are left behind.
        let leftovers: Vec<_> = fs::read_dir(&d)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| n.starts_with('.'))
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");
        fs::remove_dir_all(d).unwrap();
    }
}
