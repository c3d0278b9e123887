//! The partner API's branch and bank-account operations (compat.md, the provider's published
//! branch-in-path form): a partner lists, creates, changes and removes branches of its own
//! services and their receiving accounts. Authentication and scopes are `partner.rs`'s.

use crate::accounts::NewBankAccount;
use crate::admin::{BranchUpdate, NewBranch};
use crate::partner::{PartnerApi, PartnerCaller};
use domain::model::{BankAccount, Branch, Partner, Service};
use domain::{apikey, BankAccountId, Error, ServiceId, Validation};

/// A branch with its service and its receiving accounts, as the partner API shows it.
#[derive(Debug, Clone)]
pub struct PartnerBranchRecord {
    pub service: Service,
    pub branch: Branch,
    pub accounts: Vec<BankAccount>,
}

/// `POST /b2b/branches` as sent (`serviceId` only needed by a partner of several services).
#[derive(Debug, Clone, Default)]
pub struct PartnerNewBranch {
    pub service_id: Option<String>,
    pub name: Option<String>,
    /// One address or CIDR; `None`: any address.
    pub ip_address: Option<String>,
    pub limit_quota: Option<i64>,
}

/// `PATCH /b2b/branches/{branchId}`; `None` leaves a field as it is.
#[derive(Debug, Clone, Default)]
pub struct PartnerBranchPatch {
    pub name: Option<String>,
    pub is_active: Option<bool>,
    /// `Some(None)`: any address.
    pub ip_address: Option<Option<String>>,
}

/// The one address (or CIDR) the published branch object carries; `*` is any.
fn allow_ips(field: &str, ip: Option<&str>, v: &mut Validation) -> Vec<String> {
    match ip.map(str::trim) {
        None | Some("*") => vec!["*".into()],
        Some(one) => match domain::ip::AllowList::parse(&[one]) {
            Ok(_) => vec![one.to_string()],
            Err(e) => {
                v.fail(field, e);
                Vec::new()
            }
        },
    }
}

impl PartnerApi<'_> {
    async fn record(&self, service: Service, branch: Branch) -> Result<PartnerBranchRecord, Error> {
        let accounts = self.store.list_bank_accounts(&branch.id).await?;
        Ok(PartnerBranchRecord {
            service,
            branch,
            accounts,
        })
    }

    /// Every branch of the partner's services, service by service.
    pub async fn partner_branches(&self, p: &Partner) -> Result<Vec<PartnerBranchRecord>, Error> {
        let mut out = Vec::new();
        for sid in &p.service_ids {
            let Some(service) = self.store.get_service(sid).await? else {
                continue;
            };
            for branch in self.store.list_branches(sid).await? {
                out.push(self.record(service.clone(), branch).await?);
            }
        }
        Ok(out)
    }

    pub async fn partner_branch_record(
        &self,
        c: &PartnerCaller,
    ) -> Result<PartnerBranchRecord, Error> {
        self.record(c.service.clone(), c.branch.clone()).await
    }

    /// Creates a branch in one of the partner's services; returns it with its API key (shown
    /// once, as for the operator).
    pub async fn partner_create_branch(
        &self,
        p: &Partner,
        req: PartnerNewBranch,
    ) -> Result<(PartnerBranchRecord, String), Error> {
        let mut v = Validation::new();
        let service_id = match (req.service_id.as_deref().map(str::trim), &p.service_ids[..]) {
            (Some(id), _) => Some(ServiceId::from(id)),
            (None, [only]) => Some(only.clone()),
            (None, _) => {
                v.fail(
                    "serviceId",
                    "is required: this partner manages several services",
                );
                None
            }
        };
        let ips = allow_ips("ipAddress", req.ip_address.as_deref(), &mut v);
        if req.name.is_none() {
            v.fail("name", "is required");
        }
        v.into_result()?;
        let service_id = service_id.unwrap_or_default();
        // Another service's id looks like no service at all.
        if !p.service_ids.contains(&service_id) {
            return Err(Error::BranchAccessDenied);
        }
        let (branch, key) = self
            .admin
            .create_branch(&NewBranch {
                service_id: service_id.clone(),
                name: req.name.unwrap_or_default(),
                is_main: false,
                allow_ips: ips,
                limit_quota: req.limit_quota,
                sandbox: false,
            })
            .await?;
        let service = self
            .store
            .get_service(&service_id)
            .await?
            .ok_or(Error::BranchAccessDenied)?;
        Ok((self.record(service, branch).await?, key))
    }

    pub async fn partner_update_branch(
        &self,
        c: &PartnerCaller,
        patch: PartnerBranchPatch,
    ) -> Result<PartnerBranchRecord, Error> {
        let mut v = Validation::new();
        let allow = patch
            .ip_address
            .as_ref()
            .map(|ip| allow_ips("ipAddress", ip.as_deref(), &mut v));
        v.into_result()?;
        let branch = self
            .admin
            .update_branch(
                &c.branch.id,
                &BranchUpdate {
                    name: patch.name,
                    active: patch.is_active,
                    allow_ips: allow,
                    ..BranchUpdate::default()
                },
            )
            .await?;
        self.record(c.service.clone(), branch).await
    }

    /// Ends a sub-branch: inactive, its key revoked at once. The row stays (its
    /// verifications and audit entries refer to it), so it is still listed, inactive.
    pub async fn partner_delete_branch(&self, c: &PartnerCaller) -> Result<(), Error> {
        if c.branch.is_main {
            return Err(Error::invalid(
                "branchId",
                "the main branch cannot be deleted",
            ));
        }
        self.admin
            .update_branch(
                &c.branch.id,
                &BranchUpdate {
                    active: Some(false),
                    ..BranchUpdate::default()
                },
            )
            .await?;
        // A fresh key nobody is told: the old one stops working now.
        let unknown = apikey::hash_key(&uuid::Uuid::new_v4().to_string());
        self.store
            .set_api_key_hash(&c.branch.id, &unknown, None)
            .await?;
        Ok(())
    }

    pub async fn partner_create_bank_account(
        &self,
        c: &PartnerCaller,
        req: NewBankAccount,
    ) -> Result<BankAccount, Error> {
        self.accounts
            .create_bank_account_in(&c.service.id, &c.branch.id, req)
            .await
    }

    pub async fn partner_delete_bank_account(
        &self,
        c: &PartnerCaller,
        id: &BankAccountId,
    ) -> Result<(), Error> {
        self.accounts.delete_bank_account_of(&c.branch.id, id).await
    }
}
