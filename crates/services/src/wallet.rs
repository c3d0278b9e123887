//! Verifying a parsed TrueMoney Wallet slip: quota pre-check → ask the wallet → charge and
//! record (the same atomic charge and duplicate rule as bank slips, under the pseudo-bank
//! `TRUEMONEY`) → answer.

use crate::auth::Caller;
use crate::verify::VerifyRequest;
use crate::Services;
use domain::model::{RawWalletSlip, VerifiedTransfer, VerifyWalletData};
use domain::{Error, Satang};
use gateway::WalletAnswer;
use slip_qr::TrueMoneySlipQr;
use store::VerificationRecord;

/// Verifications of wallet slips are recorded under this sending "bank".
pub const TRUEMONEY: &str = "TRUEMONEY";

impl Services {
    pub async fn verify_truewallet(
        &self,
        caller: &Caller,
        req: &VerifyRequest<TrueMoneySlipQr>,
    ) -> Result<VerifyWalletData, Error> {
        let slip = &req.slip;
        if self.wallet_for(caller).is_none() && (caller.branch.sandbox || self.router.is_none()) {
            return Err(Error::SlipNotFound(
                "TrueMoney slips are not enabled here".into(),
            ));
        }
        // Not for a keyed request taken over from a node that died: it may be charged.
        if !caller.idempotency.as_ref().is_some_and(|c| c.takeover) {
            self.precheck_for(caller).await?;
        }
        // Local first, as for bank slips.
        let stored = self
            .confirmed_before(caller, TRUEMONEY, &slip.transaction_id)
            .await?;
        let (transfer, source) = match stored {
            Some((VerifiedTransfer::Wallet(t), source)) => (t, source),
            _ => match self
                .ask_wallet(caller, &slip.payload, &slip.transaction_id)
                .await
            {
                (WalletAnswer::Found(t), source) => (t, source),
                (WalletAnswer::NotFound, _) => {
                    return Err(Error::SlipNotFound(
                        "the wallet has no transfer with this transaction id".into(),
                    ))
                }
                (WalletAnswer::Unavailable(detail), source) => {
                    tracing::warn!(%source, %detail, "wallet unavailable");
                    return Err(Error::ApiServerError);
                }
            },
        };
        let outcome = self
            .record_for(
                caller,
                &VerificationRecord {
                    service_id: caller.service.id.clone(),
                    branch_id: caller.branch.id.clone(),
                    sending_bank: TRUEMONEY.into(),
                    trans_ref: transfer.transaction_id.clone(),
                    amount: transfer.amount,
                    transferred_at: transfer.occurred_at,
                    verified_at: self.clock.now(),
                    job_id: None,
                    idempotency_key: caller.idempotency.as_ref().map(|c| c.key.clone()),
                    transfer: Some(VerifiedTransfer::Wallet(transfer.clone())),
                    source: Some(source),
                },
            )
            .await?;
        let is_amount_matched = req.match_amount == Some(transfer.amount);
        let mut raw = RawWalletSlip::from_transfer(&transfer);
        raw.payload = slip.payload.clone();
        Ok(VerifyWalletData {
            remark: req.remark.clone().unwrap_or_default(),
            is_duplicate: req.check_duplicate && !outcome.first_verification,
            amount_in_slip: transfer.amount.as_baht(),
            is_amount_matched: req.match_amount.map(|_| is_amount_matched),
            amount_in_order: req.match_amount.map(Satang::as_baht),
            mismatches: if req.match_amount.is_some() && !is_amount_matched {
                vec!["amount_not_match"]
            } else {
                Vec::new()
            },
            raw_slip: raw,
        })
    }
}
