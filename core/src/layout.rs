//! Writing rendered objects into a directory (`kiln render -o DIR --layout …`), all or nothing.

use std::path::Path;

use serde_json::Value;

use crate::diag::{codes, Diagnostic};

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

/// Write the objects into `dir` with the given layout.
pub fn write_dir(_dir: &Path, _objects: &[Value], _layout: Layout) -> Result<(), Diagnostic> {
    Err(Diagnostic::error(
        codes::INTERNAL,
        "-o is not implemented yet",
    ))
}
