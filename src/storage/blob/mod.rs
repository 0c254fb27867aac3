//! The blob store: large objects in the zstd seekable layout, addressed by content hash.

use async_trait::async_trait;
use bytes::Bytes;

use super::StorageError;

pub mod fs;

/// Object storage. Implementations: local file system (default); S3 later.
#[async_trait]
pub trait BlobStore: Send + Sync {
    /// Starts a new object; nothing is visible under its hash before `commit`.
    async fn create(&self) -> Result<Box<dyn BlobWriter>, StorageError>;
    /// Reads exactly `len` bytes at `offset` of object `hash`.
    async fn read_range(&self, hash: &str, offset: u64, len: u64) -> Result<Bytes, StorageError>;
    /// Removes an object (no error when it is already gone).
    async fn delete(&self, hash: &str) -> Result<(), StorageError>;
    /// Checks that the store is usable.
    async fn ping(&self) -> Result<(), StorageError>;
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
