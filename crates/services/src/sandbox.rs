//! Test branches (`branches.sandbox`): the one place that decides, per caller, which ledger
//! answers a verification and where it is recorded. A test branch always verifies on the
//! built-in sandbox ledger (whatever answers production, later the connector router), is never
//! charged (no quota pre-check, no counters, no auto-renewal) and keeps its slips in its own
//! duplicate space; bans, inactive branch, IP allow-list, rate limit and expiry still apply.

use crate::auth::Caller;
use crate::Services;
use domain::model::{Branch, Service};
use domain::Error;
use gateway::{BankGateway, WalletGateway};
use std::sync::Arc;
use store::{ChargeOutcome, VerificationRecord};

impl Services {
    /// The bank gateway that answers this caller's slips.
    pub fn bank_for(&self, caller: &Caller) -> &Arc<dyn BankGateway> {
        if caller.branch.sandbox {
            &self.sandbox_bank
        } else {
            &self.bank
        }
    }

    /// The wallet gateway that answers this caller's TrueMoney slips, if any.
    pub fn wallet_for(&self, caller: &Caller) -> Option<&Arc<dyn WalletGateway>> {
        if caller.branch.sandbox {
            self.sandbox_wallet.as_ref()
        } else {
            self.wallet.as_ref()
        }
    }

    /// The quota pre-check, which a test branch skips: it spends no quota.
    pub async fn precheck_for(&self, caller: &Caller) -> Result<(), Error> {
        if caller.branch.sandbox {
            return Ok(());
        }
        self.precheck_quota(caller).await
    }

    /// Charges and records a verification (production), or records it in the test space
    /// without charging (test branch).
    pub async fn record_for(
        &self,
        caller: &Caller,
        rec: &VerificationRecord,
        draft: Option<domain::attempt::AttemptDraft>,
    ) -> Result<ChargeOutcome, Error> {
        if caller.branch.sandbox {
            return Ok(self.store.record_sandbox_verification(rec).await?);
        }
        self.charge_with_renewal(rec, draft).await
    }

    /// The first verification of a slip in the caller's space (v1 `duplicate_slip`).
    pub async fn recorded_verification(
        &self,
        caller: &Caller,
        sending_bank: &str,
        trans_ref: &str,
    ) -> Result<Option<VerificationRecord>, Error> {
        let id = &caller.service.id;
        Ok(if caller.branch.sandbox {
            self.store
                .get_sandbox_verification(id, sending_bank, trans_ref)
                .await?
        } else {
            self.store
                .get_verification(id, sending_bank, trans_ref)
                .await?
        })
    }

    /// Test verifications of the caller's service and branch (`/v2/info` `sandboxUsed`).
    pub async fn sandbox_used(&self, caller: &Caller) -> Result<(i64, i64), Error> {
        Ok(self
            .store
            .sandbox_used(&caller.service.id, &caller.branch.id)
            .await?)
    }

    /// `usable_service`, except that a test branch never renews: expiry still refuses it
    /// (`SERVICE_EXPIRED`), but a test request must not move money.
    pub async fn usable_service_for(
        &self,
        service: Service,
        branch: &Branch,
    ) -> Result<Service, Error> {
        if branch.sandbox {
            service.check_access(self.clock.now())?;
            return Ok(service);
        }
        self.usable_service(service).await
    }
}
