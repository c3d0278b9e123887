//! The crate's integration tests as one binary (one link instead of one per file).

mod connectors;
mod kbank;
mod scb;
