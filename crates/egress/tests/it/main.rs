//! The crate's integration tests as one binary (one link instead of one per file).

// The throw-away CA of testkit's HTTPS receiver (rcgen and rustls only), included by path
// rather than through a dependency on the whole harness.
#[path = "../../../testkit/src/certs.rs"]
mod certs;
mod common;
mod fetch;
mod https;
mod operator;
mod rebinding;
mod urls;
