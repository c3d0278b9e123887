//! The sandbox bank: a ledger of transfers kept in the service's own database, so the whole
//! flow can be tried and tested without a real bank. It behaves like the real ones where it
//! matters: Bangkok Bank (002) transfers are "pending" for their first 5 minutes.

use connectors::{Cause, Outcome};
use domain::model::{Party, Transfer};
use domain::{Clock, Satang};
use rand::Rng;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;
use store::SqlStore;

pub const BBL_PENDING_WINDOW: time::Duration = time::Duration::minutes(5);
/// How long the sandbox bank keeps transfers: older ones are "expired" (v1 `slip_expired`).
/// Thai banks keep slip look-ups for a limited time; the sandbox's figure is ours.
pub const SANDBOX_RETENTION: time::Duration = time::Duration::days(180);
const BBL: &str = "002";

pub struct SandboxBank {
    store: Arc<SqlStore>,
    clock: Arc<dyn Clock>,
    /// Artificial latency added to every look-up (benchmarks and crash tests only), and the
    /// runtime's timer that waits it out (this crate does not depend on a runtime).
    delay: Option<(Duration, Sleep)>,
}

/// The caller runtime's async sleep, boxed.
type Sleep = Arc<dyn Fn(Duration) -> Pin<Box<dyn Future<Output = ()> + Send>> + Send + Sync>;

/// What the operator says about a new sandbox transfer; the rest is made up plausibly.
#[derive(Debug, Clone)]
pub struct NewSandboxTransfer {
    pub from_bank: String,
    pub to_bank: String,
    pub amount: Satang,
    pub sender_name_th: Option<String>,
    pub sender_name_en: Option<String>,
    pub receiver_name_th: Option<String>,
    pub receiver_name_en: Option<String>,
    /// Receiver account number (digits); masked the way banks show it on slips.
    pub receiver_account: Option<String>,
}

impl SandboxBank {
    pub fn new(store: Arc<SqlStore>, clock: Arc<dyn Clock>) -> Self {
        Self {
            store,
            clock,
            delay: None,
        }
    }

    /// Every look-up first waits `delay` with `sleep`, the runtime's timer (e.g.
    /// `tokio::time::sleep`): a slow bank, for load and crash tests.
    pub fn with_delay<F, Fut>(mut self, delay: Duration, sleep: F) -> Self
    where
        F: Fn(Duration) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let sleep: Sleep = Arc::new(move |d| Box::pin(sleep(d)));
        self.delay = (!delay.is_zero()).then_some((delay, sleep));
        self
    }

    pub async fn create_transfer(
        &self,
        req: &NewSandboxTransfer,
    ) -> Result<Transfer, crate::CreateError> {
        use crate::CreateError;
        if !banks::is_slip_bank(&req.from_bank) {
            return Err(CreateError::UnknownSendingBank(req.from_bank.clone()));
        }
        if !banks::is_slip_bank(&req.to_bank) {
            return Err(CreateError::UnknownReceivingBank(req.to_bank.clone()));
        }
        if req.amount.0 <= 0 {
            return Err(CreateError::AmountNotPositive);
        }
        // A random reference can collide in theory; retry a few times on the primary key.
        crate::insert_with_fresh_id(
            5,
            || {
                let trans_ref = make_reference(&req.from_bank, &mut rand::rng());
                let payload = slip_qr::encode_bank_slip(&req.from_bank, &trans_ref);
                let mut rng = rand::rng();
                Transfer {
                    trans_ref,
                    payload,
                    occurred_at: self.clock.now(),
                    country_code: "TH".into(),
                    amount: req.amount,
                    fee: Satang(0),
                    ref1: String::new(),
                    ref2: String::new(),
                    ref3: String::new(),
                    sender: party(
                        &req.from_bank,
                        [&req.sender_name_th, &req.sender_name_en],
                        ["นาย สมชาย ใจดี", "MR. SOMCHAI J"],
                        &random_digits(&mut rng, 10),
                    ),
                    receiver: party(
                        &req.to_bank,
                        [&req.receiver_name_th, &req.receiver_name_en],
                        ["บริษัท ร้านตัวอย่าง จำกัด", "SAMPLE SHOP CO., LTD."],
                        &req.receiver_account
                            .clone()
                            .unwrap_or_else(|| random_digits(&mut rng, 10)),
                    ),
                    receiver_merchant_id: None,
                    bank_data: None,
                }
            },
            async |t| self.store.insert_sandbox_transfer(t).await,
            "transaction reference",
        )
        .await
    }
}

impl SandboxBank {
    /// What the ledger says about `(sending_bank, trans_ref)`.
    pub async fn lookup(&self, sending_bank: &str, trans_ref: &str) -> Outcome<Transfer> {
        if let Some((delay, sleep)) = &self.delay {
            sleep(*delay).await;
        }
        match self
            .store
            .get_sandbox_transfer(sending_bank, trans_ref)
            .await
        {
            Ok(Some(t)) if self.clock.now() - t.occurred_at > SANDBOX_RETENTION => Outcome::Expired,
            Ok(Some(t)) => {
                if sending_bank == BBL && self.clock.now() - t.occurred_at < BBL_PENDING_WINDOW {
                    Outcome::Pending
                } else {
                    Outcome::Found(t)
                }
            }
            Ok(None) => Outcome::NotFound,
            // The ledger is the sandbox bank's own backend: its failure is a bank outage.
            Err(e) => Outcome::unavailable(Cause::Connect, e.to_string()),
        }
    }
}

/// References look like the sending bank's: KBANK and SCB use long upper-case references,
/// others shorter mixed-case ones (both shapes occur in real slips, 12–25 characters).
fn make_reference(bank: &str, rng: &mut impl Rng) -> String {
    const UPPER: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    const MIXED: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let (alphabet, len) = match bank {
        "004" | "014" | "025" => (UPPER, 22),
        "002" | "006" => (UPPER, 18),
        _ => (MIXED, 12),
    };
    (0..len)
        .map(|_| alphabet[rng.random_range(0..alphabet.len())] as char)
        .collect()
}

/// A party of a sandbox transfer: the Thai and English names given, else the samples; the
/// account number masked.
fn party(
    bank_code: &str,
    [th, en]: [&Option<String>; 2],
    [sample_th, sample_en]: [&str; 2],
    account: &str,
) -> Party {
    Party {
        bank_code: bank_code.to_string(),
        name_th: th.clone().unwrap_or_else(|| sample_th.into()),
        name_en: Some(en.clone().unwrap_or_else(|| sample_en.into())),
        account_type: "BANKAC".into(),
        account: mask_account(account),
    }
}

pub(crate) fn random_digits(rng: &mut impl Rng, n: usize) -> String {
    (0..n)
        .map(|_| char::from(b'0' + rng.random_range(0..10u8)))
        .collect()
}

/// `1234563707` → `xxx-x-x3707-x`: banks show four digits before the check digit.
pub fn mask_account(digits: &str) -> String {
    let d: Vec<char> = digits.chars().filter(|c| c.is_ascii_digit()).collect();
    if d.len() < 6 {
        return "x".repeat(d.len());
    }
    let n = d.len();
    let visible: String = d[n - 5..n - 1].iter().collect();
    format!("xxx-x-x{visible}-x")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_like_banks() {
        assert_eq!(mask_account("1234563707"), "xxx-x-x6370-x");
        assert_eq!(mask_account("12"), "xx");
    }

    #[test]
    fn references_parse_as_slips() {
        let mut rng = rand::rng();
        for bank in ["002", "004", "006", "014", "011", "069"] {
            let r = make_reference(bank, &mut rng);
            let p = slip_qr::encode_bank_slip(bank, &r);
            let parsed = slip_qr::parse_bank_slip(&p).expect("sandbox payload parses");
            assert_eq!(parsed.trans_ref, r);
        }
    }
}
