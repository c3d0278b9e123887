//! The admin records as their wire views (`wire::admin`), shared by the admin API and the CLI
//! so both print the same shapes. Secrets appear only where they are issued (keys on
//! creation/rotation).

use crate::wire::admin::{
    AuditEntry, AutoRenewView, BranchView, CreditHistory, LedgerEntryView, PackageView,
    PartnerView, PlanView, ServiceView, UserView,
};
use domain::billing::{LedgerEntry, Package};
use domain::clock::format_bangkok;
use domain::model::{Branch, Partner, Plan, Service, User};
use serde_json::Value;

pub fn service(s: &Service) -> ServiceView {
    ServiceView {
        id: s.id.to_string(),
        name: s.name.clone(),
        state: s.state.as_str(),
        limit_quota: s.quota.limit,
        expires_at: s.expires_at.map(format_bangkok),
        owner_id: s.owner_id.as_ref().map(ToString::to_string),
        billing_anchor: format_bangkok(s.billing_anchor),
        plan: s.plan.name.clone(),
        rate_limit: s.rate_limit().rps,
        owner_verified: s.owner_verified,
        package: s.subscription.package_id.as_ref().map(ToString::to_string),
        subscribed_at: s.subscription.started_at.map(format_bangkok),
        auto_renew: AutoRenewView {
            on_expiry: s.subscription.auto_renew.on_expiry,
            on_quota: s.subscription.auto_renew.on_quota,
        },
        credit: baht(s.subscription.credit),
    }
}

/// Satang as a JSON number of baht.
fn baht(satang: i64) -> f64 {
    domain::Satang(satang).as_baht()
}

pub fn package(p: &Package) -> PackageView {
    PackageView {
        id: p.id.to_string(),
        name: p.name.clone(),
        quota: p.quota,
        duration_days: p.duration_days,
        price: p.price.as_baht(),
    }
}

pub fn ledger_entry(e: &LedgerEntry) -> LedgerEntryView {
    LedgerEntryView {
        id: e.id.clone(),
        at: format_bangkok(e.at),
        kind: e.kind.as_str(),
        amount: baht(e.amount),
        balance_after: baht(e.balance_after),
        actor: e.actor.clone(),
        note: e.note.clone(),
    }
}

pub fn credit_history(balance: i64, entries: &[LedgerEntry]) -> CreditHistory {
    CreditHistory {
        balance: baht(balance),
        entries: entries.iter().map(ledger_entry).collect(),
    }
}

pub fn branch(b: &Branch, api_key: Option<&str>) -> BranchView {
    BranchView {
        id: b.id.to_string(),
        service_id: b.service_id.to_string(),
        name: b.name.clone(),
        is_main: b.is_main,
        active: b.active,
        allow_ips: b.allow_ips.to_strings(),
        webhook_url: b.webhook_url.clone(),
        has_webhook_secret: b.webhook_secret.is_some(),
        biller_id: b.biller_id.clone(),
        limit_quota: b.quota.limit,
        sandbox: b.sandbox,
        api_key: api_key.map(str::to_string),
        line: None,
    }
}

/// A branch's LINE settings, secrets as set / not set.
pub fn line(l: &domain::line::LineSettings) -> crate::wire::admin::LineView {
    crate::wire::admin::LineView {
        has_channel_secret: l.channel_secret.is_some(),
        has_channel_token: l.channel_token.is_some(),
        notify_to: l.notify_to.clone(),
        language: l.language.as_str(),
        group_mode: l.group_mode.as_str(),
        push: l.push,
        push_daily_limit: l.push_daily_limit,
    }
}

pub fn user(u: &User) -> UserView {
    UserView {
        id: u.id.to_string(),
        name: u.name.clone(),
        banned: u.banned,
    }
}

pub fn plan(p: &Plan) -> PlanView {
    PlanView {
        name: p.name.clone(),
        rps: p.rps,
        burst: p.burst,
    }
}

/// Only at creation: the key and secret are not retrievable later.
pub fn new_partner(p: &Partner, api_key: &str) -> PartnerView {
    PartnerView {
        id: p.id.to_string(),
        name: p.name.clone(),
        api_key: api_key.to_string(),
        secret: p.secret.clone(),
        permissions: p.permissions.iter().map(|p| p.as_str()).collect(),
        services: p.service_ids.iter().map(ToString::to_string).collect(),
    }
}

pub fn audit(entries: &[domain::model::AuditEntry]) -> Vec<AuditEntry> {
    entries
        .iter()
        .map(|e| AuditEntry {
            at: format_bangkok(e.at),
            actor: e.actor.clone(),
            action: e.action.clone(),
            service_id: e.service_id.as_ref().map(ToString::to_string),
            branch_id: e.branch_id.as_ref().map(ToString::to_string),
            detail: serde_json::from_str::<Value>(&e.detail).unwrap_or_default(),
        })
        .collect()
}

/// An attempts-log record as the admin API and the CLI show it.
pub fn verification(r: &domain::attempt::AttemptRow) -> crate::wire::admin::VerificationView {
    let a = &r.attempt;
    crate::wire::admin::VerificationView {
        at: format_bangkok(a.at),
        service_id: a.service_id.to_string(),
        branch_id: a.branch_id.to_string(),
        channel: a.channel.as_str(),
        kind: a.kind.as_str(),
        input: a.input.map(|i| i.as_str()),
        sending_bank: a.sending_bank.clone(),
        trans_ref: a.trans_ref.clone(),
        amount: a.amount.map(domain::Satang::as_baht),
        outcome: a.outcome.as_str(),
        error_code: a.error_code.clone(),
        mismatches: a.mismatches.clone(),
        source: a.source.clone(),
        latency_ms: a.latency_ms,
        request_id: a.request_id.clone(),
        job_id: a.job_id.as_ref().map(ToString::to_string),
    }
}

/// The CSV export's first line: a byte-order mark (spreadsheet programs then read UTF-8) and
/// the column names.
pub const CSV_HEADER: &str = "\u{feff}at,serviceId,branchId,channel,kind,input,sendingBank,\
transRef,amount,outcome,errorCode,mismatches,source,latencyMs,requestId,jobId\r\n";

/// One record as a CSV line (RFC 4180, CRLF); no cell can start a spreadsheet formula.
pub fn verification_csv(r: &domain::attempt::AttemptRow) -> String {
    use domain::attempt::csv_cell;
    let v = verification(r);
    let opt = |s: Option<&str>| s.map(csv_cell).unwrap_or_default();
    let cells = [
        csv_cell(&v.at),
        csv_cell(&v.service_id),
        csv_cell(&v.branch_id),
        v.channel.to_string(),
        v.kind.to_string(),
        v.input.unwrap_or_default().to_string(),
        opt(v.sending_bank.as_deref()),
        opt(v.trans_ref.as_deref()),
        r.attempt.amount.map(|a| a.to_string()).unwrap_or_default(),
        v.outcome.to_string(),
        opt(v.error_code.as_deref()),
        csv_cell(&v.mismatches.join(" ")),
        opt(v.source.as_deref()),
        v.latency_ms.to_string(),
        opt(v.request_id.as_deref()),
        opt(v.job_id.as_deref()),
    ];
    let mut line = cells.join(",");
    line.push_str("\r\n");
    line
}

/// The CSV export's last line when it stopped at `limit` rows.
pub fn csv_cut_line(limit: u32) -> String {
    format!("# cut at {limit} rows: narrow the search (from, to, outcome, branch) for the rest\r\n")
}

/// A queued redelivery job (kind `redeliver`).
pub fn redelivery(j: &domain::job::Job) -> crate::wire::admin::RedeliveryView {
    crate::wire::admin::RedeliveryView {
        job_id: j
            .redelivery()
            .map(|r| r.job_id.to_string())
            .unwrap_or_default(),
        redelivery_id: j.id.to_string(),
        status: j.status.as_str(),
        callback_url: j.callback_url.clone(),
    }
}
