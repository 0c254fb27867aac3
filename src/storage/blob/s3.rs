//! Blob store on S3-compatible object storage: `<prefix>/blobs/ab/<sha256>.zst`,
//! corrupt objects moved under `<prefix>/quarantine/`.
//!
//! A writer spools to a temp file in the data directory's `tmp/` (emptied at
//! start-up) and uploads at commit, rather than streaming into a multipart
//! upload as the body arrives: the key is the content hash, known only at
//! commit, so streaming would need a temporary key plus a server-side copy
//! (plain S3 has no create-only copy, and one CopyObject stops at 5 GB); a put
//! whose content turns out to be stored already (`settle`'s dedup) would have
//! uploaded every byte for nothing; and a crash would leave incomplete uploads
//! in the bucket instead of a local file. Memory stays bounded either way
//! (a few parts in flight). The price: a large put's upload starts only once
//! its body has been read.
//!
//! Commit: objects up to [`PART_BYTES`] go up in one create-only PUT
//! (`If-None-Match: *`); larger ones in a multipart upload of `PART_BYTES`
//! parts, [`PARTS_IN_FLIGHT`] at a time (object_store's multipart uploads
//! have no create-only mode, so the key is looked up first). By the commit
//! contract an object already under the key is a crash leftover or an
//! identical concurrent commit: it is kept when its bytes equal ours and
//! replaced otherwise. Before commit returns, the stored object is read back
//! and its length and SHA-256 compared with the spooled bytes: S3 gives no
//! SHA-256 of a multipart object (only per-part composites), and its ETag is
//! no MD5 under SSE-KMS or on some compatible stores, so the read-back is the
//! one check that holds everywhere (at the cost of one GET of the object).

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use futures::StreamExt;
use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey};
use object_store::path::Path as ObjectPath;
use object_store::{BackoffConfig, ClientConfigKey, ObjectStore, PutMode, PutPayload, RetryConfig};
use sha2::{Digest, Sha256};
use tempfile::NamedTempFile;
use tokio::io::AsyncReadExt;

use super::{BlobEntry, BlobStore, BlobWriter, blocking};
use crate::storage::StorageError;

/// Objects up to this size go up in one PUT; larger ones in parts of this
/// size (S3 wants at least 5 MiB per part but the last).
pub const PART_BYTES: usize = 8 << 20;
/// Parts of one object uploaded at once: memory held by a commit is this
/// many parts plus the one being read.
pub const PARTS_IN_FLIGHT: usize = 4;
/// S3 takes at most this many parts per upload: objects over 78 GiB get larger parts.
const MAX_PARTS: u64 = 10_000;
/// Bytes hashed per hand-off to the blocking pool when reading an object back.
const HASH_BATCH: usize = 1 << 20;
/// How long `ping` waits: under the Docker health check's 3 s timeout.
const PING_TIMEOUT: Duration = Duration::from_secs(2);
/// Retries of a failed S3 request, and how long they may go on: a store that
/// is down fails a request within seconds, not after object_store's default
/// of ten retries over up to three minutes (a client would time out first).
const RETRIES: usize = 3;
/// See [`RETRIES`].
const RETRY_FOR: Duration = Duration::from_secs(15);
/// Connection deadline of an S3 request, unless the URL or `AWS_*` set one.
const CONNECT_TIMEOUT: &str = "3s";
/// Folder under the prefix where verify's repair moves corrupt objects.
pub const QUARANTINE: &str = "quarantine";

/// Objects in an S3-compatible bucket, under a key prefix.
pub struct S3BlobStore {
    store: Arc<dyn ObjectStore>,
    blobs: ObjectPath,
    quarantine: ObjectPath,
    tmp: PathBuf,
}

impl S3BlobStore {
    /// Configures the bucket `url` names from the `AWS_*` environment and the
    /// URL's options (no request is made: `ping` checks the bucket) and
    /// empties `tmp`; returns the store and how many leftovers were removed.
    pub fn open(url: &S3Url, tmp: PathBuf) -> Result<(Self, usize), StorageError> {
        let mut builder = AmazonS3Builder::from_env().with_bucket_name(&url.bucket);
        for (key, value) in &url.options {
            builder = builder.with_config(*key, value);
        }
        let connect = AmazonS3ConfigKey::Client(ClientConfigKey::ConnectTimeout);
        if builder.get_config_value(&connect).is_none() {
            builder = builder.with_config(connect, CONNECT_TIMEOUT);
        }
        let store = builder
            .with_retry(RetryConfig {
                backoff: BackoffConfig::default(),
                max_retries: RETRIES,
                retry_timeout: RETRY_FOR,
            })
            .build()
            .map_err(|e| StorageError::Unavailable(format!("S3 configuration: {e}")))?;
        Self::with_store(Arc::new(store), &url.prefix, tmp)
    }

    /// The same over any object_store implementation (tests use the in-memory one).
    pub fn with_store(
        store: Arc<dyn ObjectStore>,
        prefix: &str,
        tmp: PathBuf,
    ) -> Result<(Self, usize), StorageError> {
        let removed = super::empty_temp_dir(&tmp)?;
        let root = ObjectPath::from(prefix);
        Ok((
            Self {
                store,
                blobs: root.child("blobs"),
                quarantine: root.child(QUARANTINE),
                tmp,
            },
            removed,
        ))
    }

    /// Key of the object with this hash.
    pub fn key_of(&self, hash: &str) -> ObjectPath {
        object_key(&self.blobs, hash)
    }

    /// Key an object of this hash gets in quarantine.
    pub fn quarantine_key_of(&self, hash: &str) -> ObjectPath {
        self.quarantine.child(format!("{hash}.zst"))
    }
}

fn object_key(blobs: &ObjectPath, hash: &str) -> ObjectPath {
    let fan = hash.get(..2).unwrap_or("00");
    blobs.child(fan).child(format!("{hash}.zst"))
}

/// The hash of an object key `<blobs>/ab/<64 hex>.zst`; `None` for any other key.
fn hash_of_key(blobs: &ObjectPath, key: &ObjectPath) -> Option<String> {
    let mut parts = key.prefix_match(blobs)?;
    let (fan, name) = (parts.next()?, parts.next()?);
    if parts.next().is_some() {
        return None;
    }
    let hash = name.as_ref().strip_suffix(".zst")?;
    let valid = hash.len() == 64
        && hash.bytes().all(|b| b.is_ascii_hexdigit())
        && hash.get(..2) == Some(fan.as_ref());
    valid.then(|| hash.to_owned())
}

#[async_trait]
impl BlobStore for S3BlobStore {
    fn remote(&self) -> bool {
        true
    }

    async fn create(&self) -> Result<Box<dyn BlobWriter>, StorageError> {
        let tmp = self.tmp.clone();
        let file =
            blocking(move || tempfile::Builder::new().prefix("s3-put-").tempfile_in(tmp)).await?;
        Ok(Box::new(S3BlobWriter {
            spool: Some(Spool {
                file,
                len: 0,
                hasher: Sha256::new(),
            }),
            store: self.store.clone(),
            blobs: self.blobs.clone(),
        }))
    }

    async fn read_range(&self, hash: &str, offset: u64, len: u64) -> Result<Bytes, StorageError> {
        let key = self.key_of(hash);
        let end = offset
            .checked_add(len)
            .ok_or_else(|| StorageError::internal("range too large"))?;
        if len == 0 {
            return Ok(Bytes::new());
        }
        match self.store.get_range(&key, offset..end).await {
            Ok(bytes) if bytes.len() as u64 == len => Ok(bytes),
            Ok(_) => Err(StorageError::Truncated(hash.to_owned())),
            Err(object_store::Error::NotFound { .. }) => {
                Err(StorageError::MissingObject(hash.to_owned()))
            }
            // A range starting past the end is an error answer (416), not a
            // short read: the object's size tells which it was.
            Err(e) => match self.store.head(&key).await {
                Ok(meta) if meta.size < end => Err(StorageError::Truncated(hash.to_owned())),
                Err(object_store::Error::NotFound { .. }) => {
                    Err(StorageError::MissingObject(hash.to_owned()))
                }
                _ => Err(store_error(e)),
            },
        }
    }

    async fn delete(&self, hash: &str) -> Result<(), StorageError> {
        match self.store.delete(&self.key_of(hash)).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(store_error(e)),
        }
    }

    async fn list(&self) -> Result<Vec<BlobEntry>, StorageError> {
        let mut found = Vec::new();
        let mut objects = self.store.list(Some(&self.blobs));
        while let Some(meta) = objects.next().await {
            let meta = meta.map_err(store_error)?;
            if let Some(hash) = hash_of_key(&self.blobs, &meta.location) {
                found.push(BlobEntry {
                    hash,
                    bytes: meta.size,
                    modified_ms: meta.last_modified.timestamp_millis(),
                });
            }
        }
        found.sort_by(|a, b| a.hash.cmp(&b.hash));
        Ok(found)
    }

    async fn quarantine(&self, hash: &str) -> Result<(), StorageError> {
        let (from, to) = (self.key_of(hash), self.quarantine_key_of(hash));
        match self.store.copy(&from, &to).await {
            Err(object_store::Error::NotFound { .. }) => return Ok(()),
            other => other.map_err(store_error)?,
        }
        self.delete(hash).await
    }

    async fn ping(&self) -> Result<(), StorageError> {
        // One listing of the fan folders (at most 256 names): fails when the
        // endpoint, the bucket or the credentials are wrong.
        let listing = self.store.list_with_delimiter(Some(&self.blobs));
        match tokio::time::timeout(PING_TIMEOUT, listing).await {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(e)) => Err(StorageError::Unavailable(e.to_string())),
            Err(_) => Err(StorageError::Unavailable(format!(
                "the bucket did not answer within {} s",
                PING_TIMEOUT.as_secs()
            ))),
        }
    }
}

/// Maps an object_store failure: the store refusing or not answering is
/// `Unavailable` (503), anything else an I/O error.
fn store_error(err: object_store::Error) -> StorageError {
    match err {
        object_store::Error::Generic { .. }
        | object_store::Error::PermissionDenied { .. }
        | object_store::Error::Unauthenticated { .. } => {
            StorageError::Unavailable(format!("object store: {err}"))
        }
        other => StorageError::Io(io::Error::other(other)),
    }
}

/// The bytes written so far: a temp file, its length and SHA-256.
struct Spool {
    file: NamedTempFile,
    len: u64,
    hasher: Sha256,
}

/// What a stored object must hold.
struct Expected {
    len: u64,
    digest: [u8; 32],
}

/// A spooled object that is uploaded at commit (the temp file goes when dropped).
struct S3BlobWriter {
    spool: Option<Spool>,
    store: Arc<dyn ObjectStore>,
    blobs: ObjectPath,
}

#[async_trait]
impl BlobWriter for S3BlobWriter {
    async fn write(&mut self, data: Bytes) -> Result<(), StorageError> {
        let mut spool = self
            .spool
            .take()
            .ok_or_else(|| StorageError::internal("write after a failed write"))?;
        let spool = blocking(move || {
            spool.file.write_all(&data)?;
            spool.hasher.update(&data);
            spool.len += data.len() as u64;
            Ok(spool)
        })
        .await?;
        self.spool = Some(spool);
        Ok(())
    }

    async fn commit(mut self: Box<Self>, hash: &str) -> Result<(), StorageError> {
        let spool = self
            .spool
            .take()
            .ok_or_else(|| StorageError::internal("commit after a failed write"))?;
        let expected = Expected {
            len: spool.len,
            digest: spool.hasher.finalize().into(),
        };
        let key = object_key(&self.blobs, hash);
        let store = self.store.as_ref();
        let started = std::time::Instant::now();
        let checked = upload(store, &key, spool.file.path(), &expected).await?;
        let uploaded = started.elapsed();
        if checked || stored_matches(store, &key, &expected).await? {
            tracing::debug!(
                bytes = expected.len,
                found_stored = checked,
                upload_ms = uploaded.as_millis() as u64,
                check_ms = (started.elapsed() - uploaded).as_millis() as u64,
                "object committed to S3"
            );
            Ok(())
        } else {
            Err(StorageError::Io(io::Error::other(format!(
                "object {key} as stored differs from the bytes uploaded"
            ))))
        }
    }
}

/// Puts the spooled file at `path` under `key` (see the module's notes);
/// answers true when it found the same bytes stored already (checked).
async fn upload(
    store: &dyn ObjectStore,
    key: &ObjectPath,
    path: &Path,
    expected: &Expected,
) -> Result<bool, StorageError> {
    if expected.len > PART_BYTES as u64 {
        if stored_matches(store, key, expected).await? {
            return Ok(true);
        }
        return put_in_parts(store, key, path, expected.len)
            .await
            .map(|()| false);
    }
    let path = path.to_owned();
    let data = Bytes::from(blocking(move || std::fs::read(path)).await?);
    match store
        .put_opts(key, PutPayload::from(data.clone()), PutMode::Create.into())
        .await
    {
        Ok(_) => Ok(false),
        Err(object_store::Error::AlreadyExists { .. })
            if stored_matches(store, key, expected).await? =>
        {
            Ok(true)
        }
        // A leftover with other bytes, or a store without conditional puts.
        Err(
            object_store::Error::AlreadyExists { .. }
            | object_store::Error::NotImplemented
            | object_store::Error::NotSupported { .. },
        ) => store
            .put(key, PutPayload::from(data))
            .await
            .map(|_| false)
            .map_err(store_error),
        Err(e) => Err(store_error(e)),
    }
}

/// A multipart upload of the file at `path`, aborted when any part fails.
async fn put_in_parts(
    store: &dyn ObjectStore,
    key: &ObjectPath,
    path: &Path,
    len: u64,
) -> Result<(), StorageError> {
    let part = usize::try_from(len.div_ceil(MAX_PARTS))
        .unwrap_or(usize::MAX)
        .max(PART_BYTES);
    let mut file = tokio::fs::File::open(path).await?;
    let mut upload = store.put_multipart(key).await.map_err(store_error)?;
    let mut in_flight = tokio::task::JoinSet::new();
    let sent: Result<(), StorageError> = async {
        let mut left = len;
        while left > 0 {
            let size = usize::try_from(left).map_or(part, |left| left.min(part));
            let mut buf = vec![0; size];
            file.read_exact(&mut buf).await?;
            while in_flight.len() >= PARTS_IN_FLIGHT {
                part_done(in_flight.join_next().await)?;
            }
            // Part numbers follow the order of put_part calls, whatever order they finish in.
            in_flight.spawn(upload.put_part(PutPayload::from(Bytes::from(buf))));
            left -= size as u64;
        }
        while let Some(done) = in_flight.join_next().await {
            part_done(Some(done))?;
        }
        Ok(())
    }
    .await;
    let done = match sent {
        Ok(()) => upload.complete().await.map(drop).map_err(store_error),
        Err(e) => Err(e),
    };
    if done.is_err() {
        in_flight.shutdown().await;
        if let Err(e) = upload.abort().await {
            tracing::warn!(error = %e, key = %key, "could not abort a failed multipart upload");
        }
    }
    done
}

fn part_done(
    joined: Option<Result<object_store::Result<()>, tokio::task::JoinError>>,
) -> Result<(), StorageError> {
    match joined {
        None => Ok(()),
        Some(Ok(result)) => result.map_err(store_error),
        Some(Err(e)) => Err(StorageError::internal(e)),
    }
}

/// Whether the object under `key` holds exactly the expected bytes (false
/// when there is none); reads it whole, hashing off the executor.
async fn stored_matches(
    store: &dyn ObjectStore,
    key: &ObjectPath,
    expected: &Expected,
) -> Result<bool, StorageError> {
    let got = match store.get(key).await {
        Ok(got) => got,
        Err(object_store::Error::NotFound { .. }) => return Ok(false),
        Err(e) => return Err(store_error(e)),
    };
    if got.meta.size != expected.len {
        return Ok(false);
    }
    let mut stream = got.into_stream();
    let (mut hasher, mut len, mut batch, mut batched) = (Sha256::new(), 0, Vec::new(), 0);
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(store_error)?;
        len += chunk.len() as u64;
        batched += chunk.len();
        batch.push(chunk);
        if batched >= HASH_BATCH {
            hasher = hash_batch(hasher, std::mem::take(&mut batch)).await?;
            batched = 0;
        }
    }
    let digest: [u8; 32] = hash_batch(hasher, batch).await?.finalize().into();
    Ok(len == expected.len && digest == expected.digest)
}

async fn hash_batch(mut hasher: Sha256, batch: Vec<Bytes>) -> Result<Sha256, StorageError> {
    if batch.is_empty() {
        return Ok(hasher);
    }
    blocking(move || {
        for chunk in &batch {
            hasher.update(chunk);
        }
        Ok(hasher)
    })
    .await
}

#[cfg(test)]
mod tests;
mod url;

pub use url::S3Url;
