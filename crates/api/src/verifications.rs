//! `/admin/verifications`: the attempts log, searched (a page of JSON) or exported (CSV,
//! streamed page by page, never held whole).

use crate::authed::Admin;
use crate::error::ApiError;
use crate::responses::AdminErrors;
use crate::routing::Routes;
use crate::views;
use crate::wire::admin as w;
use crate::wire::Plain;
use axum::body::Body;
use axum::extract::{Query, State};
use axum::response::{IntoResponse, Response};
use axum::Json;
use domain::attempt::{
    parse_bound, AttemptQuery, Cursor, Outcome, TextQuery, MAX_EXPORT, MAX_PAGE,
};
use domain::{Error, FieldError};
use services::Services;
use utoipa_axum::routes;

pub(crate) fn routes() -> Routes {
    Routes::new().api(routes!(search)).api(routes!(export))
}

/// Records per page when `limit` is not given.
const DEFAULT_PAGE: u32 = 50;
/// Records read per query while exporting.
const EXPORT_PAGE: u32 = 1000;

/// The query parameters of the search (the export takes them all but `cursor`).
const FILTERS: [&str; 8] = [
    "q", "service", "branch", "outcome", "from", "to", "limit", "cursor",
];

type Pairs = Result<Query<Vec<(String, String)>>, axum::extract::rejection::QueryRejection>;

/// The filters of both endpoints, checked field by field (`max`: the largest `limit`).
fn query(
    pairs: Vec<(String, String)>,
    default_limit: u32,
    max: u32,
) -> Result<AttemptQuery, Error> {
    let mut q = AttemptQuery {
        limit: default_limit,
        ..AttemptQuery::default()
    };
    let mut errors = Vec::new();
    let mut fail = |f: &str, why: &str| errors.push(FieldError::new(f, why));
    let mut seen: Vec<&str> = Vec::new();
    for (name, value) in &pairs {
        if seen.contains(&name.as_str()) {
            fail(name, "is given more than once");
            continue;
        }
        seen.push(name);
        let v = value.trim();
        // An empty value is a filter left out, as a search form sends it.
        if v.is_empty() && FILTERS.contains(&name.as_str()) {
            continue;
        }
        match name.as_str() {
            "q" if v.chars().count() > 64 => fail("q", "is longer than 64 characters"),
            "q" => q.text = TextQuery::parse(v),
            "service" if v.len() <= 64 => q.service_id = Some(v.into()),
            "branch" if v.len() <= 64 => q.branch_id = Some(v.into()),
            "service" | "branch" => fail(name, "must be an id"),
            "outcome" => match Outcome::parse(v) {
                Some(o) => q.outcome = Some(o),
                None => fail(
                    "outcome",
                    "must be one of verified, duplicate, not_found, pending, no_qr, invalid_qr, refused, unavailable, error",
                ),
            },
            "from" | "to" => match parse_bound(v, name == "to") {
                Some(t) if name == "from" => q.from = Some(t),
                Some(t) => q.to = Some(t),
                None => fail(
                    name,
                    "must be a date (2026-11-27, a day in Asia/Bangkok) or an RFC 3339 time",
                ),
            },
            "limit" => match v.parse::<u32>() {
                Ok(n) if (1..=max).contains(&n) => q.limit = n,
                _ => fail("limit", &format!("must be a whole number from 1 to {max}")),
            },
            "cursor" => match Cursor::decode(v) {
                Some(c) => q.after = Some(c),
                None => fail("cursor", "is not a cursor this search returned"),
            },
            other => fail(other, "is not a filter of this search"),
        }
    }
    if errors.is_empty() {
        Ok(q)
    } else {
        Err(Error::Validation(errors))
    }
}

#[utoipa::path(get, path = "/verifications", tag = "admin",
    summary = "Search the attempts log: every verification request, newest first",
    params(
        ("q" = Option<String>, Query, description = "A transRef or a part of one (3+ characters), or an amount such as `1250.50`", max_length = 64),
        ("service" = Option<String>, Query, description = "A service id", max_length = 64),
        ("branch" = Option<String>, Query, description = "A branch id", max_length = 64),
        ("outcome" = Option<String>, Query, description = "`verified`, `duplicate`, `not_found`, `pending`, `no_qr`, `invalid_qr`, `refused`, `unavailable` or `error`"),
        ("from" = Option<String>, Query, description = "From this time (RFC 3339), or from the start of this day in Asia/Bangkok (`2026-11-27`)"),
        ("to" = Option<String>, Query, description = "Before this time (RFC 3339), or up to the end of this day in Asia/Bangkok"),
        ("limit" = Option<u32>, Query, description = "Records per page (default 50)", minimum = 1, maximum = 500),
        ("cursor" = Option<String>, Query, description = "The `next` of the previous page")),
    responses(
        (status = 200, description = "A page of records", body = Plain<w::VerificationPage>,
            example = json!({"success": true, "data": {"items": [{
                "at": "2026-11-27T14:05:12.345+07:00", "serviceId": "svc_1", "branchId": "br_1",
                "channel": "v2", "kind": "bank", "input": "image", "sendingBank": "004",
                "transRef": "016331140712ATF07959", "amount": 1250.5, "outcome": "verified",
                "errorCode": null, "mismatches": [], "source": "kbank", "latencyMs": 412,
                "requestId": "6c1f0e9e-7c2b-4d5e-9a61-2f1d0c3b4a59", "jobId": null}],
                "next": "1795763112345.42"}})),
        AdminErrors))]
async fn search(
    State(svc): State<Services>,
    _: Admin,
    pairs: Pairs,
) -> Result<Json<Plain<w::VerificationPage>>, ApiError> {
    let pairs = match pairs {
        Ok(Query(p)) => p,
        Err(_) => return Err(Error::invalid("query", "is not a valid query string").into()),
    };
    Ok(Plain::json(page(&svc, pairs).await?))
}

/// A page of the search for these query pairs (the admin API's and the CLI's).
pub async fn page(
    svc: &Services,
    pairs: Vec<(String, String)>,
) -> Result<w::VerificationPage, Error> {
    let q = query(pairs, DEFAULT_PAGE, MAX_PAGE)?;
    let limit = q.limit;
    let rows = svc.attempts().search_attempts(q).await?;
    // A full page may have more after it.
    let next = (rows.len() as u32 == limit)
        .then(|| rows.last())
        .flatten()
        .map(|r| cursor_of(r).encode());
    Ok(w::VerificationPage {
        items: rows.iter().map(views::verification).collect(),
        next,
    })
}

/// The CSV export for these query pairs (the admin API's and the CLI's).
pub fn csv(
    svc: Services,
    pairs: Vec<(String, String)>,
) -> Result<impl futures_util::Stream<Item = Result<String, std::io::Error>> + Send, Error> {
    let q = query(pairs, MAX_EXPORT, MAX_EXPORT)?;
    if q.after.is_some() {
        return Err(Error::invalid("cursor", "is not a filter of the export"));
    }
    Ok(csv_stream(svc, q))
}

fn cursor_of(r: &domain::attempt::AttemptRow) -> Cursor {
    Cursor {
        at_ms: domain::clock::to_millis(r.attempt.at),
        id: r.id,
    }
}

#[utoipa::path(get, path = "/verifications.csv", tag = "admin",
    summary = "The attempts log as CSV (UTF-8 with a byte-order mark), at most 100,000 rows",
    description = "The same filters as the search (`limit` up to 100,000, the default). Streamed; a last line starting with `#` says when the export was cut at the limit. Cells that start with `=`, `+`, `-` or `@` are prefixed with `'`.",
    params(
        ("q" = Option<String>, Query, description = "As in the search", max_length = 64),
        ("service" = Option<String>, Query, description = "A service id", max_length = 64),
        ("branch" = Option<String>, Query, description = "A branch id", max_length = 64),
        ("outcome" = Option<String>, Query, description = "As in the search"),
        ("from" = Option<String>, Query, description = "As in the search"),
        ("to" = Option<String>, Query, description = "As in the search"),
        ("limit" = Option<u32>, Query, description = "Most rows (default 100,000)", minimum = 1, maximum = 100000)),
    responses(
        (status = 200, description = "The records, newest first", content_type = "text/csv", body = String),
        AdminErrors))]
async fn export(State(svc): State<Services>, _: Admin, pairs: Pairs) -> Result<Response, ApiError> {
    let pairs = match pairs {
        Ok(Query(p)) => p,
        Err(_) => return Err(Error::invalid("query", "is not a valid query string").into()),
    };
    let stream = csv(svc, pairs)?;
    Ok((
        [
            (axum::http::header::CONTENT_TYPE, "text/csv; charset=utf-8"),
            (
                axum::http::header::CONTENT_DISPOSITION,
                "attachment; filename=\"verifications.csv\"",
            ),
        ],
        Body::from_stream(stream),
    )
        .into_response())
}

/// The export, page by page: the header, the rows (at most `q.limit`), and the cut line when
/// there were more.
fn csv_stream(
    svc: Services,
    q: AttemptQuery,
) -> impl futures_util::Stream<Item = Result<String, std::io::Error>> + Send {
    struct State {
        svc: Services,
        q: AttemptQuery,
        left: u32,
        header: bool,
        done: bool,
    }
    let left = q.limit;
    let start = State {
        svc,
        q,
        left,
        header: true,
        done: false,
    };
    futures_util::stream::unfold(start, |mut s| async move {
        if s.header {
            s.header = false;
            return Some((Ok(views::CSV_HEADER.to_string()), s));
        }
        if s.done {
            return None;
        }
        // One row past the limit tells whether the export was cut.
        let page = s.left.clamp(1, EXPORT_PAGE);
        let mut q = s.q.clone();
        q.limit = if s.left == 0 { 1 } else { page };
        match s.svc.attempts().search_attempts(q).await {
            Err(e) => {
                tracing::error!(error = %e, "attempts export failed");
                s.done = true;
                Some((Err(std::io::Error::other("export failed")), s))
            }
            Ok(rows) if s.left == 0 => {
                s.done = true;
                let cut = (!rows.is_empty()).then(|| views::csv_cut_line(s.q.limit));
                cut.map(|line| (Ok(line), s))
            }
            Ok(rows) => {
                s.left -= rows.len() as u32;
                if (rows.len() as u32) < page {
                    s.done = true;
                }
                s.q.after = rows.last().map(cursor_of);
                let text: String = rows.iter().map(views::verification_csv).collect();
                Some((Ok(text), s))
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::query;

    fn pairs(p: &[(&str, &str)]) -> Vec<(String, String)> {
        p.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn an_empty_filter_is_left_out() {
        let empty: Vec<(&str, &str)> = super::FILTERS.iter().map(|n| (*n, " ")).collect();
        let q = query(pairs(&empty), 50, 500).expect("empty filters are no filters");
        assert_eq!(
            q,
            domain::attempt::AttemptQuery {
                limit: 50,
                ..Default::default()
            }
        );
        // An unknown name is refused even when empty; a known one with a wrong value too.
        let e = query(pairs(&[("nope", ""), ("outcome", "maybe")]), 50, 500).unwrap_err();
        let msg = e.public_message();
        assert!(
            msg.starts_with("nope: is not a filter of this search; outcome: must be one of"),
            "{msg}"
        );
    }
}
