//! The attempts-log search at scale (scripts/bench-search): fills a fresh database with
//! `--rows` records (services, branches, six months, realistic outcomes; seeded), then times
//! each kind of search the admin API offers, and a full pass over the table as the reference
//! measured in the same run. Prints one Markdown row per search: median and p95 in ms, and the
//! ratio to the full pass.

use clap::Parser;
use domain::attempt::{
    Attempt, AttemptQuery, Channel, Cursor, InputKind, Outcome, SlipKind, TextQuery,
};
use std::time::Instant;

#[derive(Parser)]
struct Args {
    /// `sqlite://…` or `postgres://…` (a fresh database).
    #[arg(long)]
    database_url: String,
    #[arg(long, default_value_t = 1_000_000)]
    rows: u64,
    /// Times each search runs.
    #[arg(long, default_value_t = 30)]
    runs: usize,
    /// Seed of the generated records (printed; the same seed gives the same records).
    #[arg(long)]
    seed: Option<u64>,
}

/// xorshift64*: plenty for spreading test data, and no dependency.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const ALNUM: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ";

fn trans_ref(r: &mut Rng) -> String {
    (0..20)
        .map(|_| ALNUM[r.below(ALNUM.len() as u64) as usize] as char)
        .collect()
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let a = Args::parse();
    let seed = a.seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(1)
            | 1
    });
    eprintln!("[bench-search] seed {seed}, {} rows", a.rows);
    let store = store::connect(&a.database_url).await.expect("database");
    let mut rng = Rng(seed);
    let end = time::OffsetDateTime::now_utc();
    let span_ms: u64 = 180 * 24 * 3600 * 1000;
    let outcomes = [
        (Outcome::Verified, 70),
        (Outcome::Duplicate, 8),
        (Outcome::NotFound, 8),
        (Outcome::Pending, 1),
        (Outcome::NoQr, 5),
        (Outcome::InvalidQr, 3),
        (Outcome::Refused, 3),
        (Outcome::Unavailable, 1),
        (Outcome::Error, 1),
    ];
    let mut kept_ref = String::new();
    let fill = Instant::now();
    let mut done = 0u64;
    while done < a.rows {
        let n = (a.rows - done).min(2000);
        let batch: Vec<Attempt> = (0..n)
            .map(|i| {
                let mut pick = rng.below(100);
                let outcome = outcomes
                    .iter()
                    .find(|(_, w)| {
                        if pick < *w {
                            true
                        } else {
                            pick -= w;
                            false
                        }
                    })
                    .map(|(o, _)| *o)
                    .unwrap_or(Outcome::Verified);
                let service = rng.below(50);
                let tr = trans_ref(&mut rng);
                // The first stored reference from the middle on (a `no_qr` record keeps none).
                if done + i >= a.rows / 2 && kept_ref.is_empty() && outcome != Outcome::NoQr {
                    kept_ref = tr.clone();
                }
                Attempt {
                    at: end - time::Duration::milliseconds(rng.below(span_ms) as i64),
                    service_id: format!("svc-{service}").into(),
                    branch_id: format!("br-{service}-{}", rng.below(4)).into(),
                    channel: Channel::V2,
                    kind: SlipKind::Bank,
                    input: Some(InputKind::Image),
                    sending_bank: Some("004".into()),
                    trans_ref: (outcome != Outcome::NoQr).then_some(tr),
                    // One record in twenty is 100.00 baht: a shop's most common amount.
                    amount: Some(domain::Satang(if rng.below(20) == 0 {
                        10_000
                    } else {
                        rng.below(500_000) as i64 + 100
                    })),
                    outcome,
                    error_code: None,
                    mismatches: vec![],
                    source: Some("kbank".into()),
                    latency_ms: rng.below(2000) as u32,
                    request_id: None,
                    job_id: None,
                }
            })
            .collect();
        store.insert_attempts(&batch).await.expect("insert");
        done += n;
        if done.is_multiple_of(100_000) {
            eprintln!(
                "[bench-search] {done} rows ({:.0} s)",
                fill.elapsed().as_secs_f64()
            );
        }
    }
    eprintln!(
        "[bench-search] filled in {:.1} s",
        fill.elapsed().as_secs_f64()
    );

    let day = end - time::Duration::days(30);
    let page = |q: AttemptQuery| AttemptQuery { limit: 50, ..q };
    let deep = {
        // A cursor some pages in.
        let rows = store
            .search_attempts(&AttemptQuery {
                limit: 1000,
                ..AttemptQuery::default()
            })
            .await
            .expect("search");
        rows.last().map(|r| Cursor {
            at_ms: domain::clock::to_millis(r.attempt.at),
            id: r.id,
        })
    };
    let searches: Vec<(&str, AttemptQuery)> = vec![
        ("newest first, no filter", page(AttemptQuery::default())),
        (
            "q = 8 characters of a reference",
            page(AttemptQuery {
                text: TextQuery::parse(&kept_ref[6..14]),
                ..AttemptQuery::default()
            }),
        ),
        (
            "q = a whole reference",
            page(AttemptQuery {
                text: TextQuery::parse(&kept_ref),
                ..AttemptQuery::default()
            }),
        ),
        (
            "q = an amount (1250.50)",
            page(AttemptQuery {
                text: TextQuery::parse("1250.50"),
                ..AttemptQuery::default()
            }),
        ),
        (
            "q = a common amount (100.00, 5 %)",
            page(AttemptQuery {
                text: TextQuery::parse("100.00"),
                ..AttemptQuery::default()
            }),
        ),
        (
            "outcome = pending (1 %)",
            page(AttemptQuery {
                outcome: Some(Outcome::Pending),
                ..AttemptQuery::default()
            }),
        ),
        (
            "branch + one day",
            page(AttemptQuery {
                branch_id: Some("br-7-2".into()),
                from: Some(day),
                to: Some(day + time::Duration::days(1)),
                ..AttemptQuery::default()
            }),
        ),
        (
            "service + outcome not_found",
            page(AttemptQuery {
                service_id: Some("svc-3".into()),
                outcome: Some(Outcome::NotFound),
                ..AttemptQuery::default()
            }),
        ),
        (
            "page 21 (cursor)",
            page(AttemptQuery {
                after: deep,
                ..AttemptQuery::default()
            }),
        ),
    ];
    let time_it = |times: &mut Vec<f64>| {
        times.sort_by(|a, b| a.total_cmp(b));
        (
            times[times.len() / 2],
            times[(times.len() * 95 / 100).min(times.len() - 1)],
        )
    };
    // The reference: one pass over every record (what a search without an index costs).
    let mut full = Vec::new();
    for _ in 0..3 {
        let t = Instant::now();
        let n = store.count_attempts().await.expect("count");
        full.push(t.elapsed().as_secs_f64() * 1000.0);
        assert_eq!(n as u64, a.rows);
    }
    let (full_med, _) = time_it(&mut full);
    println!("| search | rows found | median ms | p95 ms | vs a full pass | < 100 ms |");
    println!("|---|---:|---:|---:|---:|---|");
    for (name, q) in searches {
        let mut times = Vec::new();
        let mut found = 0;
        for _ in 0..a.runs {
            let t = Instant::now();
            found = store.search_attempts(&q).await.expect("search").len();
            times.push(t.elapsed().as_secs_f64() * 1000.0);
        }
        let (med, p95) = time_it(&mut times);
        println!(
            "| {name} | {found} | {med:.1} | {p95:.1} | {:.3} | {} |",
            med / full_med,
            if p95 < 100.0 { "yes" } else { "NO" }
        );
    }
    println!(
        "| reference: a full pass (COUNT(*)) | {} | {full_med:.1} | | 1 | |",
        a.rows
    );
}
