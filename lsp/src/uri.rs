//! Files as the protocol names them (`file://` URIs, percent-encoded) and as kiln-core names
//! them (paths: the workspace's root is absolute, so every file's name is too).

use std::path::{Path, PathBuf};

use lsp_types::Uri;

/// The path of a `file://` URI; `None` for any other scheme or a malformed escape.
pub fn path_of(uri: &Uri) -> Option<PathBuf> {
    let rest = uri.as_str().strip_prefix("file://")?;
    // `file://host/path`: only the local host names a file here.
    let path = match rest.find('/') {
        Some(0) => rest,
        Some(i) if &rest[..i] == "localhost" => &rest[i..],
        _ => return None,
    };
    let path = path.split(['?', '#']).next().unwrap_or(path);
    Some(PathBuf::from(kiln_core::percent::decode(path)?))
}

/// The `file://` URI of an absolute path.
pub fn of_path(path: &Path) -> Option<Uri> {
    let s = path.to_str()?;
    if !s.starts_with('/') {
        return None;
    }
    let mut out = String::from("file://");
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_round_trip_through_uris() {
        for p in ["/a/b.yaml", "/with space/é.yaml", "/x/100%/#?.yaml"] {
            let uri = of_path(Path::new(p)).unwrap();
            assert!(!uri.as_str()[7..].contains([' ', '#', '?']), "{uri:?}");
            assert_eq!(path_of(&uri).unwrap(), Path::new(p));
        }
        let u = |s: &str| s.parse::<Uri>().unwrap();
        assert_eq!(
            path_of(&u("file://localhost/a/b.yaml")).unwrap(),
            Path::new("/a/b.yaml")
        );
        assert_eq!(path_of(&u("file://other/a")), None);
        assert_eq!(path_of(&u("untitled:Untitled-1")), None);
        assert_eq!(path_of(&u("file:///a%FF")), None, "not UTF-8");
        assert_eq!(of_path(Path::new("relative.yaml")), None);
    }
}
