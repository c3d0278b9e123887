//! Domain services: what the service does, independent of HTTP. Handlers (v2 now; v1, async
//! and partner later) parse their input, call one of these and map the result.

pub mod admin;
pub mod auth;
pub mod partner;
pub mod rate;
pub mod verify;

use domain::Clock;
use gateway::BankGateway;
use std::sync::Arc;
use store::Store;

/// Everything a request needs, shared by all handlers and background work.
#[derive(Clone)]
pub struct Services {
    pub store: Arc<dyn Store>,
    pub bank: Arc<dyn BankGateway>,
    pub clock: Arc<dyn Clock>,
    pub rate: Arc<rate::RateLimiter>,
    /// Peers whose `X-Forwarded-For` is believed (empty: nobody's).
    pub trusted_proxies: Arc<domain::ip::AllowList>,
}

impl Services {
    pub fn new(store: Arc<dyn Store>, bank: Arc<dyn BankGateway>, clock: Arc<dyn Clock>) -> Self {
        let rate = Arc::new(rate::RateLimiter::for_backend(store.backend()));
        Self {
            store,
            bank,
            clock,
            rate,
            trusted_proxies: Arc::new(domain::ip::AllowList::none()),
        }
    }
}
