//! The crate's integration tests as one binary (one link instead of one per file).

mod common;
mod connectors;
mod kbank;
mod scb;
