//! Verifying a parsed TrueMoney Wallet slip: quota pre-check → ask the wallet → charge and
//! record (the same atomic charge and duplicate rule as bank slips, under the pseudo-bank
//! `TRUEMONEY`) → answer.

use crate::auth::Caller;
use crate::verify::{Verify, VerifyRequest};
use connectors::Outcome;
use domain::matching::SlipReceiver;
use domain::model::{RawWalletSlip, VerifiedTransfer, VerifyWalletData};
use domain::Error;
use slip_qr::TrueMoneySlipQr;

/// Verifications of wallet slips are recorded under this sending "bank".
pub const TRUEMONEY: &str = "TRUEMONEY";

impl Verify<'_> {
    pub async fn verify_truewallet(
        &self,
        caller: &Caller,
        req: &VerifyRequest<TrueMoneySlipQr>,
    ) -> Result<VerifyWalletData, Error> {
        let slip = &req.slip;
        // Not for a keyed request taken over from a node that died: it may be charged.
        if !req.taken_over() {
            caller
                .space()
                .precheck(&caller.service, &caller.branch)
                .await?;
        }
        // Local first, as for bank slips.
        caller.trace.slip(TRUEMONEY, &slip.transaction_id);
        caller.trace.asked_amount(req.match_amount);
        let stored = caller
            .space()
            .confirmed_before(&caller.service.id, (TRUEMONEY, &slip.transaction_id))
            .await?;
        let (transfer, source) = match stored {
            Some((VerifiedTransfer::Wallet(t), source)) => {
                caller.trace.source("local");
                (t, source)
            }
            _ => match crate::lookup::ask_wallet(caller, &slip.payload, &slip.transaction_id).await
            {
                (Outcome::Found(t), source) => (Box::new(t), source),
                // The router answers a wallet slip found, not found or unavailable.
                (Outcome::NotFound | Outcome::Pending | Outcome::Expired, _) => {
                    return Err(Error::SlipNotFound(
                        "the wallet has no transfer with this transaction id".into(),
                    ))
                }
                (Outcome::Unavailable(detail), source) => {
                    tracing::warn!(%source, %detail, "wallet unavailable");
                    return Err(Error::ApiServerError);
                }
            },
        };
        let receiver = SlipReceiver::from_wallet(&transfer.receiver_phone, &transfer.receiver_name);
        let (outcome, matched) = self
            .charge_confirmed(
                caller,
                req,
                (TRUEMONEY, &transfer.transaction_id),
                (VerifiedTransfer::Wallet(transfer.clone()), source),
                &receiver,
                None,
            )
            .await?;
        let mut raw = RawWalletSlip::from_transfer(&transfer);
        raw.payload = slip.payload.clone();
        let checks = req.answer(caller, transfer.amount, &outcome, &matched);
        Ok(VerifyWalletData::new(checks, matched.flatten(), raw))
    }
}
