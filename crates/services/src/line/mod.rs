//! The LINE slip bot: a shop's LINE Official Account checks every slip customers send in chat
//! (issue 32). `client`: the calls to LINE.

pub mod client;
