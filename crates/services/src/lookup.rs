//! Who is asked about a slip: the caller's space (`space.rs`) — the connector router for
//! production, the built-in ledger for a test branch — after the stored verification (local
//! first, `Space::confirmed_before`). The answer's source is noted on the caller's trace.

use crate::auth::Caller;
use connectors::{Outcome, SlipQuery, WalletQuery};
use domain::model::{Transfer, WalletTransfer};

/// Asks the caller's space about a bank slip; the answer and who gave it.
pub(crate) async fn ask_bank(
    caller: &Caller,
    payload: &str,
    sending_bank: &str,
    trans_ref: &str,
) -> (Outcome<Transfer>, String) {
    let q = SlipQuery::new(payload, sending_bank, trans_ref);
    let (answer, source) = caller.space().ask_bank(&q).await;
    (answer, noted(caller, source))
}

/// Asks the caller's space about a TrueMoney transaction id; the answer and who gave it.
pub(crate) async fn ask_wallet(
    caller: &Caller,
    payload: &str,
    transaction_id: &str,
) -> (Outcome<WalletTransfer>, String) {
    let q = WalletQuery::new(Some(payload.to_string()), transaction_id);
    let (answer, source) = caller.space().ask_wallet(&q).await;
    (answer, noted(caller, source))
}

/// The source noted on the caller's trace; nobody answered when every connector was down:
/// nothing to note.
fn noted(caller: &Caller, source: Option<String>) -> String {
    if let Some(s) = &source {
        caller.trace.source(s);
    }
    source.unwrap_or_else(|| "unknown".into())
}
