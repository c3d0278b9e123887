//! The crate's integration tests as one binary (one link instead of one per file).

mod cli;
mod connectors_cli;
mod http;
