//! Blob store on the local file system: `blobs/ab/<sha256>.zst`, temp files in `tmp/`.
//!
//! Write order (durable before the answer): temp file created with O_EXCL on
//! the same file system → written → fsync → renamed into place (atomic) →
//! fsync of the directory. The domain commits only objects that no metadata
//! refers to yet; a dedup hit on a stored object drops its temp file.

use std::fs::{self, File};
use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use async_trait::async_trait;
use bytes::Bytes;
use tempfile::NamedTempFile;

use super::{BlobEntry, BlobStore, BlobWriter, RangeTransform, blocking};
use crate::storage::StorageError;

/// Objects as files under a root directory.
pub struct FsBlobStore {
    root: PathBuf,
    tmp: PathBuf,
}

impl FsBlobStore {
    /// Opens the store, creating its directories and emptying `tmp` of
    /// leftovers from a crash; returns the store and how many were removed.
    pub fn open(root: PathBuf, tmp: PathBuf) -> Result<(Self, usize), StorageError> {
        fs::create_dir_all(&root)?;
        let removed = super::empty_temp_dir(&tmp)?;
        Ok((Self { root, tmp }, removed))
    }

    /// Path of the object with this hash.
    pub fn path_of(&self, hash: &str) -> PathBuf {
        let fan = hash.get(..2).unwrap_or("00");
        self.root.join(fan).join(format!("{hash}.zst"))
    }
}

#[async_trait]
impl BlobStore for FsBlobStore {
    async fn create(&self) -> Result<Box<dyn BlobWriter>, StorageError> {
        let tmp = self.tmp.clone();
        let file =
            blocking(move || tempfile::Builder::new().prefix("put-").tempfile_in(tmp)).await?;
        Ok(Box::new(FsBlobWriter {
            file: Some(file),
            root: self.root.clone(),
        }))
    }

    async fn read_range(&self, hash: &str, offset: u64, len: u64) -> Result<Bytes, StorageError> {
        let (path, hash) = (self.path_of(hash), hash.to_owned());
        tokio::task::spawn_blocking(move || read_file_range(&path, &hash, offset, len))
            .await
            .map_err(StorageError::internal)?
    }

    async fn read_range_then(
        &self,
        hash: &str,
        offset: u64,
        len: u64,
        transform: RangeTransform,
    ) -> Result<Result<Bytes, String>, StorageError> {
        let (path, hash) = (self.path_of(hash), hash.to_owned());
        tokio::task::spawn_blocking(move || {
            read_file_range(&path, &hash, offset, len).map(|data| transform(data))
        })
        .await
        .map_err(StorageError::internal)?
    }

    async fn delete(&self, hash: &str) -> Result<(), StorageError> {
        let path = self.path_of(hash);
        blocking(move || match fs::remove_file(path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            other => other,
        })
        .await
    }

    async fn list(&self) -> Result<Vec<BlobEntry>, StorageError> {
        let root = self.root.clone();
        blocking(move || list_objects(&root)).await
    }

    async fn quarantine(&self, hash: &str) -> Result<(), StorageError> {
        let (path, dir) = (self.path_of(hash), self.root.join(QUARANTINE));
        let target = dir.join(format!("{hash}.zst"));
        let root = self.root.clone();
        blocking(move || {
            if !dir.is_dir() {
                fs::create_dir_all(&dir)?;
                sync_dir(&root)?;
            }
            match fs::rename(&path, &target) {
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
                other => other?,
            }
            sync_dir(&dir)?;
            path.parent().map_or(Ok(()), sync_dir)
        })
        .await
    }

    async fn ping(&self) -> Result<(), StorageError> {
        let (root, tmp) = (self.root.clone(), self.tmp.clone());
        blocking(move || {
            for dir in [root, tmp] {
                if !fs::metadata(&dir)?.is_dir() {
                    return Err(io::Error::other(format!(
                        "{} is not a directory",
                        dir.display()
                    )));
                }
            }
            Ok(())
        })
        .await
    }
}

/// Directory under the root where verify's repair moves corrupt objects.
pub const QUARANTINE: &str = "quarantine";

/// Objects under `root`: `<2 hex>/<64 hex>.zst`; anything else is not an object.
fn list_objects(root: &Path) -> io::Result<Vec<BlobEntry>> {
    let mut found = Vec::new();
    for fan in fs::read_dir(root)? {
        let fan = fan?;
        let name = fan.file_name();
        let is_fan = name.len() == 2
            && name
                .to_str()
                .is_some_and(|n| n.bytes().all(|b| b.is_ascii_hexdigit()));
        if !is_fan || !fan.file_type()?.is_dir() {
            continue;
        }
        for entry in fs::read_dir(fan.path())? {
            let entry = entry?;
            let file_name = entry.file_name();
            let Some(hash) = file_name.to_str().and_then(|n| n.strip_suffix(".zst")) else {
                continue;
            };
            if hash.len() != 64 || !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
                continue;
            }
            let meta = entry.metadata()?;
            if !meta.is_file() {
                continue;
            }
            let modified_ms = meta
                .modified()
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
            found.push(BlobEntry {
                hash: hash.to_owned(),
                bytes: meta.len(),
                modified_ms,
            });
        }
    }
    found.sort_by(|a, b| a.hash.cmp(&b.hash));
    Ok(found)
}

/// Reads `len` bytes at `offset` of the object file at `path`.
fn read_file_range(path: &Path, hash: &str, offset: u64, len: u64) -> Result<Bytes, StorageError> {
    let len = usize::try_from(len).map_err(|_| StorageError::internal("range too large"))?;
    let file = File::open(path).map_err(|e| match e.kind() {
        io::ErrorKind::NotFound => StorageError::MissingObject(hash.to_owned()),
        _ => StorageError::from(e),
    })?;
    let mut buf = vec![0; len];
    file.read_exact_at(&mut buf, offset)
        .map_err(|e| match e.kind() {
            io::ErrorKind::UnexpectedEof => StorageError::Truncated(hash.to_owned()),
            _ => StorageError::from(e),
        })?;
    Ok(Bytes::from(buf))
}

/// A temp file that becomes an object at commit (or disappears when dropped).
struct FsBlobWriter {
    file: Option<NamedTempFile>,
    root: PathBuf,
}

#[async_trait]
impl BlobWriter for FsBlobWriter {
    async fn write(&mut self, data: Bytes) -> Result<(), StorageError> {
        let mut file = self
            .file
            .take()
            .ok_or_else(|| StorageError::internal("write after a failed write"))?;
        let file = blocking(move || file.write_all(&data).map(|()| file)).await?;
        self.file = Some(file);
        Ok(())
    }

    async fn commit(mut self: Box<Self>, hash: &str) -> Result<(), StorageError> {
        let file = self
            .file
            .take()
            .ok_or_else(|| StorageError::internal("commit after a failed write"))?;
        let fan = self.root.join(hash.get(..2).unwrap_or("00"));
        let target = fan.join(format!("{hash}.zst"));
        let root = self.root.clone();
        blocking(move || {
            file.as_file().sync_all()?;
            if !fan.is_dir() {
                fs::create_dir_all(&fan)?;
                sync_dir(&root)?;
            }
            file.persist(&target).map_err(|e| e.error)?;
            sync_dir(&fan)
        })
        .await
    }
}

fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use std::sync::Arc;

    use super::FsBlobStore;
    use crate::storage::blob::contract::{BlobSubject, blob_contract_suite};

    /// A fresh store in a temporary directory.
    async fn open() -> Option<BlobSubject> {
        let dir = tempfile::tempdir().unwrap();
        let (store, _) =
            FsBlobStore::open(dir.path().join("blobs"), dir.path().join("tmp")).unwrap();
        Some(BlobSubject {
            store: Arc::new(store),
            _keep: vec![dir],
        })
    }

    blob_contract_suite!(open);
}
