//! Operator actions on packages, subscriptions and credit (CLI and admin API alike). Every
//! credit movement is a ledger row naming its actor; subscriptions and auto-renew changes go
//! to the audit log.

pub use crate::handles::Billing;
use domain::billing::{AutoRenew, CreditKind, LedgerEntry, Package, Payment};
use domain::model::Service;
use domain::{Error, Satang, Validation};
use store::{CreditMove, PeriodOutcome, PeriodStart};

/// Longest package: ten years.
const MAX_DURATION_DAYS: u32 = 3650;
/// Largest single credit movement: 100 million baht.
const MAX_CREDIT_MOVE: i64 = 10_000_000_000;

#[derive(Debug, Clone)]
pub struct NewPackage {
    pub name: String,
    pub quota: i64,
    pub duration_days: u32,
    pub price: Satang,
}

fn no_service() -> Error {
    Error::unknown("service", "no such service")
}

impl Billing<'_> {
    /// The service as it stands, `NOT_FOUND` when there is none.
    async fn existing_service(&self, service_id: &domain::ServiceId) -> Result<Service, Error> {
        self.store
            .get_service(service_id)
            .await?
            .ok_or_else(no_service)
    }

    /// Creates a package, or changes the terms of the one with this name.
    pub async fn set_package(&self, p: &NewPackage) -> Result<Package, Error> {
        let mut v = Validation::new();
        let name = p.name.trim();
        if name.is_empty() || name.chars().count() > 100 {
            v.fail("name", "must be 1 to 100 characters");
        }
        if p.quota < 1 {
            v.fail("quota", "must be at least 1");
        }
        if p.duration_days == 0 || p.duration_days > MAX_DURATION_DAYS {
            v.fail("durationDays", format!("must be 1 to {MAX_DURATION_DAYS}"));
        }
        if p.price.0 < 0 || p.price.0 > MAX_CREDIT_MOVE {
            v.fail("price", "must be 0 to 100,000,000 baht");
        }
        v.into_result()?;
        Ok(self
            .store
            .upsert_package(&Package {
                id: domain::PackageId::new(uuid::Uuid::new_v4().to_string()),
                name: name.to_string(),
                quota: p.quota,
                duration_days: p.duration_days,
                price: p.price,
                created_at: self.clock.now(),
            })
            .await?)
    }

    pub async fn packages(&self) -> Result<Vec<Package>, Error> {
        Ok(self.store.list_packages().await?)
    }

    pub async fn package(&self, key: &str) -> Result<Option<Package>, Error> {
        Ok(self.store.get_package(key).await?)
    }

    /// Starts a period of `package` (by id or name) now: its quota, a fresh cycle and its
    /// expiry. With `pay_from_credit` the price is drawn from the service's credit (refused
    /// when short); without, the operator has been paid some other way.
    pub async fn subscribe(
        &self,
        service_id: &domain::ServiceId,
        package: &str,
        auto_renew: Option<AutoRenew>,
        pay_from_credit: bool,
        actor: &str,
    ) -> Result<Service, Error> {
        let pkg = self
            .store
            .get_package(package)
            .await?
            .ok_or_else(|| Error::unknown("package", format!("no package '{package}'")))?;
        let start = PeriodStart::Subscribe {
            package_id: pkg.id,
            auto_renew,
        };
        let payment = pay_from_credit.then_some(Payment::Ledger);
        let out = self
            .store
            .start_period(
                service_id,
                &start,
                payment.as_ref(),
                self.clock.now(),
                actor,
            )
            .await?;
        match out {
            PeriodOutcome::Started { .. } => {}
            PeriodOutcome::NoService => return Err(no_service()),
            PeriodOutcome::NoPackage => return Err(Error::unknown("package", "no such package")),
            PeriodOutcome::InsufficientCredit => {
                return Err(Error::invalid(
                    "credit",
                    "the balance is below the package price",
                ))
            }
            PeriodOutcome::NotDue => return Err(Error::internal("subscribe reported not due")),
        }
        self.existing_service(service_id).await
    }

    pub async fn set_auto_renew(
        &self,
        service_id: &domain::ServiceId,
        auto: AutoRenew,
        actor: &str,
    ) -> Result<Service, Error> {
        if !self
            .store
            .set_auto_renew(service_id, auto, self.clock.now(), actor)
            .await?
        {
            return Err(no_service());
        }
        self.existing_service(service_id).await
    }

    /// Adds credit (`TopUp`, positive) or corrects it (`Adjustment`, either sign; the balance
    /// never goes below zero).
    pub async fn move_credit(
        &self,
        service_id: &domain::ServiceId,
        kind: CreditKind,
        amount: Satang,
        note: Option<&str>,
        actor: &str,
    ) -> Result<LedgerEntry, Error> {
        let mut v = Validation::new();
        match kind {
            CreditKind::TopUp if amount.0 <= 0 => v.fail("amount", "must be positive"),
            CreditKind::Renewal => v.fail("kind", "renewals draw credit by themselves"),
            _ if amount.0 == 0 || amount.0.abs() > MAX_CREDIT_MOVE => {
                v.fail("amount", "must be non-zero and at most 100,000,000 baht")
            }
            _ => {}
        }
        if note.is_some_and(|n| n.chars().count() > 255) {
            v.fail("note", "must be at most 255 characters");
        }
        v.into_result()?;
        match self
            .store
            .move_credit(
                service_id,
                kind,
                amount.0,
                note.map(str::trim).filter(|n| !n.is_empty()),
                self.clock.now(),
                actor,
            )
            .await?
        {
            CreditMove::NoService => Err(no_service()),
            CreditMove::Insufficient => {
                Err(Error::invalid("amount", "the balance would go below zero"))
            }
            CreditMove::Moved(e) => Ok(e),
        }
    }

    /// The balance and every movement, oldest first.
    pub async fn credit_history(
        &self,
        service_id: &domain::ServiceId,
    ) -> Result<(i64, Vec<LedgerEntry>), Error> {
        let s = self.existing_service(service_id).await?;
        Ok((
            s.subscription.credit,
            self.store.credit_history(service_id).await?,
        ))
    }

    /// The audit entries of a service as a whole (subscriptions, renewals, auto-renew).
    pub async fn service_audit(
        &self,
        service_id: &domain::ServiceId,
    ) -> Result<Vec<domain::model::AuditEntry>, Error> {
        if self.store.get_service(service_id).await?.is_none() {
            return Err(no_service());
        }
        Ok(self.store.list_service_audit(service_id).await?)
    }
}
