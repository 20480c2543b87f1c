//! What the integration tests of kiln's crates share (a dev-dependency of each, never of a
//! shipped crate): the repository's files and scratch copies of them ([`fs`]), the real clients
//! a test is judged by ([`tools`]), and a builder for the commands the tests run ([`cmd`]),
//! a README's commands run as written ([`readme`]), a door's process seen while it answers
//! ([`answering`]) and a language server driven as an editor drives it ([`lsp`]).
//!
//! An executable of the workspace is known to cargo only inside its own package
//! (`env!("CARGO_BIN_EXE_…")`), so a test passes its path in; [`cmd::sibling`] builds another
//! package's executable beside it.

#[cfg(target_os = "linux")]
pub mod answering;
pub mod cmd;
pub mod fs;
pub mod lines;
pub mod lsp;
pub mod readme;
pub mod tools;

pub use cmd::{show, sibling, text, Cmd};
pub use fs::{copy_dir, read, repo, testdata, tree, write};
pub use lines::{flux_preview, kpt_eval, kpt_render};
pub use tools::{install_hint, tool, validator};
