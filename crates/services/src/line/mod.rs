//! The LINE slip bot: a shop's LINE Official Account checks every slip customers send in chat
//! (issue 32). `client`: the calls to LINE; `webhook`: LINE's calls in, each event a job of kind
//! `line` (`jobs/line.rs`).

pub mod client;
pub mod webhook;
