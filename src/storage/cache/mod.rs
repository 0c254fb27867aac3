//! The hot cache around the stores: a [`CachedBlobStore`] keeps stored frame
//! bytes in Redis/Dragonfly for every replica (the decoded-frame LRU of one
//! process is the domain's `frame_cache`), and a [`CachedMetaStore`]
//! keeps object records (frame indexes, inline data) there.
//!
//! Cached frame bytes are the stored (compressed) frame, so each use is
//! checked by the same decoding and checksums as a read from the store: a
//! stale or damaged entry is dropped and the store answers instead. The blob
//! wrapper is for the read path only; verify and GC look at the blob store
//! itself. The metadata wrapper is every component's metadata store, so that
//! GC's removals invalidate the records (see `meta.rs`). In front of either,
//! a [`LocalObjectCache`] keeps object records in this process's memory.

pub mod breaker;
mod local_objects;
mod meta;
mod object_wire;
pub mod redis;
pub mod spend;

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use bytes::Bytes;

pub use self::local_objects::LocalObjectCache;
pub use self::meta::CachedMetaStore;
use self::redis::{FRAMES, RedisCache};
use super::StorageError;
use super::blob::{BlobEntry, BlobStore, BlobWriter, RangeTransform};

/// A blob store whose frame reads go through a shared cache first.
pub struct CachedBlobStore {
    inner: Arc<dyn BlobStore>,
    cache: Arc<RedisCache>,
}

impl CachedBlobStore {
    /// `inner` with `cache` in front of its range reads.
    pub fn new(inner: Arc<dyn BlobStore>, cache: Arc<RedisCache>) -> Self {
        Self { inner, cache }
    }

    /// Stores `data` in the background: a request never waits for the cache.
    fn fill(&self, key: String, data: Bytes) {
        let cache = self.cache.clone();
        tokio::spawn(async move { cache.put(&key, data).await });
    }
}

#[async_trait]
impl BlobStore for CachedBlobStore {
    fn remote(&self) -> bool {
        self.inner.remote()
    }

    async fn create(&self) -> Result<Box<dyn BlobWriter>, StorageError> {
        self.inner.create().await
    }

    async fn read_range(&self, hash: &str, offset: u64, len: u64) -> Result<Bytes, StorageError> {
        // Unverified reads (whole objects, exports) bypass the cache: only
        // bytes that a transform checks are served from it.
        self.inner.read_range(hash, offset, len).await
    }

    async fn read_range_then(
        &self,
        hash: &str,
        offset: u64,
        len: u64,
        transform: RangeTransform,
    ) -> Result<Result<Bytes, String>, StorageError> {
        let key = self.cache.frame_key(hash, offset, len);
        if let Some(cached) = self.cache.get(&key, FRAMES).await {
            let check = transform.clone();
            let outcome = tokio::task::spawn_blocking(move || check(cached))
                .await
                .map_err(StorageError::internal)?;
            match outcome {
                Ok(decoded) => return Ok(Ok(decoded)),
                Err(detail) => {
                    tracing::warn!(hash, offset, %detail, "cached frame failed verification; dropped, reading the store");
                    self.cache.remove(&key).await;
                }
            }
        }
        // Keep the bytes the store read, for the cache, without a second hand-off.
        let read: Arc<Mutex<Option<Bytes>>> = Arc::default();
        let keep = read.clone();
        let tap: RangeTransform = Arc::new(move |data: Bytes| {
            let out = transform(data.clone());
            if out.is_ok()
                && let Ok(mut slot) = keep.lock()
            {
                *slot = Some(data);
            }
            out
        });
        let outcome = self.inner.read_range_then(hash, offset, len, tap).await?;
        let stored = read.lock().ok().and_then(|mut slot| slot.take());
        if let Some(data) = stored {
            self.fill(key, data);
        }
        Ok(outcome)
    }

    async fn delete(&self, hash: &str) -> Result<(), StorageError> {
        self.inner.delete(hash).await
    }

    async fn list(&self) -> Result<Vec<BlobEntry>, StorageError> {
        self.inner.list().await
    }

    async fn quarantine(&self, hash: &str) -> Result<(), StorageError> {
        self.inner.quarantine(hash).await
    }

    async fn ping(&self) -> Result<(), StorageError> {
        self.inner.ping().await
    }
}
