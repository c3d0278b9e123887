//! `Idempotency-Key` on the verification routes (issue 18, docs/idempotency.md): keys are per
//! branch and kept 24 h; the database decides which request of a key runs (`store`
//! `idempotency_begin`). The charge of a keyed request is recorded on its key in the charge's
//! own transaction, so a retry after a crash between the charge and the answer is not charged
//! again.

use crate::auth::Caller;
/// Defined beside `Caller`, which it travels with.
pub use crate::auth::IdemClaim;
use crate::verify::Verify;
use domain::Error;
use store::{IdemBegin, IdemKey};

/// How long a key is remembered.
pub const KEEP: time::Duration = time::Duration::hours(24);

/// How long a running request holds its key before a retry may take it over (its node is
/// presumed dead), unless `server.idempotency_lease_secs` says otherwise. Longer than any
/// request runs: body deadline (30 s), image fetch and decode, the connectors' timeouts and
/// fallback.
pub const LEASE: time::Duration = time::Duration::seconds(120);

/// What to do with a keyed request.
#[derive(Debug)]
pub enum Claimed {
    Run(IdemClaim),
    /// The answer stored for this key: status and JSON body.
    Stored {
        status: u16,
        body: String,
    },
}

/// `Idempotency-Key`: 1 to 255 visible ASCII characters.
pub fn check_key(key: &str) -> Result<(), Error> {
    let ok = (1..=255).contains(&key.len()) && key.bytes().all(|b| b.is_ascii_graphic());
    if ok {
        Ok(())
    } else {
        Err(Error::invalid(
            "Idempotency-Key",
            "must be 1 to 255 visible ASCII characters",
        ))
    }
}

/// Whether an answer of this status is kept under its key: final answers are, "try again"
/// answers (408, 429, 5xx) never (docs/idempotency.md).
pub fn stores(status: u16) -> bool {
    status < 500 && status != 429 && status != 408
}

impl Verify<'_> {
    /// Claims `key` of the caller's branch for a request whose parsed form hashes to
    /// `fingerprint`; `IDEMPOTENCY_KEY_IN_USE` while another runs, `IDEMPOTENCY_KEY_REUSED`
    /// for a different request.
    pub async fn idempotency_begin(
        &self,
        caller: &Caller,
        key: &str,
        fingerprint: &str,
    ) -> Result<Claimed, Error> {
        check_key(key)?;
        let now = self.clock.now();
        let k = IdemKey {
            branch_id: &caller.branch.id,
            key,
            fingerprint,
        };
        match self
            .store
            .idempotency_begin(&k, now, now + self.idem_lease, now - KEEP)
            .await?
        {
            IdemBegin::Run {
                takeover,
                first_used_ms,
            } => Ok(Claimed::Run(IdemClaim {
                key: key.to_string(),
                takeover,
                first_used_ms,
            })),
            IdemBegin::Stored { status, body } => Ok(Claimed::Stored { status, body }),
            IdemBegin::Running { lease_until_ms } => {
                // Retry when the holder's lease ends (its node presumed dead by then).
                let left_ms = lease_until_ms - domain::clock::to_millis(now);
                let secs = if lease_until_ms == 0 {
                    1
                } else {
                    u64::try_from(left_ms.max(0)).unwrap_or(0).div_ceil(1000)
                };
                Err(Error::IdempotencyKeyInUse {
                    retry_after_secs: secs.clamp(1, self.idem_lease.whole_seconds().max(1) as u64),
                })
            }
            IdemBegin::Reused => Err(Error::IdempotencyKeyReused),
        }
    }

    /// Stores the answer of a keyed request (2xx and 4xx), or gives the key back at once for
    /// a "try again" answer: 5xx, 429 (the plan's rate or the decode budget) and 408. A
    /// failure here is logged: the client has its answer, and the key's lease ends.
    pub async fn idempotency_finish(
        &self,
        caller: &Caller,
        claim: &IdemClaim,
        answer: (u16, &str),
    ) {
        let stored = stores(answer.0).then_some(answer);
        if let Err(e) = self
            .store
            .idempotency_finish(&caller.branch.id, &claim.key, stored)
            .await
        {
            tracing::warn!(error = %e, "idempotency: answer not stored");
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn try_again_answers_are_never_stored() {
        for s in [200, 202, 400, 404, 409, 422] {
            assert!(super::stores(s), "{s}");
        }
        for s in [408, 429, 500, 502, 503, 504] {
            assert!(!super::stores(s), "{s}");
        }
    }
}
