//! The use-case handles of `Services` (`svc.auth()`, `svc.verify()`, …), declared in one
//! place. Each is a `Copy` struct borrowing only the fields of `Services` its operations read
//! (named as there), or the smaller handles it reuses; its operations live in the modules of
//! their concern (`auth.rs`, `verify.rs`, …), its constructor is `of` and `Services` gives it
//! out from the method of the same line below.

use crate::Services;

/// How a handle holds each part it may read: its type (`type name`), and how it borrows it
/// from `svc` (`svc . name`).
macro_rules! part {
    (type store) => { &'a store::SqlStore };
    ($s:ident . store) => { &*$s.store };
    (type clock) => { &'a dyn domain::Clock };
    ($s:ident . clock) => { &*$s.clock };
    (type metrics) => { &'a ::metrics::Metrics };
    ($s:ident . metrics) => { &$s.metrics };
    (type router) => { &'a connectors::Router };
    ($s:ident . router) => { &*$s.router };
    (type spaces) => { &'a crate::space::Spaces };
    ($s:ident . spaces) => { &$s.spaces };
    (type trusted_proxies) => { &'a domain::ip::AllowList };
    ($s:ident . trusted_proxies) => { &*$s.trusted_proxies };
    // `None` turns the admin API off.
    (type admin_token) => { Option<&'a str> };
    ($s:ident . admin_token) => { $s.admin_token.as_deref().map(String::as_str) };
    (type rate) => { &'a crate::rate::RateLimiter };
    ($s:ident . rate) => { &*$s.rate };
    (type egress) => { Option<&'a egress::Egress> };
    ($s:ident . egress) => { $s.egress.as_ref() };
    (type schedules) => { &'a domain::job::Schedules };
    ($s:ident . schedules) => { &*$s.schedules };
    (type image_limits) => { reader::Limits };
    ($s:ident . image_limits) => { $s.image_limits };
    (type decode_budget) => { &'a crate::budget::DecodeBudget };
    ($s:ident . decode_budget) => { &*$s.decode_budget };
    (type idem_lease) => { time::Duration };
    ($s:ident . idem_lease) => { $s.idem_lease };
    (type after_charge) => { Option<&'a crate::AfterCharge> };
    ($s:ident . after_charge) => { $s.after_charge.as_ref() };
    // Queueing jobs: the job table and this node's worker's wake-up.
    (type queue) => { crate::jobs::Queue<'a> };
    ($s:ident . queue) => { crate::jobs::Queue::of($s) };
    // The handles a handle reuses.
    (type auth) => { Auth<'a> };
    ($s:ident . auth) => { Auth::of($s) };
    (type slips) => { SlipReader<'a> };
    ($s:ident . slips) => { SlipReader::of($s) };
    (type admin) => { Admin<'a> };
    ($s:ident . admin) => { Admin::of($s) };
    (type accounts) => { Accounts<'a> };
    ($s:ident . accounts) => { Accounts::of($s) };
}

/// Declares each handle (its struct and `of`) and the method of `Services` giving it out.
macro_rules! handles {
    ($($(#[$doc:meta])* $method:ident -> $name:ident { $($part:ident),* })*) => {
        $(
            $(#[$doc])*
            #[derive(Clone, Copy)]
            pub struct $name<'a> {
                $(pub(crate) $part: part!(type $part),)*
            }

            impl<'a> $name<'a> {
                pub(crate) fn of(svc: &'a Services) -> Self {
                    $name { $($part: part!(svc . $part),)* }
                }
            }
        )*

        impl Services {
            $(
                $(#[$doc])*
                pub fn $method(&self) -> $name<'_> {
                    $name::of(self)
                }
            )*
        }
    };
}

handles! {
    /// Who is asking: API keys and the admin token checked (`auth.rs`), the caller's space
    /// chosen, the branch's rate limit (`rate.rs`).
    auth -> Auth { store, clock, spaces, trusted_proxies, admin_token, rate, metrics }

    /// Turning what a client sent (payload, image or URL) into the parsed slip (`input.rs`).
    slips -> SlipReader { egress, image_limits, decode_budget }

    /// Verifying parsed slips (`verify.rs`, `wallet.rs`), their `Idempotency-Key` claims
    /// (`idempotency.rs`), the caller's recorded verifications (`lookup.rs`).
    verify -> Verify { store, clock, idem_lease, after_charge }

    /// A branch's receiving bank accounts (`accounts.rs`), also the partner API's.
    accounts -> Accounts { store, clock }

    /// Async jobs (`jobs/`): submission and polling of verify jobs (an image is read at
    /// submission), queueing jobs of any kind, an operator's redelivery; for the worker, the
    /// owners of claimed jobs and the callback POST.
    jobs -> Jobs { store, clock, egress, schedules, queue, slips, metrics }

    /// The attempts log (`attempts.rs`): the one writer, the search, the retention purge.
    attempts -> Attempts { store, clock, metrics }

    /// Operators' actions on services, branches, users, plans and keys (`admin.rs`): the
    /// admin API and the CLI.
    admin -> Admin { store, clock }

    /// Packages, subscriptions and credit for operators (`subscriptions.rs`).
    billing -> Billing { store, clock }

    /// The partner API (`partner.rs`, `partner_branches.rs`): signed-request authentication,
    /// quota, branch and bank-account operations (through the operators' and the accounts'
    /// own), creating partners.
    partner -> PartnerApi { store, clock, metrics, admin, accounts }

    /// The LINE slip bot's webhook (`line/webhook.rs`); the branch's rate limit applies.
    line -> LineWebhook { store, clock, schedules, auth, queue, metrics }

    /// What this node reports about itself (`metrics.rs`): its connectors as the router sees
    /// them, the values a metrics scrape reads.
    status -> Status { store, router }
}
