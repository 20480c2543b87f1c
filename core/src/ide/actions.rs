//! Code actions: the mechanical fixes diagnostics already name ("did you mean …?").

use super::{Action, Texts};
use crate::diag::Diagnostic;
use std::ops::Range;

/// The fixes for the diagnostics of `file` that touch `range`.
pub fn actions(
    _texts: &Texts,
    _file: &str,
    _range: Range<usize>,
    _diagnostics: &[Diagnostic],
) -> Vec<Action> {
    Vec::new()
}
