//! The caller's space: who confirms its transfers and where its verifications are recorded.
//! Chosen once per caller, when the caller is known (`Auth::caller` in `auth.rs`, through
//! `Spaces::of`, the one place that reads `Branch::sandbox`):
//! - production: the connector router confirms; the charge writer charges and records (quota
//!   pre-check, auto-renewal, the stored verification answers a repeat);
//! - a test branch: the built-in ledger (the connector `sandbox`) confirms, whatever answers
//!   production; recorded uncharged in the branch's own duplicate space (no quota pre-check,
//!   no counters, no auto-renewal). Bans, inactive branch, IP allow-list, rate limit and
//!   expiry still apply.
//!
//! The verification path (`verify.rs`, `wallet.rs`) asks the caller's space and never the
//! branch flag again.

use crate::renewal::Charger;
use async_trait::async_trait;
use connectors::{Connector, Outcome, Router, SlipQuery, WalletQuery};
use domain::attempt::AttemptDraft;
use domain::model::{Branch, Service, Transfer, VerifiedTransfer, WalletTransfer};
use domain::{Clock, Error, ServiceId};
use std::sync::Arc;
use store::{ChargeOutcome, VerificationRecord};

/// One space: precheck, local-first look-up, ask (bank and wallet), record. Each holds only
/// what it uses.
#[async_trait]
pub(crate) trait Space: Send + Sync + 'static {
    /// `production` or `test` (logs and `Debug`).
    fn name(&self) -> &'static str;

    /// The service if it may verify now.
    async fn usable(&self, service: Service) -> Result<Service, Error>;

    /// The cheap refusal before asking anyone.
    async fn precheck(&self, service: &Service, branch: &Branch) -> Result<(), Error>;

    /// A transfer this service already confirmed in this space, and who confirmed it.
    async fn confirmed_before(
        &self,
        service: &ServiceId,
        slip: (&str, &str),
    ) -> Result<Option<(VerifiedTransfer, String)>, Error>;

    /// What the bank says, and who said it (`None` when nobody could).
    async fn ask_bank(&self, q: &SlipQuery) -> (Outcome<Transfer>, Option<String>);

    /// What the wallet says, and who said it (`None` when nobody could).
    async fn ask_wallet(&self, q: &WalletQuery) -> (Outcome<WalletTransfer>, Option<String>);

    /// Records a confirmed verification (production charges it, committing `draft` with the
    /// charge when given).
    async fn record(
        &self,
        rec: &VerificationRecord,
        draft: Option<AttemptDraft>,
    ) -> Result<ChargeOutcome, Error>;

    /// Where this space's verifications are recorded.
    fn records(&self) -> (&store::SqlStore, store::Space);

    /// The first verification of a slip in this space (v1 `duplicate_slip`).
    async fn recorded(
        &self,
        service: &ServiceId,
        (sending_bank, trans_ref): (&str, &str),
    ) -> Result<Option<VerificationRecord>, Error> {
        let (store, space) = self.records();
        Ok(store
            .get_verification(space, service, sending_bank, trans_ref)
            .await?)
    }
}

impl std::fmt::Debug for dyn Space {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Both spaces of a node, built at wiring.
#[derive(Clone)]
pub(crate) struct Spaces {
    production: Arc<dyn Space>,
    test: Arc<dyn Space>,
}

impl Spaces {
    pub(crate) fn new(router: Arc<Router>, charger: Charger, ledger: Arc<dyn Connector>) -> Self {
        let test = TestBranch {
            ledger,
            store: charger.store.clone(),
            clock: charger.clock.clone(),
        };
        Self {
            production: Arc::new(Production { router, charger }),
            test: Arc::new(test),
        }
    }

    /// The caller's space: the one place the test-branch flag is read.
    pub(crate) fn of(&self, branch: &Branch) -> Arc<dyn Space> {
        if branch.sandbox {
            self.test.clone()
        } else {
            self.production.clone()
        }
    }
}

/// Production: the connector router, the charge writer.
struct Production {
    router: Arc<Router>,
    charger: Charger,
}

#[async_trait]
impl Space for Production {
    fn name(&self) -> &'static str {
        "production"
    }

    /// Renews an expired service when auto-renew says so.
    async fn usable(&self, service: Service) -> Result<Service, Error> {
        self.charger.usable_service(service).await
    }

    async fn precheck(&self, service: &Service, branch: &Branch) -> Result<(), Error> {
        self.charger.precheck_quota(service, branch).await
    }

    /// The bank's answer for a confirmed transfer does not change, so a repeat costs no
    /// connector call. Rows from before the transfer was stored (migration 0011) are asked
    /// again.
    async fn confirmed_before(
        &self,
        service: &ServiceId,
        slip: (&str, &str),
    ) -> Result<Option<(VerifiedTransfer, String)>, Error> {
        let rec = self.recorded(service, slip).await?;
        // After retention blanked its personal fields the transfer still answers (with blank
        // names): the bank may no longer keep the slip at all (docs/decisions.md).
        Ok(rec.and_then(|r| {
            let source = r.source.unwrap_or_else(|| "stored".into());
            r.transfer.map(|t| (t, source))
        }))
    }

    async fn ask_bank(&self, q: &SlipQuery) -> (Outcome<Transfer>, Option<String>) {
        let routed = self.router.route(q).await;
        (routed.answer, routed.source)
    }

    async fn ask_wallet(&self, q: &WalletQuery) -> (Outcome<WalletTransfer>, Option<String>) {
        let routed = self.router.route_wallet(q).await;
        (routed.answer, routed.source)
    }

    async fn record(
        &self,
        rec: &VerificationRecord,
        draft: Option<AttemptDraft>,
    ) -> Result<ChargeOutcome, Error> {
        self.charger.charge_with_renewal(rec, draft).await
    }

    fn records(&self) -> (&store::SqlStore, store::Space) {
        (&self.charger.store, store::Space::Production)
    }
}

/// A test branch: the built-in ledger, the test space.
struct TestBranch {
    ledger: Arc<dyn Connector>,
    store: Arc<store::SqlStore>,
    clock: Arc<dyn Clock>,
}

#[async_trait]
impl Space for TestBranch {
    fn name(&self) -> &'static str {
        "test"
    }

    /// Never renews: expiry still refuses it (`SERVICE_EXPIRED`), but a test request must not
    /// move money.
    async fn usable(&self, service: Service) -> Result<Service, Error> {
        service.check_access(self.clock.now())?;
        Ok(service)
    }

    /// A test branch spends no quota.
    async fn precheck(&self, _service: &Service, _branch: &Branch) -> Result<(), Error> {
        Ok(())
    }

    /// The ledger is local anyway: always asked.
    async fn confirmed_before(
        &self,
        _service: &ServiceId,
        _slip: (&str, &str),
    ) -> Result<Option<(VerifiedTransfer, String)>, Error> {
        Ok(None)
    }

    async fn ask_bank(&self, q: &SlipQuery) -> (Outcome<Transfer>, Option<String>) {
        let answer = self.ledger.lookup_bank(q).await;
        (answer, Some(self.ledger.kind().to_string()))
    }

    /// Recorded as `<kind>-wallet` (`sandbox-wallet`), the name test verifications of wallet
    /// slips have always carried.
    async fn ask_wallet(&self, q: &WalletQuery) -> (Outcome<WalletTransfer>, Option<String>) {
        let answer = self.ledger.lookup_wallet(q).await;
        (answer, Some(format!("{}-wallet", self.ledger.kind())))
    }

    /// In `sandbox_verifications`, uncharged; the record of a test request is written apart.
    async fn record(
        &self,
        rec: &VerificationRecord,
        _draft: Option<AttemptDraft>,
    ) -> Result<ChargeOutcome, Error> {
        Ok(self.store.record_sandbox_verification(rec).await?)
    }

    fn records(&self) -> (&store::SqlStore, store::Space) {
        (&self.store, store::Space::Sandbox)
    }
}
