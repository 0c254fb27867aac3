//! The S3 store's logic over object_store's in-memory store (no server
//! needed): its key layout, multipart uploads, leftovers and spool files;
//! and the blob contract, on the in-memory store and against the S3
//! endpoint `CAIRN_TEST_S3_ENDPOINT` names. `tests/s3.rs` runs the whole
//! application against that endpoint.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use object_store::memory::InMemory;

use super::*;
use crate::storage::blob::contract::{hash_of, pattern};

fn store(prefix: &str) -> (S3BlobStore, Arc<InMemory>, tempfile::TempDir) {
    let memory = Arc::new(InMemory::new());
    let dir = tempfile::tempdir().unwrap();
    let (store, removed) =
        S3BlobStore::with_store(memory.clone(), prefix, dir.path().join("tmp")).unwrap();
    assert_eq!(removed, 0);
    (store, memory, dir)
}

async fn put(store: &S3BlobStore, data: &[u8], hash: &str) {
    let mut writer = store.create().await.unwrap();
    for piece in data.chunks(300_000) {
        writer.write(Bytes::copy_from_slice(piece)).await.unwrap();
    }
    writer.commit(hash).await.unwrap();
}

async fn stored(memory: &InMemory, key: &str) -> object_store::Result<Bytes> {
    memory.get(&ObjectPath::from(key)).await?.bytes().await
}

#[test]
fn urls_name_bucket_prefix_and_options() {
    let url = S3Url::parse(
        "s3://bucket/team/cairn/?endpoint=http://127.0.0.1:5000&allow_http=true&region=eu-west-1&secret_access_key=hush",
    )
    .unwrap();
    assert_eq!(url.bucket, "bucket");
    assert_eq!(url.prefix, "team/cairn");
    assert_eq!(url.options.len(), 4);
    assert!(
        url.options
            .contains(&(AmazonS3ConfigKey::Region, "eu-west-1".into()))
    );
    assert!(!format!("{url:?}").contains("hush"), "{url:?}");
    let bare = S3Url::parse("s3://bucket").unwrap();
    assert_eq!((bare.prefix.as_str(), bare.options.len()), ("", 0));
    for bad in [
        "s3:///prefix",
        "file:///tmp",
        "s3://b?no_such_option=1",
        "s3://b?bucket=other",
    ] {
        assert!(S3Url::parse(bad).is_err(), "{bad}");
    }
}

#[tokio::test]
async fn a_committed_object_lies_under_the_fan_layout_and_reads_back_by_range() {
    let (store, memory, dir) = store("team/cairn");
    let data = pattern(200_000, 1);
    let hash = hash_of(&data);
    put(&store, &data, &hash).await;
    let key = format!("team/cairn/blobs/{}/{hash}.zst", &hash[..2]);
    assert_eq!(store.key_of(&hash).as_ref(), key);
    assert_eq!(&stored(&memory, &key).await.unwrap()[..], &data[..]);
    let slice = store.read_range(&hash, 1_000, 5_000).await.unwrap();
    assert_eq!(&slice[..], &data[1_000..6_000]);
    let listed = store.list().await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(
        (listed[0].hash.as_str(), listed[0].bytes),
        (hash.as_str(), 200_000)
    );
    assert!(listed[0].modified_ms > 1_600_000_000_000);
    assert_eq!(
        std::fs::read_dir(dir.path().join("tmp")).unwrap().count(),
        0,
        "the spool file is gone after commit"
    );
    store.ping().await.unwrap();
}

#[tokio::test]
async fn objects_over_one_part_go_up_in_parts_and_arrive_whole() {
    let (store, memory, _dir) = store("");
    let data = pattern(2 * PART_BYTES + 12_345, 2);
    let hash = hash_of(&data);
    put(&store, &data, &hash).await;
    let key = format!("blobs/{}/{hash}.zst", &hash[..2]);
    assert!(stored(&memory, &key).await.unwrap()[..] == data[..]);
    let tail = store
        .read_range(&hash, data.len() as u64 - 100, 100)
        .await
        .unwrap();
    assert_eq!(&tail[..], &data[data.len() - 100..]);
}

#[tokio::test]
async fn a_leftover_with_other_bytes_is_replaced_and_one_with_ours_is_kept() {
    for len in [50_000, PART_BYTES + 1] {
        let (store, memory, _dir) = store("p");
        let data = pattern(len, 3);
        let hash = hash_of(&data);
        let key = store.key_of(&hash);
        memory
            .put(&key, PutPayload::from(b"left by a crash".to_vec()))
            .await
            .unwrap();
        put(&store, &data, &hash).await;
        assert!(stored(&memory, key.as_ref()).await.unwrap()[..] == data[..]);
        // Same bytes already there: nothing is written again.
        let before = memory.head(&key).await.unwrap().e_tag;
        put(&store, &data, &hash).await;
        assert_eq!(memory.head(&key).await.unwrap().e_tag, before, "{len}");
    }
}

#[tokio::test]
async fn delete_quarantine_and_list_skip_what_is_not_an_object() {
    let (store, memory, _dir) = store("p");
    let (a, b) = (pattern(1_000, 4), pattern(1_000, 5));
    let (ha, hb) = (hash_of(&a), hash_of(&b));
    put(&store, &a, &ha).await;
    put(&store, &b, &hb).await;
    for stray in [
        "p/blobs/README".to_owned(),
        format!("p/blobs/{}/{hb}.zst.part", &hb[..2]),
        format!("p/blobs/zz/{ha}.zst"),
        format!("p/blobs/{}/x/{ha}.zst", &ha[..2]),
        format!("other/blobs/{}/{ha}.zst", &ha[..2]),
    ] {
        memory
            .put(&ObjectPath::from(stray), PutPayload::from(vec![1]))
            .await
            .unwrap();
    }
    let mut hashes = vec![ha.clone(), hb.clone()];
    hashes.sort();
    let listed: Vec<String> = store
        .list()
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.hash)
        .collect();
    assert_eq!(listed, hashes);

    store.quarantine(&ha).await.unwrap();
    assert_eq!(
        &stored(&memory, &format!("p/quarantine/{ha}.zst"))
            .await
            .unwrap()[..],
        &a[..]
    );
    assert!(matches!(
        store.read_range(&ha, 0, 1).await,
        Err(StorageError::MissingObject(_))
    ));
    store.quarantine(&ha).await.unwrap(); // gone already: nothing to do

    store.delete(&hb).await.unwrap();
    store.delete(&hb).await.unwrap();
    assert!(store.list().await.unwrap().is_empty());
}

#[tokio::test]
async fn an_uncommitted_writer_leaves_nothing_and_open_empties_tmp() {
    let (store, memory, dir) = store("p");
    let mut writer = store.create().await.unwrap();
    writer
        .write(Bytes::from_static(b"abandoned"))
        .await
        .unwrap();
    drop(writer);
    let tmp = dir.path().join("tmp");
    assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 0);
    assert!(store.list().await.unwrap().is_empty());
    std::fs::write(tmp.join("s3-put-leftover"), b"x").unwrap();
    let (_, removed) = S3BlobStore::with_store(memory, "p", tmp.clone()).unwrap();
    assert_eq!(removed, 1);
    assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 0);
}

/// The blob contract over object_store's in-memory store.
mod contract_in_memory {
    use std::sync::Arc;

    use crate::storage::blob::contract::{BlobSubject, blob_contract_suite};

    async fn open() -> Option<BlobSubject> {
        let (store, _memory, dir) = super::store("p");
        Some(BlobSubject {
            store: Arc::new(store),
            _keep: vec![dir],
        })
    }

    blob_contract_suite!(open);
}

/// The blob contract against a real S3 endpoint (moto's server in `.ci/run`),
/// each test in a bucket of its own.
mod contract_endpoint {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU32, Ordering};

    use super::super::{S3BlobStore, S3Url};
    use crate::storage::blob::contract::{BlobSubject, blob_contract_suite};

    /// A store on a new bucket of the endpoint, or `None` (skipped) when no
    /// endpoint is set or it does not answer; under `CI` that fails instead.
    async fn open() -> Option<BlobSubject> {
        let skip = |why: String| {
            assert!(
                std::env::var_os("CI").is_none(),
                "{why}, and CI must run the S3 tests"
            );
            println!("skipped: {why}");
            None
        };
        let Ok(endpoint) = std::env::var("CAIRN_TEST_S3_ENDPOINT") else {
            return skip("CAIRN_TEST_S3_ENDPOINT is not set".into());
        };
        let endpoint = endpoint.trim_end_matches('/').to_owned();
        static SEQ: AtomicU32 = AtomicU32::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let bucket = format!(
            "cairn-contract-{nanos:x}-{}-{}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        );
        let created = reqwest::Client::new()
            .put(format!("{endpoint}/{bucket}"))
            .timeout(std::time::Duration::from_secs(10))
            .send()
            .await;
        match created {
            Ok(answer) if answer.status().is_success() => {}
            Ok(answer) => {
                return skip(format!(
                    "cannot create bucket {bucket}: {}",
                    answer.status()
                ));
            }
            Err(e) => return skip(format!("the S3 endpoint {endpoint} does not answer: {e}")),
        }
        let url = S3Url::parse(&format!(
            "s3://{bucket}/contract/?endpoint={endpoint}&allow_http=true&region=us-east-1\
             &access_key_id=testing&secret_access_key=testing"
        ))
        .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let (store, _) = S3BlobStore::open(&url, dir.path().join("tmp")).unwrap();
        Some(BlobSubject {
            store: Arc::new(store),
            _keep: vec![dir],
        })
    }

    blob_contract_suite!(open);
}
