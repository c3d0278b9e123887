//! The crate's integration tests as one binary (one link instead of one per file).

mod connections;
mod policy;
// Raw HTTP/1.1 helpers shared with testkit's connection tests (tokio only, so included by
// path rather than through a dependency on the whole harness).
#[path = "../../../testkit/src/raw.rs"]
mod raw;
