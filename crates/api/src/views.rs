//! JSON views of administrative records, shared by the admin API and the CLI so both print
//! the same shapes. Secrets appear only where they are issued (keys on creation/rotation).

use domain::billing::{LedgerEntry, Package};
use domain::clock::format_bangkok;
use domain::model::{AuditEntry, Branch, Partner, Plan, Service, User};
use serde_json::{json, Value};

pub fn service(s: &Service) -> Value {
    json!({
        "id": s.id,
        "name": s.name,
        "state": s.state.as_str(),
        "limitQuota": s.quota.limit,
        "expiresAt": s.expires_at.map(format_bangkok),
        "ownerId": s.owner_id,
        "billingAnchor": format_bangkok(s.billing_anchor),
        "plan": s.plan.name,
        "rateLimit": s.rate_limit().rps,
        "ownerVerified": s.owner_verified,
        "package": s.subscription.package_id,
        "subscribedAt": s.subscription.started_at.map(format_bangkok),
        "autoRenew": {
            "onExpiry": s.subscription.auto_renew.on_expiry,
            "onQuota": s.subscription.auto_renew.on_quota,
        },
        "credit": baht(s.subscription.credit),
    })
}

/// Satang as a JSON number of baht.
fn baht(satang: i64) -> f64 {
    domain::Satang(satang).as_baht()
}

pub fn package(p: &Package) -> Value {
    json!({
        "id": p.id,
        "name": p.name,
        "quota": p.quota,
        "durationDays": p.duration_days,
        "price": p.price.as_baht(),
    })
}

/// One credit movement; `amount` is signed (negative draws).
pub fn ledger_entry(e: &LedgerEntry) -> Value {
    json!({
        "id": e.id,
        "at": format_bangkok(e.at),
        "kind": e.kind.as_str(),
        "amount": baht(e.amount),
        "balanceAfter": baht(e.balance_after),
        "actor": e.actor,
        "note": e.note,
    })
}

/// A service's balance and every movement, oldest first.
pub fn credit_history(balance: i64, entries: &[LedgerEntry]) -> Value {
    json!({
        "balance": baht(balance),
        "entries": entries.iter().map(ledger_entry).collect::<Vec<_>>(),
    })
}

pub fn branch(b: &Branch, api_key: Option<&str>) -> Value {
    let mut v = json!({
        "id": b.id,
        "serviceId": b.service_id,
        "name": b.name,
        "isMain": b.is_main,
        "active": b.active,
        "allowIps": b.allow_ips.to_strings(),
        "webhookUrl": b.webhook_url,
        "hasWebhookSecret": b.webhook_secret.is_some(),
        "billerId": b.biller_id,
        "limitQuota": b.quota.limit,
        "sandbox": b.sandbox,
    });
    if let Some(k) = api_key {
        v["apiKey"] = json!(k);
    }
    v
}

pub fn user(u: &User) -> Value {
    json!({ "id": u.id, "name": u.name, "banned": u.banned })
}

pub fn plan(p: &Plan) -> Value {
    json!({ "name": p.name, "rps": p.rps, "burst": p.burst })
}

/// Only at creation: the key and secret are not retrievable later.
pub fn new_partner(p: &Partner, api_key: &str) -> Value {
    json!({
        "id": p.id,
        "name": p.name,
        "apiKey": api_key,
        "secret": p.secret,
        "permissions": p.permissions.iter().map(|p| p.as_str()).collect::<Vec<_>>(),
        "services": p.service_ids,
    })
}

pub fn audit(entries: &[AuditEntry]) -> Value {
    Value::Array(
        entries
            .iter()
            .map(|e| {
                json!({
                    "at": format_bangkok(e.at),
                    "actor": e.actor,
                    "action": e.action,
                    "serviceId": e.service_id,
                    "branchId": e.branch_id,
                    "detail": serde_json::from_str::<Value>(&e.detail).unwrap_or_default(),
                })
            })
            .collect(),
    )
}

/// A polled job (spec 2.4). `error.webhook: "failed"` (with the delivery details) is added to
/// a failed job whose callbacks were all refused; `webhook` shows delivery for every job.
pub fn job(j: &domain::job::Job) -> Value {
    use domain::job::{JobStatus, WebhookState};
    let w = &j.webhook;
    let delivery = json!({
        "state": w.state.as_str(),
        "attempts": w.attempts,
        "lastStatus": w.last_status,
        "lastError": w.last_error,
        "firstAttemptAt": w.first_at.map(format_bangkok),
        "lastAttemptAt": w.last_at.map(format_bangkok),
    });
    let error = match (&j.error_code, &j.error_message) {
        (Some(code), Some(message)) => {
            let mut e = json!({ "code": code, "message": message });
            if j.status == JobStatus::Failed && w.state == WebhookState::Failed {
                e["webhook"] = json!("failed");
                e["delivery"] = delivery.clone();
            }
            e
        }
        _ => Value::Null,
    };
    json!({
        "jobId": j.id,
        "batchId": j.batch_id,
        "status": j.status.as_str(),
        "data": if j.status == JobStatus::Failed { Value::Null } else { j.result.clone().unwrap_or(Value::Null) },
        "error": error,
        "attempts": j.attempts,
        "callbackUrl": j.callback_url,
        "webhook": if j.callback_url.is_some() { delivery } else { Value::Null },
        "nextAttemptAt": (!j.status.is_terminal()).then(|| format_bangkok(j.due_at)),
        "createdAt": format_bangkok(j.created_at),
        "updatedAt": format_bangkok(j.updated_at),
        "finishedAt": j.finished_at.map(format_bangkok),
        "expiresAt": format_bangkok(j.expires_at),
    })
}
