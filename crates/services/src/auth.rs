//! Authentication of the verification API (spec 5.1), in its documented order:
//! header present → key well-formed and known → caller IP allowed → branch active →
//! service not deleted → not banned → owner not banned → not expired. Quota comes last, when
//! the verification is charged.

pub use crate::handles::Auth;
use crate::metrics::count_auth_refusal;
use crate::space::Space;
use domain::model::{Branch, Service};
use domain::{apikey, Error};
use std::net::IpAddr;
use std::sync::Arc;

/// The authenticated caller: its branch and that branch's service, as read at request start,
/// and its space (production or test branch), chosen once (`Auth::caller`). Only
/// `Auth` makes one. What one request of it carries besides (its `Idempotency-Key` claim)
/// travels beside it, on the request (`VerifyRequest::idempotency`).
#[derive(Debug, Clone)]
pub struct Caller {
    pub service: Service,
    pub branch: Branch,
    /// What this caller's verification notes for the attempts log (detached unless the route
    /// logs). Kept here: it follows the caller into every step that notes something (input,
    /// look-up, charge), and it is attached once the caller is known, which is when a request
    /// becomes one to log.
    pub trace: crate::attempts::Trace,
    space: Arc<dyn Space>,
}

impl Caller {
    pub(crate) fn new(service: Service, branch: Branch, space: Arc<dyn Space>) -> Caller {
        Caller {
            service,
            branch,
            trace: Default::default(),
            space,
        }
    }

    /// Follows this caller's verification on `trace` (the request's, from the HTTP layer):
    /// the caller passed authentication and the rate limit, so it will be logged.
    pub fn traced(mut self, trace: crate::attempts::Trace) -> Caller {
        trace.authenticated(&self.service.id, &self.branch.id);
        self.trace = trace;
        self
    }

    pub(crate) fn space(&self) -> &dyn Space {
        &*self.space
    }

    /// Service and branch counters as they stand in the cycle containing `now`.
    pub fn quotas_at(
        &self,
        now: time::OffsetDateTime,
    ) -> (domain::quota::Quota, domain::quota::Quota) {
        crate::renewal::quotas_at(&self.service, &self.branch, now)
    }
}

impl Auth<'_> {
    /// `peer` is the TCP peer; `forwarded_for` the `X-Forwarded-For` header, believed only
    /// from the configured trusted proxies.
    /// Refusals are counted (`slipverify_auth_refusals_total`).
    pub async fn authenticate(
        &self,
        authorization: Option<&str>,
        peer: IpAddr,
        forwarded_for: Option<&str>,
    ) -> Result<Caller, Error> {
        self.authenticate_key(authorization, peer, forwarded_for)
            .await
            .inspect_err(|e| count_auth_refusal(self.metrics, e))
    }

    async fn authenticate_key(
        &self,
        authorization: Option<&str>,
        peer: IpAddr,
        forwarded_for: Option<&str>,
    ) -> Result<Caller, Error> {
        let client_ip = domain::ip::client_ip(peer, forwarded_for, self.trusted_proxies);
        let header = authorization.map(str::trim).unwrap_or("");
        if header.is_empty() {
            return Err(Error::MissingApiKey);
        }
        let key = bearer_token(header).ok_or(Error::InvalidApiKey)?;
        if !apikey::is_well_formed(key) {
            return Err(Error::InvalidApiKey);
        }
        let (service, branch) = self
            .store
            .find_by_api_key_hash(&apikey::hash_key(key), self.clock.now())
            .await?
            .ok_or(Error::InvalidApiKey)?;
        if !branch.allow_ips.allows(client_ip) {
            return Err(Error::IpNotAllowed);
        }
        if !branch.active {
            return Err(Error::BranchInactive);
        }
        // An expired service with auto-renew on renews here (or says why it cannot); never
        // for a test branch.
        self.caller(service, branch).await
    }

    /// The caller of `branch` of `service` as read, with its space: no check made. For work
    /// that checks on its own (the LINE webhook's rate limit).
    pub(crate) fn caller_as_read(&self, service: Service, branch: Branch) -> Caller {
        let space = self.spaces.of(&branch);
        Caller::new(service, branch, space)
    }

    /// The caller of `branch` of `service` if it may verify now: the service not banned,
    /// deleted or expired (production renews an expired one when auto-renew says so; a test
    /// branch never does). Authentication, jobs and the LINE bot start here; the caller's
    /// space is chosen here, once.
    pub async fn caller(&self, service: Service, branch: Branch) -> Result<Caller, Error> {
        let space = self.spaces.of(&branch);
        let service = space.usable(service).await?;
        Ok(Caller::new(service, branch, space))
    }

    /// Checks the admin API's bearer token (compared as SHA-256 digests, in constant time).
    /// Refusals are counted (`slipverify_auth_refusals_total`).
    pub fn authenticate_admin(&self, authorization: Option<&str>) -> Result<(), Error> {
        self.check_admin_token(authorization)
            .inspect_err(|e| count_auth_refusal(self.metrics, e))
    }

    fn check_admin_token(&self, authorization: Option<&str>) -> Result<(), Error> {
        let Some(token) = self.admin_token else {
            return Err(Error::NotFound);
        };
        let given = authorization
            .and_then(|h| h.trim().split_once(' '))
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map(|(_, t)| t.trim())
            .ok_or(Error::MissingApiKey)?;
        let (a, b) = (apikey::hash_key(given), apikey::hash_key(token));
        // Equal-length hex digests; fold so the comparison does not stop early.
        let diff = a.bytes().zip(b.bytes()).fold(0u8, |d, (x, y)| d | (x ^ y));
        if diff == 0 && given == token {
            Ok(())
        } else {
            Err(Error::InvalidApiKey)
        }
    }
}

/// Branch `id` with its service, when both exist and `owned` accepts the branch (read first:
/// a branch refused is as good as none, and its service is not read).
pub(crate) async fn branch_with_service(
    store: &store::SqlStore,
    id: &domain::BranchId,
    owned: impl Fn(&Branch) -> bool,
) -> Result<Option<(Service, Branch)>, store::StoreError> {
    let Some(branch) = store.get_branch(id).await?.filter(|b| owned(b)) else {
        return Ok(None);
    };
    let service = store.get_service(&branch.service_id).await?;
    Ok(service.map(|s| (s, branch)))
}

/// `Bearer <key>`, the scheme matched case-insensitively (RFC 7235).
fn bearer_token(header: &str) -> Option<&str> {
    let (scheme, rest) = header.split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("bearer") {
        return None;
    }
    let token = rest.trim();
    (!token.is_empty()).then_some(token)
}

#[cfg(test)]
mod tests {
    use super::bearer_token;

    #[test]
    fn bearer() {
        assert_eq!(bearer_token("Bearer abc"), Some("abc"));
        assert_eq!(bearer_token("bearer   abc "), Some("abc"));
        assert_eq!(bearer_token("Basic abc"), None);
        assert_eq!(bearer_token("Bearer"), None);
        assert_eq!(bearer_token("Bearer  "), None);
    }
}

/// The key a request runs under. It travels beside the caller, on the request
/// (`VerifyRequest::idempotency`, `Jobs::submit_jobs`), not inside it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdemClaim {
    pub key: String,
    /// A request ran under this key before and its node died: it may have been charged, and
    /// the quota pre-check must not refuse what the charge will answer from its record.
    pub takeover: bool,
    /// When this use of the key began (milliseconds): ids derived from the key include it,
    /// so the same key used again after it was forgotten (24 h) never names the first
    /// use's jobs (which live 7 days).
    pub first_used_ms: i64,
}
