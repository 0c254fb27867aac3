//! The blob store: large objects in the zstd seekable layout, addressed by content hash.

use async_trait::async_trait;
use bytes::Bytes;

use super::StorageError;

#[cfg(test)]
mod contract;
pub mod fs;
pub mod s3;

/// Work on a range just read, run off the async executor (e.g. decoding a
/// frame). Callable more than once: a cache may try it on its copy first.
pub type RangeTransform = std::sync::Arc<dyn Fn(Bytes) -> Result<Bytes, String> + Send + Sync>;

/// Object storage. Implementations: local file system (default), S3-compatible.
#[async_trait]
pub trait BlobStore: Send + Sync {
    /// Starts a new object; nothing is visible under its hash before `commit`.
    async fn create(&self) -> Result<Box<dyn BlobWriter>, StorageError>;
    /// Reads exactly `len` bytes at `offset` of object `hash`.
    async fn read_range(&self, hash: &str, offset: u64, len: u64) -> Result<Bytes, StorageError>;
    /// Reads a range and applies `transform` to it off the executor. The outer
    /// error is the store's, the inner one the transform's. Stores that read
    /// with blocking calls override it to do both in one hand-off.
    async fn read_range_then(
        &self,
        hash: &str,
        offset: u64,
        len: u64,
        transform: RangeTransform,
    ) -> Result<Result<Bytes, String>, StorageError> {
        let data = self.read_range(hash, offset, len).await?;
        tokio::task::spawn_blocking(move || transform(data))
            .await
            .map_err(StorageError::internal)
    }
    /// Whether each read costs a network round trip (S3), so that a bulk
    /// reader had better fetch contiguous ranges together.
    fn remote(&self) -> bool {
        false
    }
    /// Removes an object (no error when it is already gone).
    async fn delete(&self, hash: &str) -> Result<(), StorageError>;
    /// Every stored object (for GC and verify).
    async fn list(&self) -> Result<Vec<BlobEntry>, StorageError>;
    /// Moves an object out of the way, to be looked at by a human (verify's repair).
    async fn quarantine(&self, hash: &str) -> Result<(), StorageError>;
    /// Checks that the store is usable.
    async fn ping(&self) -> Result<(), StorageError>;
}

/// A stored object as listed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlobEntry {
    /// Content hash (the object's name).
    pub hash: String,
    /// Stored length.
    pub bytes: u64,
    /// Last modification, Unix milliseconds.
    pub modified_ms: i64,
}

/// An object being written.
#[async_trait]
pub trait BlobWriter: Send {
    /// Appends bytes.
    async fn write(&mut self, data: Bytes) -> Result<(), StorageError>;
    /// Makes the object durable under `hash`, atomically replacing whatever
    /// is stored there (the caller commits only when no metadata refers to
    /// an object of that hash; concurrent commits of one content carry the
    /// same bytes).
    async fn commit(self: Box<Self>, hash: &str) -> Result<(), StorageError>;
}

/// Creates `tmp` if needed and removes everything in it (uploads cut short by
/// a crash); answers how many entries were removed.
pub(crate) fn empty_temp_dir(tmp: &std::path::Path) -> std::io::Result<usize> {
    std::fs::create_dir_all(tmp)?;
    let mut removed = 0;
    for entry in std::fs::read_dir(tmp)? {
        let path = entry?.path();
        if path.is_dir() {
            std::fs::remove_dir_all(&path)?;
        } else {
            std::fs::remove_file(&path)?;
        }
        removed += 1;
    }
    Ok(removed)
}

/// Runs blocking file work on the blocking pool.
pub(crate) async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> std::io::Result<T> + Send + 'static,
) -> Result<T, StorageError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(StorageError::internal)?
        .map_err(StorageError::from)
}
