//! The workspace of an editor: the request `kiln validate` would read for a folder, with the
//! editor's unsaved buffers over the files on disk, and its diagnostics with exact ranges.
