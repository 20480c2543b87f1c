//! `kiln render|validate|schema|info` on a kurel package directory: translates the command line
//! into `kiln_core::kurel` calls.

use std::process::ExitCode;

use crate::{Common, OutputArgs};

/// Flags of `kiln render` that only kurel packages use.
#[derive(clap::Args, Debug, Default)]
pub struct KurelArgs {}

/// Whether `path` is a kurel package directory.
pub fn is_package(_path: &str) -> bool {
    false
}

/// `kiln render PKG`.
pub fn render(_pkg: &str, _args: &KurelArgs, _out: &OutputArgs, _common: &Common) -> ExitCode {
    eprintln!("error: kurel packages are not implemented yet");
    ExitCode::from(1)
}

/// `kiln validate PKG`.
pub fn validate(_pkg: &str, _args: &KurelArgs, _common: &Common) -> ExitCode {
    eprintln!("error: kurel packages are not implemented yet");
    ExitCode::from(1)
}

/// `kiln schema PKG`.
pub fn schema(_pkg: &str, _common: &Common) -> ExitCode {
    eprintln!("error: kurel packages are not implemented yet");
    ExitCode::from(1)
}

/// `kiln info PKG`.
pub fn info(_pkg: &str, _common: &Common) -> ExitCode {
    eprintln!("error: kurel packages are not implemented yet");
    ExitCode::from(1)
}
