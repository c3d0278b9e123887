//! The crate's integration tests as one binary (one link instead of one per file).

mod common;
mod fetch;
mod https;
mod operator;
mod rebinding;
mod urls;
