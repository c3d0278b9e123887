//! Bank accounts of a branch (compat.md `/bank-accounts`) and the receiver-account check of a
//! verification (`matchAccount`). The matching rules are the pure `domain::matching`.

use crate::auth::Caller;
pub use crate::handles::Accounts;
use domain::matching::{match_receiver, RegisteredAccount, SlipReceiver};
use domain::model::{AccountType, BankAccount, MatchedAccount};
use domain::{BankAccountId, Error, Validation};
use store::StoreError;

/// A bank account as a client submits it (fields as sent; checked by `create_bank_account`).
#[derive(Debug, Clone, Default)]
pub struct NewBankAccount {
    pub bank_code: Option<String>,
    pub bank_number: Option<String>,
    pub name_th: Option<String>,
    pub name_en: Option<String>,
    pub kind: Option<String>,
    pub extra_verify: Option<String>,
}

/// `extraVerify` against the bank's options (spec 4.1 rule 4).
fn check_extra_verify(bank: &banks::Bank, extra: Option<&str>) -> Result<(), Error> {
    let options = bank.extra_verify.unwrap_or(&[]);
    let listed = || {
        options
            .iter()
            .map(|o| o.value)
            .collect::<Vec<_>>()
            .join(", ")
    };
    match extra {
        None if bank.extra_verify_required => Err(Error::InvalidExtraVerify(format!(
            "extraVerify is required for {}: one of {}",
            bank.code,
            listed()
        ))),
        None => Ok(()),
        Some(v) if options.iter().any(|o| o.value == v) => Ok(()),
        Some(v) => Err(Error::InvalidExtraVerify(if options.is_empty() {
            format!("{} takes no extraVerify option (got {v:?})", bank.code)
        } else {
            format!(
                "extraVerify for {} must be one of {} (got {v:?})",
                bank.code,
                listed()
            )
        })),
    }
}

/// The number's digits (separators removed), checked for the bank (and PromptPay proxy kind).
fn normalize_number(
    bank_code: &str,
    extra: Option<&str>,
    raw: &str,
) -> Result<String, &'static str> {
    let digits: String = raw.chars().filter(|c| !matches!(c, '-' | ' ')).collect();
    if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_digit()) {
        return Err("must be digits (dashes and spaces allowed)");
    }
    let ok = match (bank_code, extra) {
        ("PROMPTPAY", Some("MSISDN")) => digits.len() == 10 && digits.starts_with('0'),
        ("PROMPTPAY", Some("NATID")) => digits.len() == 13,
        ("PROMPTPAY", Some("EWALLETID")) => digits.len() == 15,
        ("PROMPTPAY", _) => false,
        // A TrueMoney Wallet is its phone number.
        ("TRUEMONEY", _) => digits.len() == 10 && digits.starts_with('0'),
        _ => (10..=15).contains(&digits.len()),
    };
    if ok {
        Ok(digits)
    } else if bank_code == "TRUEMONEY" {
        Err("must be the wallet's phone number (0 and 9 digits)")
    } else if bank_code == "PROMPTPAY" {
        Err("must be a phone number (0 and 9 digits) for MSISDN, 13 digits for NATID, 15 for EWALLETID")
    } else {
        Err("must be 10 to 15 digits")
    }
}

impl Accounts<'_> {
    pub async fn create_bank_account(
        &self,
        caller: &Caller,
        req: NewBankAccount,
    ) -> Result<BankAccount, Error> {
        self.create_bank_account_in(&caller.service.id, &caller.branch.id, req)
            .await
    }

    /// An account for this branch (of this service): the v2 API's and the partner API's.
    pub(crate) async fn create_bank_account_in(
        &self,
        service_id: &domain::ServiceId,
        branch_id: &domain::BranchId,
        req: NewBankAccount,
    ) -> Result<BankAccount, Error> {
        let mut v = Validation::new();
        let mut text = |name: &str, value: &Option<String>, max: usize| -> String {
            match value.as_deref().map(str::trim) {
                None | Some("") => {
                    v.fail(name, "is required");
                    String::new()
                }
                Some(t) if t.chars().count() > max => {
                    v.fail(name, format!("must be at most {max} characters"));
                    String::new()
                }
                Some(t) => t.to_string(),
            }
        };
        let bank_code = text("bankCode", &req.bank_code, 16);
        let number = text("bankNumber", &req.bank_number, 32);
        let name_th = text("nameTh", &req.name_th, 200);
        let name_en = text("nameEn", &req.name_en, 200);
        let kind = match req.kind.as_deref() {
            None => {
                v.fail("type", "is required (PERSONAL or JURISTIC)");
                None
            }
            Some(k) => {
                let kind = AccountType::parse(k);
                if kind.is_none() {
                    v.fail("type", "must be PERSONAL or JURISTIC");
                }
                kind
            }
        };
        v.into_result()?;
        let bank = banks::find(&bank_code).ok_or(Error::InvalidBankCode)?;
        let extra = req
            .extra_verify
            .as_deref()
            .map(str::trim)
            .filter(|e| !e.is_empty());
        check_extra_verify(bank, extra)?;
        let bank_number = normalize_number(bank.code, extra, &number)
            .map_err(|why| Error::invalid("bankNumber", why))?;
        let account = BankAccount {
            id: BankAccountId::new(uuid::Uuid::new_v4().to_string()),
            service_id: service_id.clone(),
            branch_id: branch_id.clone(),
            bank_code: bank.code.to_string(),
            bank_number,
            name_th,
            name_en,
            kind: kind.unwrap_or(AccountType::Personal),
            extra_verify: extra.map(str::to_string),
            created_at: self.clock.now(),
        };
        match self.store.create_bank_account(&account).await {
            Ok(()) => Ok(account),
            Err(StoreError::Conflict(_)) => Err(Error::BankAccountDuplicate),
            Err(e) => Err(e.into()),
        }
    }

    pub async fn list_bank_accounts(&self, caller: &Caller) -> Result<Vec<BankAccount>, Error> {
        Ok(self.store.list_bank_accounts(&caller.branch.id).await?)
    }

    /// Another branch's account is `BANK_ACCOUNT_NOT_FOUND`, like one that does not exist.
    pub async fn get_bank_account(
        &self,
        caller: &Caller,
        id: &BankAccountId,
    ) -> Result<BankAccount, Error> {
        self.store
            .get_bank_account(&caller.branch.id, &BankAccountId::from(id.as_str().trim()))
            .await?
            .ok_or(Error::BankAccountNotFound)
    }

    /// Changes `extraVerify` (`None` clears it, if the bank allows that).
    pub async fn update_bank_account(
        &self,
        caller: &Caller,
        id: &BankAccountId,
        extra_verify: Option<String>,
    ) -> Result<BankAccount, Error> {
        let account = self.get_bank_account(caller, id).await?;
        let bank = banks::find(&account.bank_code).ok_or(Error::InvalidBankCode)?;
        let extra = extra_verify
            .as_deref()
            .map(str::trim)
            .filter(|e| !e.is_empty());
        check_extra_verify(bank, extra)?;
        // A PromptPay number must still fit its (new) proxy kind.
        normalize_number(bank.code, extra, &account.bank_number).map_err(|why| {
            Error::InvalidExtraVerify(format!("bankNumber {why} for this extraVerify"))
        })?;
        if !self
            .store
            .set_bank_account_extra_verify(&caller.branch.id, &account.id, extra)
            .await?
        {
            return Err(Error::BankAccountNotFound);
        }
        Ok(BankAccount {
            extra_verify: extra.map(str::to_string),
            ..account
        })
    }

    pub async fn delete_bank_account(
        &self,
        caller: &Caller,
        id: &BankAccountId,
    ) -> Result<(), Error> {
        self.delete_bank_account_of(&caller.branch.id, id).await
    }

    /// Another branch's account is `BANK_ACCOUNT_NOT_FOUND`, like one that does not exist.
    pub(crate) async fn delete_bank_account_of(
        &self,
        branch_id: &domain::BranchId,
        id: &BankAccountId,
    ) -> Result<(), Error> {
        let id = BankAccountId::from(id.as_str().trim());
        if self
            .store
            .delete_bank_account(branch_id, &id, self.clock.now())
            .await?
        {
            Ok(())
        } else {
            Err(Error::BankAccountNotFound)
        }
    }
}

/// The registered account a slip's receiver (bank or wallet) matches, if any.
pub(crate) fn matched_receiver(
    accounts: &[BankAccount],
    receiver: &SlipReceiver<'_>,
) -> Option<MatchedAccount> {
    let registered: Vec<RegisteredAccount<'_>> = accounts
        .iter()
        .map(|a| RegisteredAccount {
            id: a.id.as_str(),
            bank_code: &a.bank_code,
            bank_number: &a.bank_number,
            name_th: &a.name_th,
            name_en: &a.name_en,
            extra_verify: a.extra_verify.as_deref(),
        })
        .collect();
    let hit = match_receiver(receiver, &registered);
    hit.and_then(|id| accounts.iter().find(|a| a.id == id))
        .map(MatchedAccount::from_account)
}
