//! Row decoding shared by several files: column lists (macros, so every statement stays one
//! `&'static str` built by `concat!`), the row → model macros (one per `sqlx::Row` type, hence
//! macros rather than functions generic over two drivers), and patch helpers.

use crate::{Result, StoreError};
use domain::ip::AllowList;

macro_rules! service_cols {
    () => {
        "s.id AS s_id, s.name AS s_name, s.limit_quota AS s_limit, \
     s.used_quota AS s_used, s.total_used_quota AS s_total, s.created_at AS s_created, \
     s.state AS s_state, s.expires_at AS s_expires, s.owner_id AS s_owner, \
     COALESCE(u.banned, false) AS s_owner_banned, s.owner_verified AS s_owner_verified, \
     s.billing_anchor AS s_anchor, \
     s.cycle_start AS s_cycle, s.plan AS s_plan, s.rate_limit_rps AS s_rate, \
     COALESCE(pl.rps, 10) AS s_plan_rps, COALESCE(pl.burst, 100) AS s_plan_burst, \
     s.package_id AS s_package, s.subscribed_at AS s_subscribed, \
     s.auto_renew_expiry AS s_renew_expiry, s.auto_renew_quota AS s_renew_quota, \
     s.renewal_seq AS s_renewal_seq, s.credit_satang AS s_credit"
    };
}

/// What `service_cols!` reads besides `services s`: the owner (`u`) and the plan (`pl`).
macro_rules! service_joins {
    () => {
        " LEFT JOIN users u ON u.id = s.owner_id LEFT JOIN plans pl ON pl.name = s.plan"
    };
}

macro_rules! branch_cols {
    () => {
        "b.id AS b_id, b.service_id AS b_service, b.name AS b_name, \
     b.is_main AS b_main, b.active AS b_active, b.allow_ips AS b_ips, b.webhook_url AS b_url, \
     b.webhook_secret AS b_secret, b.biller_id AS b_biller, b.limit_quota AS b_limit, b.used_quota AS b_used, \
     b.total_used_quota AS b_total, b.created_at AS b_created, b.cycle_start AS b_cycle, \
     b.sandbox AS b_sandbox"
    };
}

macro_rules! transfer_cols {
    () => {
        "sending_bank, trans_ref, payload, occurred_at, country_code, \
     amount_satang, fee_satang, ref1, ref2, ref3, sender_name_th, sender_name_en, \
     sender_acc_type, sender_account, receiving_bank, receiver_name_th, receiver_name_en, \
     receiver_acc_type, receiver_account, merchant_id"
    };
}

macro_rules! service_from_row {
    ($r:expr) => {{
        let r = &$r;
        domain::model::Service {
            id: r.try_get::<String, _>("s_id")?.into(),
            name: r.try_get("s_name")?,
            quota: $crate::rows::quota_from_row!(r, "s"),
            created_at: domain::clock::from_millis(r.try_get("s_created")?),
            state: {
                let st: String = r.try_get("s_state")?;
                domain::model::ServiceState::parse(&st)
                    .ok_or_else(|| $crate::StoreError::Corrupt(format!("service state {st}")))?
            },
            expires_at: r
                .try_get::<Option<i64>, _>("s_expires")?
                .map(domain::clock::from_millis),
            owner_id: r
                .try_get::<Option<String>, _>("s_owner")?
                .map(domain::UserId::from),
            owner_banned: r.try_get("s_owner_banned")?,
            owner_verified: r.try_get("s_owner_verified")?,
            billing_anchor: domain::clock::from_millis(r.try_get("s_anchor")?),
            cycle_start: domain::clock::from_millis(r.try_get("s_cycle")?),
            plan: domain::model::Plan {
                name: r.try_get("s_plan")?,
                rps: u32::try_from(r.try_get::<i64, _>("s_plan_rps")?).unwrap_or(1),
                burst: u32::try_from(r.try_get::<i64, _>("s_plan_burst")?).unwrap_or(1),
            },
            rate_limit_rps: r
                .try_get::<Option<i64>, _>("s_rate")?
                .and_then(|v| u32::try_from(v).ok()),
            subscription: domain::billing::Subscription {
                package_id: r
                    .try_get::<Option<String>, _>("s_package")?
                    .map(domain::PackageId::from),
                started_at: r
                    .try_get::<Option<i64>, _>("s_subscribed")?
                    .map(domain::clock::from_millis),
                auto_renew: domain::billing::AutoRenew {
                    on_expiry: r.try_get("s_renew_expiry")?,
                    on_quota: r.try_get("s_renew_quota")?,
                },
                renewal_seq: r.try_get("s_renewal_seq")?,
                credit: r.try_get("s_credit")?,
            },
        }
    }};
}

macro_rules! branch_from_row {
    ($r:expr) => {{
        let r = &$r;
        let ips: String = r.try_get("b_ips")?;
        domain::model::Branch {
            id: r.try_get::<String, _>("b_id")?.into(),
            service_id: r.try_get::<String, _>("b_service")?.into(),
            name: r.try_get("b_name")?,
            is_main: r.try_get("b_main")?,
            active: r.try_get("b_active")?,
            allow_ips: $crate::rows::decode_ips(&ips)?,
            webhook_url: r.try_get("b_url")?,
            webhook_secret: r.try_get("b_secret")?,
            biller_id: r.try_get("b_biller")?,
            sandbox: r.try_get("b_sandbox")?,
            quota: $crate::rows::quota_from_row!(r, "b"),
            created_at: domain::clock::from_millis(r.try_get("b_created")?),
            cycle_start: domain::clock::from_millis(r.try_get("b_cycle")?),
        }
    }};
}

macro_rules! transfer_from_row {
    ($r:expr) => {{
        let r = &$r;
        domain::model::Transfer {
            trans_ref: r.try_get("trans_ref")?,
            payload: r.try_get("payload")?,
            occurred_at: domain::clock::from_millis(r.try_get("occurred_at")?),
            country_code: r.try_get("country_code")?,
            amount: domain::Satang(r.try_get("amount_satang")?),
            fee: domain::Satang(r.try_get("fee_satang")?),
            ref1: r.try_get("ref1")?,
            ref2: r.try_get("ref2")?,
            ref3: r.try_get("ref3")?,
            sender: $crate::rows::party_from_row!(r, "sending_bank", "sender"),
            receiver: $crate::rows::party_from_row!(r, "receiving_bank", "receiver"),
            receiver_merchant_id: r.try_get("merchant_id")?,
            bank_data: None,
        }
    }};
}

/// A quota from the columns `{$p}_limit`, `_used` and `_total`.
macro_rules! quota_from_row {
    ($r:expr, $p:literal) => {
        domain::quota::Quota {
            limit: $r.try_get(concat!($p, "_limit"))?,
            used: $r.try_get(concat!($p, "_used"))?,
            total_used: $r.try_get(concat!($p, "_total"))?,
        }
    };
}

/// One side of a transfer: its bank in column `$bank`, the rest in `{$side}_name_th`,
/// `_name_en`, `_acc_type` and `_account`.
macro_rules! party_from_row {
    ($r:expr, $bank:literal, $side:literal) => {
        domain::model::Party {
            bank_code: $r.try_get($bank)?,
            name_th: $r.try_get(concat!($side, "_name_th"))?,
            name_en: $r.try_get(concat!($side, "_name_en"))?,
            account_type: $r.try_get(concat!($side, "_acc_type"))?,
            account: $r.try_get(concat!($side, "_account"))?,
        }
    };
}

pub(crate) fn encode_ips(l: &AllowList) -> String {
    l.to_strings().join(",")
}

pub(crate) fn decode_ips(s: &str) -> Result<AllowList> {
    let parts: Vec<&str> = s.split(',').filter(|p| !p.is_empty()).collect();
    AllowList::parse(&parts).map_err(|e| StoreError::Corrupt(e.into()))
}

/// `Option<Option<T>>` patch field → (whether to set it, the new value).
pub(crate) fn split<T: Clone>(field: &Option<Option<T>>) -> (bool, Option<T>) {
    match field {
        Some(v) => (true, v.clone()),
        None => (false, None),
    }
}

pub(crate) use {
    branch_cols, branch_from_row, party_from_row, quota_from_row, service_cols, service_from_row,
    service_joins, transfer_cols, transfer_from_row,
};
