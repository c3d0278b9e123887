//! Verifying a parsed bank slip: quota pre-check → ask the sending bank →
//! charge and record atomically → answer.

use crate::auth::{Caller, IdemClaim};
pub use crate::handles::Verify;
use connectors::Outcome;
use domain::attempt::AttemptDraft;
use domain::matching::SlipReceiver;
use domain::model::{Checks, MatchedAccount, RawSlip, VerifiedTransfer, VerifyBankData};
use domain::{Error, Satang};
use slip_qr::BankSlipQr;
use store::{ChargeOutcome, VerificationRecord};

/// A slip to verify, already parsed where it entered (`SlipReader::bank_slip`,
/// `SlipReader::truemoney_slip`), with the caller's options; a job submission's slips are its
/// `SlipInput`s, read when the jobs are made (`Jobs::submit_jobs`).
#[derive(Debug, Clone, PartialEq)]
pub struct VerifyRequest<S = BankSlipQr> {
    pub slip: S,
    pub check_duplicate: bool,
    pub match_amount: Option<Satang>,
    pub remark: Option<String>,
    /// Compare the slip's receiver with the branch's bank accounts (`matchAccount`).
    pub match_account: bool,
    /// Set for an async job: its quota is charged at most once.
    pub job_id: Option<domain::JobId>,
    /// The request's `Idempotency-Key`, once claimed: its charge is recorded on the key.
    pub idempotency: Option<IdemClaim>,
}

impl<S> VerifyRequest<S> {
    /// The request under its `Idempotency-Key` claim, if it has one.
    pub fn keyed(mut self, claim: Option<IdemClaim>) -> Self {
        self.idempotency = claim;
        self
    }

    /// A keyed request taken over from a node that died: it may be charged already, and the
    /// charge (not a pre-check) answers it as the first run would have.
    pub fn taken_over(&self) -> bool {
        self.idempotency.as_ref().is_some_and(|c| c.takeover)
    }
}

impl<S> VerifyRequest<S> {
    /// The answer to the caller's options about a slip of `amount` whose charge came to
    /// `outcome`, noted on the caller's trace; `matched`: the account `matchAccount` found
    /// among the branch's (`None`: not asked).
    pub(crate) fn answer(
        &self,
        caller: &Caller,
        amount: Satang,
        outcome: &ChargeOutcome,
        matched: &Option<Option<MatchedAccount>>,
    ) -> Checks {
        let account_matched = matched.as_ref().map(Option::is_some);
        let is_amount_matched = self.match_amount == Some(amount);
        let mismatches = self.mismatches(amount, account_matched);
        let checks = Checks {
            remark: self.remark.clone().unwrap_or_default(),
            is_duplicate: self.check_duplicate && !outcome.first_verification,
            amount_in_slip: amount.as_baht(),
            is_amount_matched: self.match_amount.map(|_| is_amount_matched),
            amount_in_order: self.match_amount.map(Satang::as_baht),
            mismatches,
        };
        caller
            .trace
            .answered(amount, &checks.mismatches, checks.is_duplicate);
        checks
    }
}

impl<S> VerifyRequest<S> {
    /// The checks that failed (`amount_not_match`, `account_not_match`): known before the
    /// charge, so the attempts-log record can be committed with it.
    pub(crate) fn mismatches(
        &self,
        amount: Satang,
        account_matched: Option<bool>,
    ) -> Vec<&'static str> {
        let mut mismatches = Vec::new();
        if self.match_amount.is_some_and(|m| m != amount) {
            mismatches.push("amount_not_match");
        }
        if account_matched == Some(false) {
            mismatches.push("account_not_match");
        }
        mismatches
    }

    /// The record of this verification to commit with its charge (see `Trace::draft`).
    pub(crate) fn draft(
        &self,
        caller: &Caller,
        now: time::OffsetDateTime,
        amount: Satang,
        account_matched: Option<bool>,
    ) -> Option<AttemptDraft> {
        let mismatches = self.mismatches(amount, account_matched);
        caller
            .trace
            .draft(now, amount, &mismatches, self.check_duplicate)
    }
}

impl Verify<'_> {
    pub async fn verify_bank(
        &self,
        caller: &Caller,
        req: &VerifyRequest,
    ) -> Result<VerifyBankData, Error> {
        let slip = &req.slip;
        // Cheap refusal before asking the bank; the charge below is the one that counts. Not for
        // a job: one that runs again after a crash may already be charged, and the charge
        // returns that recorded outcome instead of refusing it.
        // The same for a keyed request taken over from a node that died: it may be charged.
        if req.job_id.is_none() && !req.taken_over() {
            caller
                .space()
                .precheck(&caller.service, &caller.branch)
                .await?;
        }

        // Local first: a transfer this service already confirmed is answered from its stored
        // verification; only new slips reach a connector.
        caller.trace.slip(&slip.sending_bank, &slip.trans_ref);
        caller.trace.asked_amount(req.match_amount);
        let stored = caller
            .space()
            .confirmed_before(&caller.service.id, (&slip.sending_bank, &slip.trans_ref))
            .await?;
        let (transfer, source) = match stored {
            Some((VerifiedTransfer::Bank(t), source)) => {
                caller.trace.source("local");
                (t, source)
            }
            _ => match crate::lookup::ask_bank(
                caller,
                &slip.payload,
                &slip.sending_bank,
                &slip.trans_ref,
            )
            .await
            {
                (Outcome::Found(t), source) => (Box::new(t), source),
                (Outcome::NotFound, _) => {
                    return Err(Error::SlipNotFound(
                        "the sending bank has no transfer with this reference".into(),
                    ))
                }
                (Outcome::Pending, _) => return Err(Error::SlipPending),
                (Outcome::Expired, _) => return Err(Error::SlipExpired),
                (Outcome::Unavailable(detail), source) => {
                    tracing::warn!(bank = %slip.sending_bank, %source, %detail, "bank unavailable");
                    return Err(Error::ApiServerError);
                }
            },
        };

        let (outcome, matched) = self
            .charge_confirmed(
                caller,
                req,
                (&slip.sending_bank, &slip.trans_ref),
                (VerifiedTransfer::Bank(transfer.clone()), source),
                &SlipReceiver::from_party(&transfer.receiver),
                req.job_id.clone(),
            )
            .await?;
        if let Some(hook) = self.after_charge {
            hook().await;
        }

        let mut raw = RawSlip::from_transfer(&transfer);
        // Echo the payload as the caller's QR reads (trimmed), which is what was verified.
        raw.payload = slip.payload.clone();
        let checks = req.answer(caller, transfer.amount, &outcome, &matched);
        Ok(VerifyBankData::new(checks, matched.flatten(), raw))
    }

    /// Charges the caller for a transfer its space confirmed (`slip`: its sending bank and
    /// reference; `confirmed`: the transfer and who confirmed it), once per `job_id` or key,
    /// and matches `receiver` against the branch's accounts when the request asks
    /// (`matchAccount`; `None`: not asked). The accounts are read before the charge: once
    /// charged, nothing may fail the request (a client retry would be charged again); a
    /// receiver not matched is a check on a verified slip, not a reason to refuse it.
    pub(crate) async fn charge_confirmed<S>(
        &self,
        caller: &Caller,
        req: &VerifyRequest<S>,
        slip: (&str, &str),
        (transfer, source): (VerifiedTransfer, String),
        receiver: &SlipReceiver<'_>,
        job_id: Option<domain::JobId>,
    ) -> Result<(ChargeOutcome, Option<Option<MatchedAccount>>), Error> {
        let accounts = if req.match_account {
            Some(self.store.list_bank_accounts(&caller.branch.id).await?)
        } else {
            None
        };
        let matched = accounts.map(|a| crate::accounts::matched_receiver(&a, receiver));
        let account_matched = matched.as_ref().map(Option::is_some);
        let draft = req.draft(caller, self.clock.now(), transfer.amount(), account_matched);
        let claim = req.idempotency.as_ref();
        let outcome = self
            .record_verified(caller, slip, transfer, source, (job_id, claim), draft)
            .await?;
        Ok((outcome, matched))
    }

    /// Charges the caller for `transfer`, the slip `(sending_bank, trans_ref)` as `source`
    /// confirmed it (a test branch records it uncharged), once per job or key (`once`),
    /// committing `draft`, the request's attempts-log record, with the charge when it can.
    async fn record_verified(
        &self,
        caller: &Caller,
        (sending_bank, trans_ref): (&str, &str),
        transfer: VerifiedTransfer,
        source: String,
        (job_id, claim): (Option<domain::JobId>, Option<&IdemClaim>),
        draft: Option<AttemptDraft>,
    ) -> Result<ChargeOutcome, Error> {
        let rec = VerificationRecord {
            service_id: caller.service.id.clone(),
            branch_id: caller.branch.id.clone(),
            sending_bank: sending_bank.into(),
            trans_ref: trans_ref.into(),
            amount: transfer.amount(),
            transferred_at: transfer.occurred_at(),
            verified_at: self.clock.now(),
            job_id,
            idempotency_key: claim.map(|c| c.key.clone()),
            transfer: Some(transfer),
            source: Some(source),
        };
        // A job's or a keyed request's charge may be one recorded before (its worker or node
        // died after it): its record is written apart, once, as before.
        let draft = draft.filter(|_| rec.job_id.is_none() && rec.idempotency_key.is_none());
        let outcome = caller.space().record(&rec, draft).await?;
        if outcome.attempt_logged {
            caller.trace.logged();
        }
        Ok(outcome)
    }
}

impl Verify<'_> {
    /// The first verification of a slip in the caller's space (v1 `duplicate_slip`).
    pub async fn recorded_verification(
        &self,
        caller: &Caller,
        sending_bank: &str,
        trans_ref: &str,
    ) -> Result<Option<VerificationRecord>, Error> {
        caller
            .space()
            .recorded(&caller.service.id, (sending_bank, trans_ref))
            .await
    }

    /// Test verifications of the caller's service and branch (`/v2/info` `sandboxUsed`).
    pub async fn sandbox_used(&self, caller: &Caller) -> Result<(i64, i64), Error> {
        Ok(self
            .store
            .sandbox_used(&caller.service.id, &caller.branch.id)
            .await?)
    }
}
