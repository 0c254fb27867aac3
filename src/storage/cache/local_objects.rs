//! Object records (frame indexes, inline data) kept in this process's
//! memory in front of an [`ObjectStore`]: paging through one memory asks
//! the store for its object once. Weighed by what each record holds, up to
//! a byte budget; least recently used records go first.
//!
//! A record never changes while its row exists, and the same content always
//! makes the same record, so an entry stays true; decisions that must see
//! the row itself (a put's dedup check, GC, verify) use
//! [`ObjectStore::stored_object`], which always asks the store.

use std::sync::Arc;

use async_trait::async_trait;

use crate::metrics::Metrics;
use crate::storage::StorageError;
use crate::storage::meta::{ObjectLease, ObjectRecord, ObjectStore};

/// An object store with a bounded in-process cache of its records.
pub struct LocalObjectCache {
    inner: Arc<dyn ObjectStore>,
    records: moka::sync::Cache<String, Arc<ObjectRecord>>,
    metrics: Arc<Metrics>,
}

impl LocalObjectCache {
    /// `inner` with up to `capacity_bytes` of records in front of it; hits
    /// and misses are counted as the `object_meta` cache layer.
    pub fn new(inner: Arc<dyn ObjectStore>, capacity_bytes: u64, metrics: Arc<Metrics>) -> Self {
        let records = moka::sync::Cache::builder()
            .weigher(|_: &String, o: &Arc<ObjectRecord>| weight(o))
            .max_capacity(capacity_bytes)
            .build();
        Self {
            inner,
            records,
            metrics,
        }
    }
}

/// About the bytes a record holds in memory.
fn weight(object: &ObjectRecord) -> u32 {
    let frames: usize = object.frames.iter().map(|f| 64 + f.pages.len() * 8).sum();
    let weight = 256 + object.data.as_ref().map_or(0, Vec::len) + frames;
    u32::try_from(weight).unwrap_or(u32::MAX)
}

#[async_trait]
impl ObjectStore for LocalObjectCache {
    async fn object(&self, hash: &str) -> Result<Option<Arc<ObjectRecord>>, StorageError> {
        if let Some(record) = self.records.get(hash) {
            self.metrics.cache("object_meta", true);
            return Ok(Some(record));
        }
        self.metrics.cache("object_meta", false);
        let found = self.inner.object(hash).await?;
        if let Some(record) = &found {
            self.records.insert(hash.to_owned(), Arc::clone(record));
        }
        Ok(found)
    }

    async fn stored_object(&self, hash: &str) -> Result<Option<ObjectRecord>, StorageError> {
        self.inner.stored_object(hash).await
    }

    async fn mark_corrupt(&self, hash: &str, detail: &str) -> Result<u64, StorageError> {
        self.inner.mark_corrupt(hash, detail).await
    }

    async fn lease_object(&self, hash: &str) -> Result<Option<ObjectLease>, StorageError> {
        self.inner.lease_object(hash).await
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use std::sync::atomic::{AtomicU32, Ordering};

    use super::*;
    use crate::storage::meta::Layout;

    /// A store that counts how often it is asked, holding objects of `size` bytes.
    struct Counting {
        asked: AtomicU32,
        size: usize,
    }

    #[async_trait]
    impl ObjectStore for Counting {
        async fn object(&self, hash: &str) -> Result<Option<Arc<ObjectRecord>>, StorageError> {
            self.asked.fetch_add(1, Ordering::Relaxed);
            Ok((hash != "missing").then(|| {
                Arc::new(ObjectRecord {
                    hash: hash.to_owned(),
                    bytes: self.size as u64,
                    lines: 1,
                    stored_bytes: self.size as u64,
                    layout: Layout::Raw,
                    data: Some(vec![b'x'; self.size]),
                    frames: Vec::new(),
                })
            }))
        }

        async fn mark_corrupt(&self, _: &str, _: &str) -> Result<u64, StorageError> {
            Ok(0)
        }
    }

    fn cache(size: usize, capacity: u64) -> (LocalObjectCache, Arc<Counting>) {
        let inner = Arc::new(Counting {
            asked: AtomicU32::new(0),
            size,
        });
        let cache = LocalObjectCache::new(inner.clone(), capacity, Arc::new(Metrics::new()));
        (cache, inner)
    }

    #[tokio::test]
    async fn a_record_is_asked_for_once_and_shared() {
        let (cache, inner) = cache(100, 1 << 20);
        let first = cache.object("a").await.unwrap().unwrap();
        let second = cache.object("a").await.unwrap().unwrap();
        assert!(Arc::ptr_eq(&first, &second));
        assert_eq!(inner.asked.load(Ordering::Relaxed), 1);
        // What the store does not have is asked again (it may come).
        assert!(cache.object("missing").await.unwrap().is_none());
        assert!(cache.object("missing").await.unwrap().is_none());
        assert_eq!(inner.asked.load(Ordering::Relaxed), 3);
        // The stored record is always the store's own answer.
        cache.stored_object("a").await.unwrap().unwrap();
        assert_eq!(inner.asked.load(Ordering::Relaxed), 4);
    }

    #[tokio::test]
    async fn records_over_the_budget_are_dropped() {
        // 100 KB records, a 1 MB budget: most of 100 cannot stay.
        let (cache, inner) = cache(100_000, 1_000_000);
        for i in 0..100 {
            cache.object(&format!("h{i}")).await.unwrap();
        }
        cache.records.run_pending_tasks();
        assert!(cache.records.weighted_size() <= 1_000_000);
        let before = inner.asked.load(Ordering::Relaxed);
        for i in 0..100 {
            cache.object(&format!("h{i}")).await.unwrap();
        }
        assert!(inner.asked.load(Ordering::Relaxed) - before >= 80);
    }
}
