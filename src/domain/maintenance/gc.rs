//! Garbage collection: objects no memory refers to, after a grace period.
//!
//! Safety against a racing put of the same content rests on two things:
//! - the object row is deleted by the single writer only if, inside its
//!   transaction, no memory refers to it (a put's memory row and object row
//!   commit together, so either the put sees no row and writes its own, or GC
//!   sees the memory and keeps the object);
//! - for objects in the blob store, GC holds the object's [`ObjectLocks`]
//!   stripe from the row delete to the file removal, and a put holds the same
//!   stripe from its dedup check (`settle`) to its metadata commit. So a file
//!   can never be removed between a put deciding to rely on it (or committing
//!   it) and the put's rows being committed.
//!
//! Replicas sharing one metadata store (PostgreSQL) hold, with the stripe,
//! the store's lease of the object ([`MetaStore::lease_object`], an advisory
//! lock), so the same holds between a put on one replica and a GC on another.

use std::collections::HashSet;
use std::time::Duration;

use crate::domain::memories::locks::ObjectLocks;
use crate::domain::{DomainError, now_ms};
use crate::storage::blob::BlobStore;
use crate::storage::meta::{Layout, MetaStore};

/// What a GC removed (or, dry, would remove).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GcReport {
    /// Objects removed (row, and file when it had one).
    pub removed_objects: u64,
    /// Stored bytes they took.
    pub removed_bytes: u64,
    /// Unreferenced objects kept because they became so within the grace period.
    pub kept_recent: u64,
    /// Files with no object row (crash leftovers) older than the grace period, removed.
    pub removed_orphan_files: u64,
    /// Nothing was changed.
    pub dry_run: bool,
}

/// Removes objects unreferenced for longer than `grace`, and object files
/// without a row older than `grace`.
pub async fn collect(
    meta: &dyn MetaStore,
    blobs: &dyn BlobStore,
    locks: &ObjectLocks,
    grace: Duration,
    dry_run: bool,
) -> Result<GcReport, DomainError> {
    let grace_ms = i64::try_from(grace.as_millis()).unwrap_or(i64::MAX);
    let idle_before = now_ms().saturating_sub(grace_ms);
    let mut report = GcReport {
        dry_run,
        ..GcReport::default()
    };
    for object in meta.unreferenced_objects().await? {
        if object.idle_since >= idle_before {
            report.kept_recent += 1;
            continue;
        }
        if dry_run {
            report.removed_objects += 1;
            report.removed_bytes += object.stored_bytes;
            continue;
        }
        let guard = match object.layout {
            Layout::Blob => Some(locks.lock(meta, &object.hash).await?),
            Layout::Raw | Layout::Inline => None,
        };
        if meta
            .remove_object_if_unreferenced(&object.hash, idle_before)
            .await?
        {
            if object.layout == Layout::Blob {
                blobs.delete(&object.hash).await?;
            }
            report.removed_objects += 1;
            report.removed_bytes += object.stored_bytes;
        }
        drop(guard);
    }
    report.removed_orphan_files = orphan_files(meta, blobs, locks, idle_before, dry_run).await?;
    Ok(report)
}

/// Removes (or counts) files older than `idle_before` that no object row names.
async fn orphan_files(
    meta: &dyn MetaStore,
    blobs: &dyn BlobStore,
    locks: &ObjectLocks,
    idle_before: i64,
    dry_run: bool,
) -> Result<u64, DomainError> {
    let known = blob_rows(meta).await?;
    let mut removed = 0;
    for file in blobs.list().await? {
        if known.contains(&file.hash) || file.modified_ms >= idle_before {
            continue;
        }
        if dry_run {
            removed += 1;
            continue;
        }
        // Under the lock no put is between its file and its rows: no row now means none coming.
        let _guard = locks.lock(meta, &file.hash).await?;
        if meta.stored_object(&file.hash).await?.is_none() {
            blobs.delete(&file.hash).await?;
            removed += 1;
        }
    }
    Ok(removed)
}

/// Hashes of every object row, paged.
pub(crate) async fn blob_rows(meta: &dyn MetaStore) -> Result<HashSet<String>, DomainError> {
    let mut known = HashSet::new();
    let mut after: Option<String> = None;
    loop {
        let page = meta.objects_after(after.as_deref(), 1000).await?;
        let Some(last) = page.last() else {
            break;
        };
        after = Some(last.hash.clone());
        known.extend(page.into_iter().map(|o| o.hash));
    }
    Ok(known)
}
