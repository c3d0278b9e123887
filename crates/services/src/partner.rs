//! The partner API's authentication and quota operations (spec 4.2, 5.2; compat.md signing).
//!
//! Order of checks: key → timestamp → nonce format (from the headers alone, before any body
//! byte is read: [`PartnerApi::partner_head`]) → signature → nonce not used before → permission →
//! branch header → branch within the partner's services ([`PartnerApi::authenticate_partner`]).
//! A nonce is only spent by a correctly signed request, so nobody can burn a partner's nonces.

use crate::auth::branch_with_service;
pub use crate::handles::PartnerApi;
use crate::metrics::count_auth_refusal;
use domain::model::{Branch, Partner, Service};
use domain::partner::{self, Permission};
use domain::quota::{QuotaOp, QuotaOpError};
use domain::{apikey, Error, Validation};
use rand::RngCore;
use store::QuotaChange;

/// The partner headers checked before the body is read.
#[derive(Debug, Clone, Copy)]
pub struct PartnerHeaders<'a> {
    pub api_key: Option<&'a str>,
    pub timestamp: Option<&'a str>,
    pub nonce: Option<&'a str>,
}

/// A request whose key, timestamp and nonce format passed: its body may be read now.
#[derive(Debug, Clone)]
pub struct PartnerHead {
    partner: Partner,
    timestamp: String,
    nonce: String,
}

/// The rest of the request, as received, for the signature and the remaining checks.
#[derive(Debug, Clone, Copy)]
pub struct SignedRequest<'a> {
    pub method: &'a str,
    /// The path without the `/v2` prefix and without the query, e.g. `/b2b/branch/quota` or
    /// `/b2b/branches/{branchId}/quota`.
    pub path: &'a str,
    pub signature: Option<&'a str>,
    pub body: &'a [u8],
}

/// Where a request names its branch: the spec's `X-Branch-Key` header, or the published
/// branch-in-path form (`/b2b/branches/{branchId}/…`).
#[derive(Debug, Clone, Copy)]
pub enum BranchRef<'a> {
    Header(Option<&'a str>),
    Path(&'a str),
    /// `branchId` in a JSON body (`POST /b2b/bank-accounts`).
    Body(&'a str),
}

#[derive(Debug, Clone)]
pub struct PartnerCaller {
    pub partner: Partner,
    pub service: Service,
    pub branch: Branch,
}

fn nonce_well_formed(n: &str) -> bool {
    (8..=64).contains(&n.len())
        && n.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

fn random_hex64() -> String {
    let mut b = [0u8; 32];
    rand::rng().fill_bytes(&mut b);
    hex::encode(b)
}

impl PartnerApi<'_> {
    /// The checks the headers alone allow (key, timestamp window, nonce format): a request
    /// refused here costs no body read.
    pub async fn partner_head(&self, h: &PartnerHeaders<'_>) -> Result<PartnerHead, Error> {
        self.check_partner_head(h)
            .await
            .inspect_err(|e| count_auth_refusal(self.metrics, e))
    }

    async fn check_partner_head(&self, h: &PartnerHeaders<'_>) -> Result<PartnerHead, Error> {
        let key = h.api_key.map(str::trim).filter(|k| !k.is_empty());
        let key = key.ok_or(Error::MissingApiKey)?;
        if !partner::is_hex64(key) {
            return Err(Error::InvalidApiKey);
        }
        let partner = self
            .store
            .find_partner_by_key_hash(&apikey::hash_key(key))
            .await?
            .ok_or(Error::InvalidApiKey)?;
        let ts_text = h.timestamp.map(str::trim).unwrap_or("");
        let ts: i64 = ts_text.parse().map_err(|_| Error::InvalidTimestamp)?;
        if !partner::timestamp_fresh(ts, self.clock.now().unix_timestamp()) {
            return Err(Error::InvalidTimestamp);
        }
        let nonce = h.nonce.map(str::trim).unwrap_or("");
        if !nonce_well_formed(nonce) {
            return Err(Error::InvalidNonce);
        }
        Ok(PartnerHead {
            partner,
            timestamp: ts_text.to_string(),
            nonce: nonce.to_string(),
        })
    }

    /// The checks that need the body (signature, then nonce reuse, permission), then the
    /// branch, which must belong to one of the partner's services.
    pub async fn authenticate_partner(
        &self,
        head: PartnerHead,
        req: &SignedRequest<'_>,
        needs: Permission,
        branch: BranchRef<'_>,
    ) -> Result<PartnerCaller, Error> {
        let p = self.authenticate_partner_request(head, req, needs).await?;
        self.partner_caller(p, branch).await
    }

    /// The authenticated partner on one of its branches.
    pub async fn partner_caller(
        &self,
        p: Partner,
        branch: BranchRef<'_>,
    ) -> Result<PartnerCaller, Error> {
        let (field, id) = match branch {
            BranchRef::Header(h) => ("X-Branch-Key", h.map(str::trim).unwrap_or("")),
            BranchRef::Path(id) | BranchRef::Body(id) => ("branchId", id.trim()),
        };
        if uuid::Uuid::parse_str(id).is_err() {
            return Err(Error::invalid(field, "must be the branch's UUID"));
        }
        let (service, branch) = self.partner_branch(&p, &domain::BranchId::from(id)).await?;
        Ok(PartnerCaller {
            partner: p,
            service,
            branch,
        })
    }

    /// A branch of one of the partner's services (with its service), else
    /// `BRANCH_ACCESS_DENIED`: another service's branch looks like no branch at all.
    async fn partner_branch(
        &self,
        p: &Partner,
        id: &domain::BranchId,
    ) -> Result<(Service, Branch), Error> {
        let owned = |b: &Branch| p.service_ids.contains(&b.service_id);
        branch_with_service(self.store, id, owned)
            .await?
            .ok_or(Error::BranchAccessDenied)
    }

    /// The signed-request checks alone, for operations that name no branch (listing or
    /// creating branches, creating an account, the bank list).
    pub async fn authenticate_partner_request(
        &self,
        head: PartnerHead,
        req: &SignedRequest<'_>,
        needs: Permission,
    ) -> Result<Partner, Error> {
        self.check_partner_signature(head, req, needs)
            .await
            .inspect_err(|e| count_auth_refusal(self.metrics, e))
    }

    async fn check_partner_signature(
        &self,
        head: PartnerHead,
        req: &SignedRequest<'_>,
        needs: Permission,
    ) -> Result<Partner, Error> {
        let PartnerHead {
            partner: p,
            timestamp: ts_text,
            nonce,
        } = head;
        let nonce = nonce.as_str();
        let canonical = partner::canonical(req.method, req.path, &ts_text, nonce, req.body);
        let sig = req.signature.map(str::trim).unwrap_or("");
        if !partner::verify(&p.secret, &canonical, sig) {
            return Err(Error::InvalidSignature);
        }
        let now = self.clock.now();
        // A replay is refused for as long as its timestamp passes (`NONCE_KEEP_SECS`).
        let forget = now - time::Duration::seconds(partner::NONCE_KEEP_SECS);
        if !self.store.use_nonce(&p.id, nonce, now, forget).await? {
            return Err(Error::InvalidNonce);
        }
        if !p.permissions.contains(&needs) {
            return Err(Error::PermissionDenied(needs.as_str()));
        }
        Ok(p)
    }

    /// Applies a quota operation for a partner; returns the service and branch afterwards.
    pub async fn partner_quota_op(
        &self,
        caller: &PartnerCaller,
        op: QuotaOp,
    ) -> Result<(Service, Branch), Error> {
        let actor = format!("partner:{}", caller.partner.id);
        match self
            .store
            .modify_branch_quota(&caller.branch.id, op, self.clock.now(), &actor)
            .await?
        {
            QuotaChange::NoBranch => Err(Error::BranchAccessDenied),
            QuotaChange::Applied(s, b) => Ok((s, b)),
            QuotaChange::Refused(e) => Err(match (op, e) {
                (QuotaOp::Set(_), QuotaOpError::BelowUsed { used, .. }) => Error::invalid(
                    "limitQuota",
                    format!("must not be below the current used quota ({used})"),
                ),
                (_, QuotaOpError::BelowUsed { limit, used }) => Error::QuotaBelowUsage(format!(
                    "the new limit ({limit}) would be below the current used quota ({used})"
                )),
                (_, QuotaOpError::NoLimit) => Error::invalid(
                    "amount",
                    "the branch has no limit of its own; set one with PUT /b2b/branch/quota",
                ),
                (QuotaOp::Adjust(_), QuotaOpError::OutOfRange) => {
                    Error::invalid("amount", "the new limit would be out of range")
                }
                (_, QuotaOpError::OutOfRange) => {
                    Error::invalid("limitQuota", "must be a whole number of at least 0")
                }
            }),
        }
    }

    /// Creates a partner; returns it with its API key. Key and secret are 64 hex characters and
    /// shown once (the key is stored hashed).
    pub async fn create_partner(
        &self,
        name: &str,
        service_ids: &[domain::ServiceId],
        permissions: &[String],
    ) -> Result<(Partner, String), Error> {
        let mut v = Validation::new();
        if name.trim().is_empty() {
            v.fail("name", "must not be empty");
        }
        let mut perms = Vec::new();
        for p in permissions.iter().flat_map(|p| p.split(',')) {
            match Permission::parse(p) {
                Some(p) if !perms.contains(&p) => perms.push(p),
                Some(_) => {}
                None => v.fail(
                    "permissions",
                    format!("'{}' is not one of {}", p.trim(), Permission::names()),
                ),
            }
        }
        if perms.is_empty() {
            v.fail(
                "permissions",
                format!("at least one of {}", Permission::names()),
            );
        }
        if service_ids.is_empty() {
            v.fail("service", "at least one service");
        }
        v.into_result()?;
        let mut missing = Validation::new();
        for sid in service_ids {
            if self.store.get_service(sid).await?.is_none() {
                missing.fail("service", format!("no such service {sid}"));
            }
        }
        missing.into_unknown()?;
        let key = random_hex64();
        let partner = Partner {
            id: domain::PartnerId::new(uuid::Uuid::new_v4().to_string()),
            name: name.trim().to_string(),
            secret: random_hex64(),
            permissions: perms,
            service_ids: service_ids.to_vec(),
            created_at: self.clock.now(),
        };
        self.store
            .create_partner(&partner, &apikey::hash_key(&key))
            .await
            .map_err(|e| match e {
                store::StoreError::Conflict(what) => Error::invalid("service", what),
                other => other.into(),
            })?;
        Ok((partner, key))
    }
}
