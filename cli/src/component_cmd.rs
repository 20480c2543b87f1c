//! `kiln snapshot create` and `kiln promote`: translate the command line into
//! `kiln_core::component` calls; git access (promotion) lives here, at the edge.

use std::process::ExitCode;

use crate::Common;

/// Flags of `kiln snapshot create`.
#[derive(clap::Args, Debug)]
pub struct SnapshotCreateArgs {}

/// Flags of `kiln promote`.
#[derive(clap::Args, Debug)]
pub struct PromoteArgs {}

/// `kiln snapshot create`.
pub fn snapshot_create(_args: &SnapshotCreateArgs, _common: &Common) -> ExitCode {
    eprintln!("error: snapshots are not implemented yet");
    ExitCode::from(1)
}

/// `kiln promote`.
pub fn promote(_args: &PromoteArgs, _common: &Common) -> ExitCode {
    eprintln!("error: promotion is not implemented yet");
    ExitCode::from(1)
}
