//! Operator actions: services, branches and keys. Used by the CLI now, an admin API later.

pub use crate::handles::Admin;
use domain::ip::AllowList;
use domain::model::{Branch, Plan, Service, ServiceState, User};
use domain::quota::Quota;
use domain::{apikey, BranchId, Error, ServiceId, UserId, Validation};
use store::{BranchPatch, ServicePatch, StoreError};
use time::OffsetDateTime;

/// Quota of a new service when none is given (a generous trial; operators set their own).
pub const DEFAULT_SERVICE_QUOTA: i64 = 1000;
/// The plan new services get (seeded by the migrations: 10 requests/s, bursts of 5).
pub const DEFAULT_PLAN: &str = "default";

#[derive(Debug, Clone, Default)]
pub struct NewBranch {
    pub service_id: ServiceId,
    pub name: String,
    pub is_main: bool,
    /// Empty means `*` (all addresses).
    pub allow_ips: Vec<String>,
    pub limit_quota: Option<i64>,
    /// A test branch (sandbox ledger, never charged).
    pub sandbox: bool,
}

#[derive(Debug, Clone, Default)]
pub struct BranchUpdate {
    pub name: Option<String>,
    pub active: Option<bool>,
    pub allow_ips: Option<Vec<String>>,
    /// `Some("")` clears the URL.
    pub webhook_url: Option<String>,
    /// `Some("")` clears the secret.
    pub webhook_secret: Option<String>,
    /// Biller id (15 digits) of the branch's merchant QRs; `Some("")` clears it.
    pub biller_id: Option<String>,
    /// `Some(None)` removes the branch's own limit.
    pub limit_quota: Option<Option<i64>>,
    /// Makes the branch a test branch (`true`) or a production one.
    pub sandbox: Option<bool>,
    /// The branch's LINE Official Account (the slip bot).
    pub line: domain::line::LinePatch,
}

/// Changes to a service; `None` leaves a field as it is.
#[derive(Debug, Clone, Default)]
pub struct ServiceUpdate {
    pub name: Option<String>,
    pub limit_quota: Option<Option<i64>>,
    pub state: Option<ServiceState>,
    pub expires_at: Option<Option<OffsetDateTime>>,
    /// `Some("")` removes the owner.
    pub owner_id: Option<UserId>,
    pub plan: Option<String>,
    /// `Some(None)`: back to the plan's rate.
    pub rate_limit_rps: Option<Option<u32>>,
    /// The owner's verification (KYC) is complete; false answers v1 `account_not_verified`.
    pub owner_verified: Option<bool>,
}

fn check_limit(v: &mut Validation, field: &str, limit: &Option<Option<i64>>) {
    if matches!(limit, Some(Some(l)) if *l < 0) {
        v.fail(field, "must not be negative");
    }
}

fn check_name(v: &mut Validation, name: &str) {
    if name.trim().is_empty() {
        v.fail("name", "must not be empty");
    } else if name.chars().count() > 100 {
        v.fail("name", "must be at most 100 characters");
    }
}

fn new_key() -> String {
    uuid::Uuid::new_v4().to_string()
}

impl Admin<'_> {
    pub async fn create_service(&self, name: &str, quota: Option<i64>) -> Result<Service, Error> {
        let mut v = Validation::new();
        check_name(&mut v, name);
        let limit = quota.unwrap_or(DEFAULT_SERVICE_QUOTA);
        if limit < 0 {
            v.fail("quota", "must not be negative");
        }
        v.into_result()?;
        let now = self.clock.now();
        let s = Service {
            id: ServiceId::new(uuid::Uuid::new_v4().to_string()),
            name: name.trim().to_string(),
            quota: Quota {
                limit: Some(limit),
                used: 0,
                total_used: 0,
            },
            created_at: now,
            state: ServiceState::Active,
            expires_at: None,
            owner_id: None,
            owner_banned: false,
            owner_verified: true,
            // Cycles run from the day the service was created.
            billing_anchor: now,
            cycle_start: now,
            // The rate itself is read from the plan (its row may change later).
            plan: Plan {
                name: DEFAULT_PLAN.into(),
                rps: 10,
                burst: 100,
            },
            rate_limit_rps: None,
            subscription: Default::default(),
        };
        self.store.create_service(&s).await?;
        Ok(s)
    }

    /// Returns the branch and its API key; the key is never retrievable again.
    pub async fn create_branch(&self, req: &NewBranch) -> Result<(Branch, String), Error> {
        let mut v = Validation::new();
        check_name(&mut v, &req.name);
        let ips = if req.allow_ips.is_empty() {
            AllowList::allow_all()
        } else {
            AllowList::parse(&req.allow_ips).unwrap_or_else(|e| {
                v.fail("allowIp", e);
                AllowList::allow_all()
            })
        };
        if matches!(req.limit_quota, Some(l) if l < 0) {
            v.fail("limitQuota", "must not be negative");
        }
        v.into_result()?;
        if self.store.get_service(&req.service_id).await?.is_none() {
            return Err(Error::unknown("service", "no such service"));
        }
        let key = new_key();
        let now = self.clock.now();
        let b = Branch {
            id: BranchId::new(uuid::Uuid::new_v4().to_string()),
            service_id: req.service_id.clone(),
            name: req.name.trim().to_string(),
            is_main: req.is_main,
            active: true,
            allow_ips: ips,
            webhook_url: None,
            webhook_secret: None,
            biller_id: None,
            sandbox: req.sandbox,
            quota: Quota {
                limit: req.limit_quota,
                used: 0,
                total_used: 0,
            },
            created_at: now,
            cycle_start: now,
        };
        match self.store.create_branch(&b, &apikey::hash_key(&key)).await {
            Ok(()) => Ok((b, key)),
            Err(StoreError::Conflict(_)) if req.is_main => Err(Error::invalid(
                "main",
                "the service already has a main branch",
            )),
            Err(e) => Err(e.into()),
        }
    }

    pub async fn update_branch(&self, id: &BranchId, upd: &BranchUpdate) -> Result<Branch, Error> {
        let mut v = Validation::new();
        if let Some(n) = &upd.name {
            check_name(&mut v, n);
        }
        let allow_ips = match &upd.allow_ips {
            // Fail closed: an empty list never silently means "everyone" (decisions.md).
            Some(list) if list.is_empty() => {
                v.fail("allowIps", EMPTY_ALLOW_LIST);
                None
            }
            Some(list) => match AllowList::parse(list) {
                Ok(l) => Some(l),
                Err(e) => {
                    v.fail("allowIp", e);
                    None
                }
            },
            None => None,
        };
        if let Some(u) = upd.webhook_url.as_deref().filter(|u| !u.is_empty()) {
            // Only a syntactic check here: reachability rules belong to the delivery side.
            if !(u.starts_with("https://") || u.starts_with("http://")) || u.len() > 2048 {
                v.fail(
                    "webhookUrl",
                    "must be an http(s) URL of at most 2048 characters",
                );
            }
        }
        if matches!(upd.webhook_secret.as_deref(), Some(s) if s.len() > 256) {
            v.fail("webhookSecret", "must be at most 256 characters");
        }
        if let Some(id) = upd.biller_id.as_deref().filter(|b| !b.is_empty()) {
            if slip_qr::validate_biller_id(id).is_err() {
                v.fail("billerId", "must be 15 digits");
            }
        }
        check_limit(&mut v, "limitQuota", &upd.limit_quota);
        check_line(&mut v, &upd.line);
        v.into_result()?;
        let clear_empty =
            |o: &Option<String>| o.as_ref().map(|s| (!s.is_empty()).then(|| s.clone()));
        let patch = BranchPatch {
            name: upd.name.as_ref().map(|n| n.trim().to_string()),
            active: upd.active,
            allow_ips,
            webhook_url: clear_empty(&upd.webhook_url),
            webhook_secret: clear_empty(&upd.webhook_secret),
            biller_id: clear_empty(&upd.biller_id),
            limit_quota: upd.limit_quota,
            sandbox: upd.sandbox,
        };
        let b = self
            .store
            .update_branch(id, &patch)
            .await?
            .ok_or_else(|| Error::unknown("branch", "no such branch"))?;
        if !upd.line.is_empty() {
            self.store.set_line_settings(id, &upd.line).await?;
        }
        Ok(b)
    }

    /// A branch's LINE settings, when it has any.
    pub async fn line_settings(
        &self,
        id: &BranchId,
    ) -> Result<Option<domain::line::LineSettings>, Error> {
        Ok(self.store.get_line_settings(id).await?)
    }

    pub async fn update_service(
        &self,
        id: &ServiceId,
        upd: &ServiceUpdate,
    ) -> Result<Service, Error> {
        let mut v = Validation::new();
        if let Some(n) = &upd.name {
            check_name(&mut v, n);
        }
        check_limit(&mut v, "quota", &upd.limit_quota);
        if matches!(upd.rate_limit_rps, Some(Some(0))) {
            v.fail("rateLimit", "must be at least 1 request per second");
        }
        // What the body names but does not exist: `NOT_FOUND`, once the shape is right.
        let mut missing = Validation::new();
        if let Some(plan) = &upd.plan {
            if !self
                .store
                .list_plans()
                .await?
                .iter()
                .any(|p| &p.name == plan)
            {
                missing.fail("plan", format!("no plan named '{plan}'"));
            }
        }
        let owner = match &upd.owner_id {
            None => None,
            Some(id) if id.as_str().is_empty() => Some(None),
            Some(id) => {
                if self.store.get_user(id).await?.is_none() {
                    missing.fail("owner", "no such user");
                }
                Some(Some(id.clone()))
            }
        };
        v.into_result()?;
        missing.into_unknown()?;
        let patch = ServicePatch {
            name: upd.name.as_ref().map(|n| n.trim().to_string()),
            limit_quota: upd.limit_quota,
            state: upd.state,
            expires_at: upd.expires_at,
            owner_id: owner,
            plan: upd.plan.clone(),
            rate_limit_rps: upd.rate_limit_rps,
            owner_verified: upd.owner_verified,
        };
        self.store
            .update_service(id, &patch)
            .await?
            .ok_or_else(|| Error::unknown("service", "no such service"))
    }

    /// Creates or changes a plan: `rps` requests per second per branch, bursts of `burst`.
    pub async fn set_plan(&self, name: &str, rps: u32, burst: Option<u32>) -> Result<Plan, Error> {
        let mut v = Validation::new();
        check_name(&mut v, name);
        if rps == 0 {
            v.fail("rps", "must be at least 1");
        }
        if burst == Some(0) {
            v.fail("burst", "must be at least 1");
        }
        v.into_result()?;
        let plan = Plan {
            name: name.trim().to_string(),
            rps,
            burst: burst.unwrap_or(rps.div_ceil(2)),
        };
        self.store.upsert_plan(&plan).await?;
        Ok(plan)
    }

    pub async fn create_user(&self, name: &str) -> Result<User, Error> {
        let mut v = Validation::new();
        check_name(&mut v, name);
        v.into_result()?;
        let u = User {
            id: UserId::new(uuid::Uuid::new_v4().to_string()),
            name: name.trim().to_string(),
            banned: false,
            created_at: self.clock.now(),
        };
        self.store.create_user(&u).await?;
        Ok(u)
    }

    /// Banning a user stops every service they own (`USER_BANNED`).
    pub async fn set_user_banned(&self, id: &UserId, banned: bool) -> Result<User, Error> {
        if !self.store.set_user_banned(id, banned).await? {
            return Err(Error::unknown("user", "no such user"));
        }
        self.store
            .get_user(id)
            .await?
            .ok_or_else(|| Error::unknown("user", "no such user"))
    }

    /// Issues a new key. The old one stops working at once, or after `grace` (at most 7 days)
    /// so integrations can switch without downtime.
    pub async fn rotate_key(
        &self,
        branch_id: &BranchId,
        grace: Option<time::Duration>,
    ) -> Result<String, Error> {
        if let Some(g) = grace {
            if g.is_negative() || g > time::Duration::days(7) {
                return Err(Error::invalid("grace", "must be between 0 and 7 days"));
            }
        }
        let key = new_key();
        let keep_old_until = grace.map(|g| self.clock.now() + g);
        if self
            .store
            .set_api_key_hash(branch_id, &apikey::hash_key(&key), keep_old_until)
            .await?
        {
            Ok(key)
        } else {
            Err(Error::unknown("branch", "no such branch"))
        }
    }
}

// Plain reads for operators. Store errors stay as they are: the API maps them to its 500, the
// CLI prints their text.
impl Admin<'_> {
    pub async fn get_service(&self, id: &ServiceId) -> Result<Option<Service>, StoreError> {
        self.store.get_service(id).await
    }

    pub async fn find_service_by_name(&self, name: &str) -> Result<Option<Service>, StoreError> {
        self.store.find_service_by_name(name).await
    }

    pub async fn list_branches(&self, service_id: &ServiceId) -> Result<Vec<Branch>, StoreError> {
        self.store.list_branches(service_id).await
    }

    pub async fn list_plans(&self) -> Result<Vec<Plan>, StoreError> {
        self.store.list_plans().await
    }

    /// The partner quota changes of a branch (empty for an unknown branch).
    pub async fn list_audit(
        &self,
        branch_id: &BranchId,
    ) -> Result<Vec<domain::model::AuditEntry>, StoreError> {
        self.store.list_audit(branch_id).await
    }
}

/// Why `allowIps: []` is refused: opening a branch to every address is always the literal `*`.
pub const EMPTY_ALLOW_LIST: &str =
    "must not be empty: list addresses or CIDRs, or [\"*\"] to allow every address";

/// The LINE fields of a branch change: lengths, the id's alphabet, the daily push limit.
fn check_line(v: &mut Validation, l: &domain::line::LinePatch) {
    if matches!(&l.channel_secret, Some(s) if s.len() > 256) {
        v.fail("lineChannelSecret", "must be at most 256 characters");
    }
    if matches!(&l.channel_token, Some(t) if t.len() > 1024) {
        v.fail("lineChannelToken", "must be at most 1024 characters");
    }
    if let Some(to) = l.notify_to.as_deref().filter(|t| !t.is_empty()) {
        // LINE's user, group and room ids: `U`, `C` or `R` and 32 hex digits.
        let ok = to.len() == 33
            && matches!(to.as_bytes()[0], b'U' | b'C' | b'R')
            && to[1..].bytes().all(|b| b.is_ascii_hexdigit());
        if !ok {
            v.fail(
                "lineNotifyTo",
                "must be a LINE user, group or room id (U, C or R and 32 hex digits)",
            );
        }
    }
    if matches!(l.push_daily_limit, Some(n) if n > 10_000) {
        v.fail("linePushDailyLimit", "must be from 0 to 10000");
    }
}
