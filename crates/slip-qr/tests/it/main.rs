//! The crate's integration tests as one binary (one link instead of one per file).

mod corpus;
mod generate;
mod properties;
