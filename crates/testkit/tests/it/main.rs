//! The crate's integration tests as one binary (one link instead of one per file).

mod accounts;
mod admin_api;
mod bank_connectors;
mod billing;
mod billing_admin;
mod client_compat;
mod common;
mod connections;
mod connectors;
mod golden;
mod hardening;
mod idempotency;
mod images;
mod jobs;
mod limits;
mod openapi;
mod partner_api;
mod receivers;
mod shedding;
mod states;
mod test_branches;
mod unknown_ids;
mod v1;
mod verify_v2;
mod wallet;
mod wire_bytes;
