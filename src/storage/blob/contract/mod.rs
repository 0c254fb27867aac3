//! The blob store's contract: one suite of tests every backend passes alike
//! (local files; S3 over object_store's in-memory store; S3 against the
//! endpoint `CAIRN_TEST_S3_ENDPOINT` names, skipped without one unless `CI`
//! is set). Each backend's tests open a fresh store and name
//! [`blob_contract_suite!`] once; what only one backend does (S3's key
//! layout, multipart uploads, spool files) is tested beside it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use bytes::Bytes;
use sha2::{Digest, Sha256};

use super::{BlobStore, RangeTransform};
use crate::storage::StorageError;

/// A store under test, and what must live as long as it (temporary directories).
pub(in crate::storage::blob) struct BlobSubject {
    /// The store, as the application holds it.
    pub(in crate::storage::blob) store: Arc<dyn BlobStore>,
    /// Dropped when the test is over.
    pub(in crate::storage::blob) _keep: Vec<tempfile::TempDir>,
}

/// One `#[tokio::test]` per contract test, each on a store `$open` makes
/// (an `async fn() -> Option<BlobSubject>`; `None` skips the test).
macro_rules! blob_contract_suite {
    ($open:path) => {
        $crate::storage::blob::contract::blob_contract_suite!(
            @each $open,
            a_committed_object_reads_back_by_range_and_is_listed,
            missing_and_short_reads_are_the_errors_readers_expect,
            delete_and_quarantine_take_an_object_out_and_may_repeat,
            an_uncommitted_writer_leaves_nothing,
            a_commit_replaces_other_bytes_under_the_same_hash,
            concurrent_commits_of_one_content_leave_it_whole,
            a_range_is_transformed_off_the_executor,
        );
    };
    (@each $open:path, $($name:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                let Some(subject) = $open().await else { return };
                $crate::storage::blob::contract::$name(subject.store.clone()).await;
            }
        )*
    };
}
pub(in crate::storage::blob) use blob_contract_suite;

/// The hash an object of `data` is stored under.
pub(in crate::storage::blob) fn hash_of(data: &[u8]) -> String {
    hex::encode(Sha256::digest(data))
}

/// Bytes that differ from one offset to the next.
pub(in crate::storage::blob) fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed) ^ (i >> 9) as u8)
        .collect()
}

/// Writes `data` in pieces and commits it under `hash`.
async fn put(store: &dyn BlobStore, data: &[u8], hash: &str) {
    let mut writer = store.create().await.unwrap();
    for piece in data.chunks(70_000) {
        writer.write(Bytes::copy_from_slice(piece)).await.unwrap();
    }
    writer.commit(hash).await.unwrap();
}

/// A committed object reads back by any range and is listed with its size.
pub(in crate::storage::blob) async fn a_committed_object_reads_back_by_range_and_is_listed(
    store: Arc<dyn BlobStore>,
) {
    store.ping().await.unwrap();
    assert!(store.list().await.unwrap().is_empty());
    let data = pattern(200_000, 1);
    let hash = hash_of(&data);
    put(&*store, &data, &hash).await;
    for (offset, len) in [(0, 200_000), (1_000, 5_000), (199_999, 1), (70_000, 0)] {
        let slice = store.read_range(&hash, offset, len).await.unwrap();
        let (a, b) = (offset as usize, (offset + len) as usize);
        assert_eq!(&slice[..], &data[a..b], "{offset}+{len}");
    }
    let listed = store.list().await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(
        (listed[0].hash.as_str(), listed[0].bytes),
        (hash.as_str(), 200_000)
    );
    assert!(listed[0].modified_ms > 1_600_000_000_000);
}

/// A missing object is `MissingObject` naming it; a read past the end is
/// `Truncated`; a read up to the end is whole.
pub(in crate::storage::blob) async fn missing_and_short_reads_are_the_errors_readers_expect(
    store: Arc<dyn BlobStore>,
) {
    let data = vec![7; 100];
    let hash = hash_of(&data);
    assert!(matches!(
        store.read_range(&hash, 0, 10).await,
        Err(StorageError::MissingObject(h)) if h == hash
    ));
    put(&*store, &data, &hash).await;
    assert!(matches!(
        store.read_range(&hash, 90, 20).await,
        Err(StorageError::Truncated(_))
    ));
    assert!(matches!(
        store.read_range(&hash, 200, 20).await,
        Err(StorageError::Truncated(_))
    ));
    assert_eq!(store.read_range(&hash, 90, 10).await.unwrap().len(), 10);
}

/// Delete and quarantine take an object out of reads and lists, and
/// either may be repeated (or come after the other) without an error.
pub(in crate::storage::blob) async fn delete_and_quarantine_take_an_object_out_and_may_repeat(
    store: Arc<dyn BlobStore>,
) {
    let (a, b) = (pattern(1_000, 4), pattern(1_000, 5));
    let (ha, hb) = (hash_of(&a), hash_of(&b));
    put(&*store, &a, &ha).await;
    put(&*store, &b, &hb).await;
    let mut hashes = vec![ha.clone(), hb.clone()];
    hashes.sort();
    let mut listed: Vec<String> = store
        .list()
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.hash)
        .collect();
    listed.sort();
    assert_eq!(listed, hashes);
    store.quarantine(&ha).await.unwrap();
    assert!(matches!(
        store.read_range(&ha, 0, 1).await,
        Err(StorageError::MissingObject(_))
    ));
    store.quarantine(&ha).await.unwrap();
    store.delete(&ha).await.unwrap();
    store.delete(&hb).await.unwrap();
    store.delete(&hb).await.unwrap();
    assert!(matches!(
        store.read_range(&hb, 0, 1).await,
        Err(StorageError::MissingObject(_))
    ));
    assert!(store.list().await.unwrap().is_empty());
    // A content stored again after its delete reads back.
    put(&*store, &b, &hb).await;
    assert_eq!(&store.read_range(&hb, 0, 1_000).await.unwrap()[..], &b[..]);
}

/// A writer dropped before its commit leaves no object behind.
pub(in crate::storage::blob) async fn an_uncommitted_writer_leaves_nothing(
    store: Arc<dyn BlobStore>,
) {
    let data = pattern(10_000, 6);
    let mut writer = store.create().await.unwrap();
    writer.write(Bytes::from(data.clone())).await.unwrap();
    drop(writer);
    assert!(store.list().await.unwrap().is_empty());
    assert!(matches!(
        store.read_range(&hash_of(&data), 0, 1).await,
        Err(StorageError::MissingObject(_))
    ));
}

/// A commit replaces whatever was stored under its hash (a leftover of a
/// crash): the object reads as the bytes of the last commit.
pub(in crate::storage::blob) async fn a_commit_replaces_other_bytes_under_the_same_hash(
    store: Arc<dyn BlobStore>,
) {
    let data = pattern(50_000, 7);
    let hash = hash_of(&data);
    put(&*store, b"left by a crash", &hash).await;
    put(&*store, &data, &hash).await;
    assert_eq!(
        &store.read_range(&hash, 0, 50_000).await.unwrap()[..],
        &data[..]
    );
    let listed = store.list().await.unwrap();
    assert_eq!((listed.len(), listed[0].bytes), (1, 50_000));
}

/// Racing commits of one content (as replicas' puts may be) leave one
/// whole object.
pub(in crate::storage::blob) async fn concurrent_commits_of_one_content_leave_it_whole(
    store: Arc<dyn BlobStore>,
) {
    let data = Arc::new(pattern(300_000, 8));
    let hash = hash_of(&data);
    let tasks: Vec<_> = (0..8)
        .map(|_| {
            let (store, data, hash) = (store.clone(), data.clone(), hash.clone());
            tokio::spawn(async move { put(&*store, &data, &hash).await })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    let whole = store.read_range(&hash, 0, 300_000).await.unwrap();
    assert!(whole[..] == data[..]);
    assert_eq!(store.list().await.unwrap().len(), 1);
}

/// `read_range_then` hands the range to the transform and answers both its
/// result and its error apart from the store's.
pub(in crate::storage::blob) async fn a_range_is_transformed_off_the_executor(
    store: Arc<dyn BlobStore>,
) {
    let data = pattern(5_000, 9);
    let hash = hash_of(&data);
    put(&*store, &data, &hash).await;
    let reverse: RangeTransform = Arc::new(|bytes: Bytes| {
        let mut v = bytes.to_vec();
        v.reverse();
        Ok(Bytes::from(v))
    });
    let out = store
        .read_range_then(&hash, 100, 50, reverse.clone())
        .await
        .unwrap()
        .unwrap();
    let mut expected = data[100..150].to_vec();
    expected.reverse();
    assert_eq!(&out[..], &expected[..]);
    let failing: RangeTransform = Arc::new(|_| Err("bad frame".to_owned()));
    let answer = store.read_range_then(&hash, 0, 10, failing).await.unwrap();
    assert_eq!(answer, Err("bad frame".to_owned()));
    assert!(matches!(
        store
            .read_range_then(&hash_of(b"none"), 0, 1, reverse)
            .await,
        Err(StorageError::MissingObject(_))
    ));
}
