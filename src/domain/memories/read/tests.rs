//! Sequential reads: frames fetched several per store request, each still checked.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use futures::StreamExt;

use super::*;
use crate::domain::memories::ingest::{IngestConfig, ingest};
use crate::domain::memories::locks::ObjectLocks;
use crate::domain::memories::read::content;
use crate::storage::blob::fs::FsBlobStore;
use crate::storage::blob::{BlobEntry, BlobWriter};
use crate::storage::meta::MetaStore;
use crate::storage::meta::sqlite::SqliteMetaStore;

/// File-system objects, counting the reads the reader makes.
struct Counting {
    inner: FsBlobStore,
    reads: AtomicUsize,
}

#[async_trait]
impl BlobStore for Counting {
    async fn create(&self) -> Result<Box<dyn BlobWriter>, StorageError> {
        self.inner.create().await
    }
    async fn read_range(&self, hash: &str, offset: u64, len: u64) -> Result<Bytes, StorageError> {
        self.reads.fetch_add(1, Ordering::Relaxed);
        self.inner.read_range(hash, offset, len).await
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

/// Lines of varied text, `len` bytes or a little more.
fn text(len: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(len + 64);
    let mut n = 0u64;
    while out.len() < len {
        out.extend_from_slice(
            format!("line {n} value {}\n", n.wrapping_mul(2_654_435_761) % 9973).as_bytes(),
        );
        n += 1;
    }
    out
}

/// `content` stored in 64-byte frames; the reader's store, and the object.
async fn stored(dir: &tempfile::TempDir, content: &[u8]) -> (Arc<Counting>, Arc<ObjectRecord>) {
    let (fs, _) = FsBlobStore::open(dir.path().join("objects"), dir.path().join("tmp")).unwrap();
    let blobs = Arc::new(Counting {
        inner: fs,
        reads: AtomicUsize::new(0),
    });
    let url = format!("sqlite://{}", dir.path().join("meta.sqlite").display());
    let meta = SqliteMetaStore::open(&url).await.unwrap();
    let config = IngestConfig {
        frame_bytes: 64,
        zstd_level: 3,
        raw_inline_max: 0,
        inline_object_max: 0,
        max_upload_bytes: None,
        parallelism: 2,
        exact_tokens_max: 0,
        exact_tokens_after: u64::MAX,
    };
    let body = futures::stream::iter([Ok::<_, std::io::Error>(Bytes::copy_from_slice(content))]);
    let ingested = ingest(
        body,
        false,
        blobs.as_ref(),
        &meta,
        &ObjectLocks::default(),
        &config,
        None,
    )
    .await
    .unwrap();
    assert_eq!(ingested.object.layout, Layout::Blob);
    meta.close().await;
    (blobs, Arc::new(ingested.object))
}

async fn read_all(reader: ObjectReader, id: &str, end: u64) -> Result<Vec<u8>, DomainError> {
    let mut stream = Box::pin(content::stream(reader, id.to_owned(), 0, end, true).await?);
    let mut out = Vec::new();
    while let Some(piece) = stream.next().await {
        out.extend_from_slice(&piece?);
    }
    Ok(out)
}

#[tokio::test]
async fn a_whole_read_fetches_many_frames_per_request() {
    let dir = tempfile::tempdir().unwrap();
    let content = text(300_000);
    let (blobs, object) = stored(&dir, &content).await;
    let frames = object.frames.len();
    assert!(frames > 4000, "{frames} frames");
    let reader = ObjectReader::new(object.clone(), blobs.clone());
    let back = read_all(reader, &object.hash, object.bytes).await.unwrap();
    assert!(back == content, "content differs");
    // 300 KB of content fits one 4 MiB read-ahead.
    assert_eq!(blobs.reads.load(Ordering::Relaxed), 1);

    // A range inside one frame reads that frame only.
    blobs.reads.store(0, Ordering::Relaxed);
    let mut reader = ObjectReader::new(object.clone(), blobs.clone()).sequential(10);
    assert_eq!(&reader.read(0, 10).await.unwrap()[..], &content[..10]);
    assert_eq!(blobs.reads.load(Ordering::Relaxed), 1);

    // Slices (not sequential) still read frame by frame.
    blobs.reads.store(0, Ordering::Relaxed);
    let mut reader = ObjectReader::new(object.clone(), blobs.clone());
    let piece = reader.read(1000, 640).await.unwrap();
    assert_eq!(&piece[..], &content[1000..1640]);
    assert!(blobs.reads.load(Ordering::Relaxed) >= 10);
}

#[tokio::test]
async fn a_damaged_frame_in_a_read_ahead_fails_the_read_at_that_frame() {
    let dir = tempfile::tempdir().unwrap();
    let content = text(50_000);
    let (blobs, object) = stored(&dir, &content).await;
    let bad = object.frames.len() / 2;
    let path = blobs.inner.path_of(&object.hash);
    let mut file = std::fs::read(&path).unwrap();
    let at = object.frames[bad].stored_offset as usize + object.frames[bad].stored_len as usize / 2;
    file[at] ^= 0x40;
    std::fs::write(&path, file).unwrap();

    let reader = ObjectReader::new(object.clone(), blobs.clone());
    let mut stream = Box::pin(
        content::stream(reader, object.hash.clone(), 0, object.bytes, true)
            .await
            .unwrap(),
    );
    let mut good = Vec::new();
    let error = loop {
        match stream
            .next()
            .await
            .expect("the stream ended without an error")
        {
            Ok(piece) => good.extend_from_slice(&piece),
            Err(e) => break e,
        }
    };
    // Every byte before the damaged frame came out, and nothing after it.
    assert_eq!(good.len() as u64, object.frames[bad].content_offset);
    assert!(good == content[..good.len()]);
    match error {
        DomainError::Corrupt { id, detail } => {
            assert_eq!(id, object.hash);
            assert!(detail.contains("failed verification"), "{detail}");
        }
        other => panic!("not an integrity error: {other:?}"),
    }
}
