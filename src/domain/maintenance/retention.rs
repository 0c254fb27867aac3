//! Retention: pruning by age, count and size (on demand or as a background
//! policy), expiry of memories put with a time to live, and the maintenance
//! service that admin endpoints call (prune, GC, verify).

use std::sync::Arc;
use std::time::Duration;

use crate::domain::maintenance::gc::{self, GcReport};
use crate::domain::maintenance::verify::{self, VerifyReport};
use crate::domain::memories::Memories;
use crate::domain::{DomainError, now_ms};
use crate::storage::blob::BlobStore;
use crate::storage::meta::{ListQuery, MetaStore, PruneOrder, RetentionRow};

/// Milliseconds in a day.
const DAY_MS: i64 = 86_400_000;

/// What to keep; anything else (unpinned) among the filtered memories goes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RetentionRule {
    /// Remove memories created more than this many days ago.
    pub keep_days: Option<u64>,
    /// Keep at most this many memories (pinned ones count and stay).
    pub keep_entries: Option<u64>,
    /// Keep at most this many content bytes (pinned ones count and stay).
    pub max_bytes: Option<u64>,
}

impl RetentionRule {
    /// True when the rule asks for nothing.
    pub fn is_empty(&self) -> bool {
        self.keep_days.is_none() && self.keep_entries.is_none() && self.max_bytes.is_none()
    }
}

/// A prune: which memories, what to keep, in which order to remove.
#[derive(Clone, Debug)]
pub struct PruneRequest {
    /// Namespace and field filters (the query's page is not used).
    pub filter: ListQuery,
    /// What to keep.
    pub rule: RetentionRule,
    /// Removal order.
    pub order: PruneOrder,
    /// Report only.
    pub dry_run: bool,
}

/// What a prune removed (or, dry, would remove).
#[derive(Clone, Debug, Default)]
pub struct PruneReport {
    /// The removed memories, in removal order.
    pub removed: Vec<RetentionRow>,
    /// Content bytes of the removed memories.
    pub removed_bytes: u64,
    /// Memories of the filter that stay.
    pub kept_count: u64,
    /// Nothing was changed.
    pub dry_run: bool,
}

/// Indices of `rows` (in removal order) that `rule` removes at time `now`.
pub fn select(rows: &[RetentionRow], rule: &RetentionRule, now: i64) -> Vec<usize> {
    let mut remove = vec![false; rows.len()];
    if let Some(days) = rule.keep_days {
        let cutoff = now.saturating_sub(
            i64::try_from(days)
                .unwrap_or(i64::MAX)
                .saturating_mul(DAY_MS),
        );
        for (i, row) in rows.iter().enumerate() {
            remove[i] = !row.pinned && row.created_at < cutoff;
        }
    }
    if let Some(keep) = rule.keep_entries {
        let mut left = remove.iter().filter(|r| !**r).count() as u64;
        for (i, row) in rows.iter().enumerate() {
            if left <= keep {
                break;
            }
            if !remove[i] && !row.pinned {
                remove[i] = true;
                left -= 1;
            }
        }
    }
    if let Some(max) = rule.max_bytes {
        let mut bytes: u64 = rows
            .iter()
            .zip(&remove)
            .filter(|(_, r)| !**r)
            .map(|(row, _)| row.bytes)
            .sum();
        for (i, row) in rows.iter().enumerate() {
            if bytes <= max {
                break;
            }
            if !remove[i] && !row.pinned {
                remove[i] = true;
                bytes -= row.bytes;
            }
        }
    }
    (0..rows.len()).filter(|i| remove[*i]).collect()
}

/// The background retention policy (from `CAIRN_RETENTION_*`), applied to every namespace.
#[derive(Clone, Debug)]
pub struct RetentionPolicy {
    /// What every namespace keeps (empty: only expiry runs).
    pub rule: RetentionRule,
    /// Time between runs.
    pub interval: Duration,
}

/// Prune, expiry, GC and verify over the stores.
pub struct Maintenance {
    memories: Arc<Memories>,
    meta: Arc<dyn MetaStore>,
    blobs: Arc<dyn BlobStore>,
    /// Default GC grace period.
    gc_grace: Duration,
}

impl Maintenance {
    /// The service over the stores; `gc_grace` is GC's default grace period.
    pub fn new(
        memories: Arc<Memories>,
        meta: Arc<dyn MetaStore>,
        blobs: Arc<dyn BlobStore>,
        gc_grace: Duration,
    ) -> Self {
        Self {
            memories,
            meta,
            blobs,
            gc_grace,
        }
    }

    /// GC's default grace period.
    pub fn gc_grace(&self) -> Duration {
        self.gc_grace
    }

    /// Removes what `request` selects (pinned memories never).
    pub async fn prune(&self, request: &PruneRequest) -> Result<PruneReport, DomainError> {
        let rows = self
            .meta
            .retention_rows(&request.filter, request.order)
            .await?;
        let chosen = select(&rows, &request.rule, now_ms());
        let total = rows.len() as u64;
        let mut removed: Vec<RetentionRow> = chosen.iter().map(|i| rows[*i].clone()).collect();
        if !request.dry_run && !removed.is_empty() {
            let namespace = &request.filter.namespace;
            let ids = removed.iter().map(|r| r.id.clone()).collect();
            let gone = self.meta.remove_memories(namespace, ids).await?;
            if gone != removed.len() as u64 {
                // Some were pinned or deleted meanwhile: report what really went.
                let mut still = Vec::with_capacity(removed.len());
                for row in removed {
                    if self.meta.get(namespace, &row.id).await?.is_none() {
                        still.push(row);
                    }
                }
                removed = still;
            }
            for row in &removed {
                self.memories.forget(namespace, &row.id);
            }
        }
        Ok(PruneReport {
            removed_bytes: removed.iter().map(|r| r.bytes).sum(),
            kept_count: total - removed.len() as u64,
            removed,
            dry_run: request.dry_run,
        })
    }

    /// Deletes expired memories; answers how many.
    pub async fn expire(&self) -> Result<u64, DomainError> {
        Ok(self.meta.expire_memories(now_ms()).await?)
    }

    /// Collects unreferenced objects (grace: the default when `None`).
    pub async fn gc(
        &self,
        grace: Option<Duration>,
        dry_run: bool,
    ) -> Result<GcReport, DomainError> {
        let locks = self.memories.object_locks();
        gc::collect(
            self.meta.as_ref(),
            self.blobs.as_ref(),
            &locks,
            grace.unwrap_or(self.gc_grace),
            dry_run,
        )
        .await
    }

    /// Checks every object (and repairs what it can when `repair`).
    pub async fn verify(&self, repair: bool) -> Result<VerifyReport, DomainError> {
        verify::verify(self.meta.as_ref(), self.blobs.as_ref(), repair).await
    }

    /// One background round: expiry, then the policy over every namespace.
    pub async fn sweep(&self, rule: &RetentionRule) -> Result<(u64, u64), DomainError> {
        let expired = self.expire().await?;
        let mut pruned = 0;
        if !rule.is_empty() {
            for namespace in self.meta.namespaces().await? {
                let report = self
                    .prune(&PruneRequest {
                        filter: ListQuery {
                            namespace,
                            ..ListQuery::default()
                        },
                        rule: rule.clone(),
                        order: PruneOrder::Oldest,
                        dry_run: false,
                    })
                    .await?;
                pruned += report.removed.len() as u64;
            }
        }
        Ok((expired, pruned))
    }

    /// Runs [`Maintenance::sweep`] every `policy.interval` until aborted.
    pub fn spawn_sweeper(self: &Arc<Self>, policy: RetentionPolicy) -> tokio::task::JoinHandle<()> {
        let this = Arc::downgrade(self);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(policy.interval.max(Duration::from_millis(50)));
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                let Some(this) = this.upgrade() else {
                    break;
                };
                match this.sweep(&policy.rule).await {
                    Ok((0, 0)) => {}
                    Ok((expired, pruned)) => {
                        tracing::info!(expired, pruned, "retention sweep removed memories");
                    }
                    Err(e) => tracing::warn!(error = %e, "retention sweep failed"),
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(id: &str, bytes: u64, created_at: i64, pinned: bool) -> RetentionRow {
        RetentionRow {
            id: id.into(),
            bytes,
            created_at,
            last_accessed_at: None,
            access_count: 0,
            pinned,
        }
    }

    #[test]
    fn keep_days_removes_older_unpinned() {
        let now = 10 * DAY_MS;
        let rows = [
            row("a", 1, 0, false),
            row("b", 1, 0, true),
            row("c", 1, 9 * DAY_MS, false),
        ];
        let rule = RetentionRule {
            keep_days: Some(2),
            ..RetentionRule::default()
        };
        assert_eq!(select(&rows, &rule, now), [0]);
    }

    #[test]
    fn keep_entries_and_max_bytes_walk_in_order_skipping_pinned() {
        let rows = [
            row("a", 10, 1, true),
            row("b", 10, 2, false),
            row("c", 10, 3, false),
            row("d", 10, 4, false),
        ];
        let entries = RetentionRule {
            keep_entries: Some(2),
            ..RetentionRule::default()
        };
        assert_eq!(select(&rows, &entries, 100), [1, 2]);
        let bytes = RetentionRule {
            max_bytes: Some(25),
            ..RetentionRule::default()
        };
        assert_eq!(select(&rows, &bytes, 100), [1, 2]);
        let none = RetentionRule {
            keep_entries: Some(0),
            ..RetentionRule::default()
        };
        assert_eq!(select(&rows[..1], &none, 100), Vec::<usize>::new());
    }
}
