//! The `kiln` executable's integration tests, one binary with a module a subject: one link
//! instead of one a file (`cargo test -p kiln --test it`, or `--test it golden` for a subject).

mod common;

mod cli;
mod commands;
mod component;
mod diff;
mod docs;
mod examples;
mod flags;
mod golden;
mod graph;
mod help;
mod hints;
mod hostile;
mod kurel;
mod limits;
mod lsp;
mod lsp_editor;
mod lsp_queries;
mod paths;
mod process;
mod request;
mod schema;
mod security;
mod strategies;
