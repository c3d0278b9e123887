//! `admin verifications`: the attempts log, newest first, as the admin API pages it, or its
//! CSV export into a file.

use super::Public;
use crate::cli::print;
use anyhow::anyhow;
use clap::Args;
use services::Services;

/// The filters of `GET /admin/verifications`, as flags.
#[derive(Args)]
pub(crate) struct VerificationsArgs {
    /// A transRef or a part of one (3+ characters), or an amount such as 1250.50.
    #[arg(long)]
    q: Option<String>,
    /// Only this service's records (its id).
    #[arg(long)]
    service: Option<String>,
    /// Only this branch's records (its id).
    #[arg(long)]
    branch: Option<String>,
    /// verified, duplicate, not_found, pending, no_qr, invalid_qr, refused, unavailable, error.
    #[arg(long)]
    outcome: Option<String>,
    /// A date (a day in Asia/Bangkok) or an RFC 3339 time.
    #[arg(long)]
    from: Option<String>,
    /// A date (up to the end of that day in Asia/Bangkok) or an RFC 3339 time.
    #[arg(long)]
    to: Option<String>,
    /// Records (at most 500; with --csv at most 100000, the default).
    #[arg(long)]
    limit: Option<u32>,
    /// The next page: the `next` the previous page printed.
    #[arg(long)]
    cursor: Option<String>,
    /// Write the records as CSV (UTF-8 with a byte-order mark) to this file.
    #[arg(long)]
    csv: Option<std::path::PathBuf>,
}

impl VerificationsArgs {
    fn pairs(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        let mut put = |k: &str, v: &Option<String>| {
            if let Some(v) = v {
                out.push((k.to_string(), v.clone()));
            }
        };
        put("q", &self.q);
        put("service", &self.service);
        put("branch", &self.branch);
        put("outcome", &self.outcome);
        put("from", &self.from);
        put("to", &self.to);
        put("cursor", &self.cursor);
        put("limit", &self.limit.map(|l| l.to_string()));
        out
    }
}

/// `admin verifications`: a page as the admin API prints it, or the CSV export into a file.
pub(super) async fn run(svc: &Services, a: VerificationsArgs) -> anyhow::Result<()> {
    use futures_util::StreamExt;
    use tokio::io::AsyncWriteExt;
    match &a.csv {
        None => {
            let page = api::verifications_page(svc, a.pairs()).await.public()?;
            print(page);
        }
        Some(path) => {
            let stream = api::verifications_csv(svc.clone(), a.pairs()).public()?;
            let mut file = tokio::fs::File::create(path)
                .await
                .map_err(|e| anyhow!("--csv {}: {e}", path.display()))?;
            let mut stream = std::pin::pin!(stream);
            while let Some(chunk) = stream.next().await {
                let chunk = chunk?;
                file.write_all(chunk.as_bytes())
                    .await
                    .map_err(|e| anyhow!("--csv {}: {e}", path.display()))?;
            }
            file.flush().await?;
        }
    }
    Ok(())
}
