//! Reading the audit log (entries are written in the transaction of the change they record).

use crate::sql::fetch_all;
use crate::Result;
use crate::SqlStore;
use domain::clock::from_millis;
use domain::model::AuditEntry;
use domain::{BranchId, ServiceId};
use sqlx::Row;

impl SqlStore {
    /// Audit entries matching `filter` (one `$1` parameter), in commit order.
    async fn audit_where(&self, filter: &str, key: &str) -> Result<Vec<AuditEntry>> {
        let sql = format!(
            "SELECT id, at, actor, action, service_id, branch_id, detail FROM audit_log \
             WHERE {filter} ORDER BY seq"
        );
        fetch_all!(&self.pool, &sql, [key], |r| AuditEntry {
            id: r.try_get("id")?,
            at: from_millis(r.try_get("at")?),
            actor: r.try_get("actor")?,
            action: r.try_get("action")?,
            service_id: r
                .try_get::<Option<String>, _>("service_id")?
                .map(ServiceId::from),
            branch_id: r
                .try_get::<Option<String>, _>("branch_id")?
                .map(BranchId::from),
            detail: r.try_get("detail")?,
        })
    }

    pub async fn list_audit(&self, branch_id: &BranchId) -> Result<Vec<AuditEntry>> {
        self.audit_where("branch_id = $1", branch_id.as_str()).await
    }

    /// Audit entries about a service as a whole (subscriptions, renewals, auto-renew).
    pub async fn list_service_audit(&self, service_id: &ServiceId) -> Result<Vec<AuditEntry>> {
        self.audit_where("service_id = $1 AND branch_id IS NULL", service_id.as_str())
            .await
    }
}
