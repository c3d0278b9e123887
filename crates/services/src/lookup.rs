//! Who is asked about a slip: the stored verification first (local first), then the
//! connector router, or the built-in ledger when no router is configured.

use crate::auth::Caller;
use crate::Services;
use domain::model::VerifiedTransfer;
use domain::Error;
use gateway::{BankAnswer, WalletAnswer};

impl Services {
    /// A transfer this service already confirmed: the bank's answer for a confirmed transfer
    /// does not change, so a repeat costs no connector call. Rows from before the transfer was
    /// stored (migration 0011) are asked again.
    /// A test branch verifies on the local ledger anyway: it skips this.
    pub(crate) async fn confirmed_before(
        &self,
        caller: &Caller,
        sending_bank: &str,
        trans_ref: &str,
    ) -> Result<Option<(VerifiedTransfer, String)>, Error> {
        if caller.branch.sandbox {
            return Ok(None);
        }
        let rec = self
            .store
            .get_verification(&caller.service.id, sending_bank, trans_ref)
            .await?;
        // After retention blanked its personal fields the transfer still answers (with blank
        // names): the bank may no longer keep the slip at all (docs/decisions.md).
        Ok(rec.and_then(|r| {
            let source = r.source.unwrap_or_else(|| "stored".into());
            r.transfer.map(|t| (t, source))
        }))
    }

    /// Asks the route of the slip's sending bank; the answer and who gave it.
    pub(crate) async fn ask_bank(
        &self,
        caller: &Caller,
        payload: &str,
        sending_bank: &str,
        trans_ref: &str,
    ) -> (BankAnswer, String) {
        let (answer, source) = match &self.router {
            // Test branches always verify on the built-in ledger.
            Some(router) if !caller.branch.sandbox => {
                let q = connectors::SlipQuery::new(payload, sending_bank, trans_ref);
                let routed = router.route(&q).await;
                (routed.answer, routed.source)
            }
            _ => {
                let bank = self.bank_for(caller);
                (
                    bank.lookup(sending_bank, trans_ref).await,
                    Some(bank.source().to_string()),
                )
            }
        };
        // Nobody answered when every connector was down: nothing to note.
        if let Some(s) = &source {
            caller.trace.source(s);
        }
        (answer, source.unwrap_or_else(|| "unknown".into()))
    }

    /// Asks the TrueMoney route about a transaction id; the answer and who gave it.
    pub(crate) async fn ask_wallet(
        &self,
        caller: &Caller,
        payload: &str,
        transaction_id: &str,
    ) -> (WalletAnswer, String) {
        let router = self.router.as_ref().filter(|_| !caller.branch.sandbox);
        let (answer, source) = match (router, self.wallet_for(caller)) {
            (Some(router), _) => {
                let q = connectors::WalletQuery::new(Some(payload.to_string()), transaction_id);
                let routed = router.route_wallet(&q).await;
                (routed.answer, routed.source)
            }
            (None, Some(wallet)) => (
                wallet.lookup(transaction_id).await,
                Some(wallet.source().to_string()),
            ),
            (None, None) => (WalletAnswer::NotFound, None),
        };
        if let Some(s) = &source {
            caller.trace.source(s);
        }
        (answer, source.unwrap_or_else(|| "unknown".into()))
    }
}

impl Services {
    /// Each connector as operators see it (`GET /admin/connectors`): state, last error,
    /// counts, median latency; never a secret.
    pub fn connector_status(&self) -> Vec<connectors::ConnectorStatus> {
        self.router.as_ref().map(|r| r.status()).unwrap_or_default()
    }

    /// Reaches each connector (a token request where there is one) and verifies nothing.
    pub async fn check_connectors(&self) -> Vec<connectors::ConnectorCheck> {
        match &self.router {
            Some(r) => r.check_report().await,
            None => Vec::new(),
        }
    }
}
