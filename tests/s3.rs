//! Objects on S3 (`CAIRN_BLOB_URL=s3://…`) through the real router, against
//! the S3 endpoint `CAIRN_TEST_S3_ENDPOINT` names (`.ci/run` starts moto's
//! server on 127.0.0.1:5000). Without a reachable endpoint the tests say they
//! were skipped, except under CI (`CI` set), where they fail. Each test
//! makes its own bucket.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use cairn::app::App;
use cairn::config::Config;
use cairn::storage::blob::s3::PART_BYTES;
use futures::TryStreamExt;
use http_body_util::BodyExt;
use object_store::aws::{AmazonS3, AmazonS3Builder};
use object_store::path::Path as Key;
use object_store::{ObjectStore, PutPayload};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tower::ServiceExt;

const PREFIX: &str = "team/cairn";

/// The endpoint to test against, if one answers (panics under CI if not).
async fn endpoint() -> Option<String> {
    let skip = |why: String| {
        assert!(
            std::env::var_os("CI").is_none(),
            "{why}, and CI must run the S3 tests (.ci/run starts moto on 127.0.0.1:5000)"
        );
        eprintln!(
            "skipped: {why} (e.g. `python3 -m moto.server -p 5000` and CAIRN_TEST_S3_ENDPOINT=http://127.0.0.1:5000)"
        );
        None
    };
    let Ok(endpoint) = std::env::var("CAIRN_TEST_S3_ENDPOINT") else {
        return skip("CAIRN_TEST_S3_ENDPOINT is not set".into());
    };
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(5))
        .build()
        .unwrap();
    match client.get(&endpoint).send().await {
        Ok(_) => Some(endpoint.trim_end_matches('/').to_owned()),
        Err(e) => skip(format!("the S3 endpoint {endpoint} does not answer: {e}")),
    }
}

/// A new bucket with a random name.
async fn new_bucket(endpoint: &str) -> String {
    static SEQ: AtomicU32 = AtomicU32::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let bucket = format!(
        "cairn-{:x}-{}-{}",
        nanos,
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    );
    let answer = reqwest::Client::new()
        .put(format!("{endpoint}/{bucket}"))
        .send()
        .await
        .unwrap();
    assert!(
        answer.status().is_success(),
        "cannot create {bucket}: {answer:?}"
    );
    bucket
}

/// The blob URL of `bucket` on `endpoint`, options in the query (a test
/// cannot set the process's AWS_* variables; the subprocess test does).
fn blob_url(endpoint: &str, bucket: &str) -> String {
    format!(
        "s3://{bucket}/{PREFIX}/?endpoint={endpoint}&allow_http=true&region=us-east-1&access_key_id=testing&secret_access_key=testing"
    )
}

/// A client of the bucket, to look at and tamper with what Cairn stored.
fn bucket_client(endpoint: &str, bucket: &str) -> AmazonS3 {
    AmazonS3Builder::new()
        .with_endpoint(endpoint)
        .with_allow_http(true)
        .with_region("us-east-1")
        .with_bucket_name(bucket)
        .with_access_key_id("testing")
        .with_secret_access_key("testing")
        .build()
        .unwrap()
}

/// Keys (with sizes) under the prefix's `folder`, sorted.
async fn keys(s3: &AmazonS3, folder: &str) -> Vec<(String, u64)> {
    let mut found: Vec<(String, u64)> = s3
        .list(Some(&Key::from(format!("{PREFIX}/{folder}"))))
        .map_ok(|meta| (meta.location.to_string(), meta.size))
        .try_collect()
        .await
        .unwrap();
    found.sort();
    found
}

fn object_key(id: &str) -> String {
    format!("{PREFIX}/blobs/{}/{id}.zst", &id[..2])
}

struct S3App {
    app: App,
    router: axum::Router,
    dir: tempfile::TempDir,
    s3: AmazonS3,
}

async fn start(tune: impl FnOnce(&mut Config)) -> Option<S3App> {
    let endpoint = endpoint().await?;
    let bucket = new_bucket(&endpoint).await;
    let dir = tempfile::tempdir().unwrap();
    let mut config = Config::with_data_dir(dir.path());
    config.blob_url = Some(blob_url(&endpoint, &bucket));
    // Random test content could look like a secret; this tests storage.
    config.redact = false;
    tune(&mut config);
    let app = App::build(&config).await.unwrap();
    Some(S3App {
        router: app.router(),
        app,
        dir,
        s3: bucket_client(&endpoint, &bucket),
    })
}

impl S3App {
    async fn call(&self, request: Request<Body>) -> (StatusCode, bytes::Bytes) {
        let response = self.router.clone().oneshot(request).await.unwrap();
        let status = response.status();
        (
            status,
            response.into_body().collect().await.unwrap().to_bytes(),
        )
    }

    async fn json(&self, request: Request<Body>) -> (StatusCode, Value) {
        let (status, body) = self.call(request).await;
        let value = serde_json::from_slice(&body)
            .unwrap_or_else(|_| panic!("{status}: {}", String::from_utf8_lossy(&body)));
        (status, value)
    }

    async fn put_raw(&self, content: &[u8]) -> (StatusCode, Value) {
        self.json(
            Request::post("/v1/memories")
                .header(header::CONTENT_TYPE, "text/plain")
                .body(Body::from(content.to_vec()))
                .unwrap(),
        )
        .await
    }

    async fn admin(&self, path: &str, body: Value) -> Value {
        let (status, answer) = self
            .json(
                Request::post(path)
                    .header(header::CONTENT_TYPE, "application/json")
                    .body(Body::from(body.to_string()))
                    .unwrap(),
            )
            .await;
        assert_eq!(status, StatusCode::OK, "{path}: {answer}");
        answer
    }

    /// Raw bytes of a GET (with `Accept: application/octet-stream`).
    async fn raw(&self, uri: &str) -> (StatusCode, bytes::Bytes) {
        self.call(
            Request::get(uri)
                .header(header::ACCEPT, "application/octet-stream")
                .body(Body::empty())
                .unwrap(),
        )
        .await
    }

    fn temp_files(&self) -> usize {
        std::fs::read_dir(self.dir.path().join("tmp"))
            .map(|d| d.count())
            .unwrap_or(0)
    }
}

/// Lines of pseudo-random characters from `alphabet` (64 symbols compress
/// to ~75%, 16 to ~50%), `len` bytes ending with a newline.
fn noise(seed: u64, len: usize, alphabet: &[u8]) -> Vec<u8> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut out = Vec::with_capacity(len);
    while out.len() < len {
        let line = next() % 150;
        for _ in 0..line {
            out.push(alphabet[(next() % alphabet.len() as u64) as usize]);
        }
        out.push(b'\n');
    }
    out.truncate(len);
    if let Some(last) = out.last_mut() {
        *last = b'\n';
    }
    out
}

const BASE64: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const HEX: &[u8] = b"0123456789abcdef";

fn lines_of(content: &[u8], start: usize, end: usize) -> Vec<u8> {
    content
        .split_inclusive(|b| *b == b'\n')
        .skip(start - 1)
        .take(end + 1 - start)
        .flatten()
        .copied()
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn puts_slices_and_whole_content_round_trip_through_the_bucket() {
    let Some(t) = start(|_| {}).await else { return };
    // A JSON put of three frames, and a raw put whose stored form is over
    // one upload part: it goes up as a multipart upload.
    let text = noise(1, 1_300_000, HEX);
    let (status, json_put) = t
        .json(
            Request::post("/v1/memories")
                .header(header::CONTENT_TYPE, "application/json")
                .body(Body::from(
                    json!({"content": String::from_utf8(text.clone()).unwrap()}).to_string(),
                ))
                .unwrap(),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{json_put}");
    let big = noise(2, 12 << 20, BASE64);
    let started = Instant::now();
    let (status, raw_put) = t.put_raw(&big).await;
    assert_eq!(status, StatusCode::CREATED, "{raw_put}");
    eprintln!("12 MiB raw put to S3: {:?}", started.elapsed());

    let (small_id, big_id) = (
        json_put["id"].as_str().unwrap().to_owned(),
        raw_put["id"].as_str().unwrap().to_owned(),
    );
    let stored = keys(&t.s3, "blobs").await;
    let stored_keys: Vec<&str> = stored.iter().map(|(k, _)| k.as_str()).collect();
    let mut expected = vec![object_key(&small_id), object_key(&big_id)];
    expected.sort();
    assert_eq!(stored_keys, expected);
    let big_stored = stored
        .iter()
        .find(|(k, _)| *k == object_key(&big_id))
        .unwrap()
        .1;
    assert!(
        big_stored > PART_BYTES as u64,
        "{big_stored} bytes stored: not enough for a multipart upload"
    );
    assert_eq!(t.temp_files(), 0, "spool files left in tmp/");

    for (id, content) in [(&small_id, &text), (&big_id, &big)] {
        let total = content.split_inclusive(|b| *b == b'\n').count();
        for start in [1, total / 3, total / 2 + 7, total - 40] {
            let uri = format!("/v1/memories/{id}/lines?start={start}&end={}", start + 39);
            let (status, slice) = t.raw(&uri).await;
            assert_eq!(status, StatusCode::OK, "{uri}");
            assert!(
                slice[..] == lines_of(content, start, start + 39)[..],
                "{uri}"
            );
        }
        // Byte slices across a frame boundary (frames hold 512 KiB of content).
        for offset in [0, (512 << 10) - 1000, content.len() - 500] {
            let uri = format!("/v1/memories/{id}/bytes?offset={offset}&length=3000");
            let (status, slice) = t.raw(&uri).await;
            assert_eq!(status, StatusCode::OK, "{uri}");
            let end = (offset + 3000).min(content.len());
            assert!(slice[..] == content[offset..end], "{uri}");
        }
        let (status, whole) = t.raw(&format!("/v1/memories/{id}/content")).await;
        assert_eq!(status, StatusCode::OK);
        assert!(whole[..] == content[..], "whole content of {id} differs");
    }
    t.app.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn identical_puts_share_one_object_in_the_bucket() {
    let Some(t) = start(|_| {}).await else { return };
    let content = noise(3, 700_000, HEX);
    let (first, second) = tokio::join!(t.put_raw(&content), t.put_raw(&content));
    let (third_status, third) = t.put_raw(&content).await;
    let mut statuses = [first.0, second.0];
    statuses.sort();
    assert_eq!(statuses, [StatusCode::OK, StatusCode::CREATED]);
    assert_eq!(third_status, StatusCode::OK);
    assert_eq!(third["deduplicated"], true);
    assert_eq!(first.1["id"], third["id"]);
    let id = third["id"].as_str().unwrap();
    assert_eq!(
        keys(&t.s3, "blobs")
            .await
            .into_iter()
            .map(|(k, _)| k)
            .collect::<Vec<_>>(),
        vec![object_key(id)]
    );
    assert_eq!(
        t.temp_files(),
        0,
        "the deduplicated puts' spool files stay behind"
    );
    t.app.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gc_removes_a_deleted_memorys_object_and_crash_leftovers_from_the_bucket() {
    // No grace: what is unreferenced when GC runs goes.
    let Some(t) = start(|c| c.gc_grace_secs = 0).await else {
        return;
    };
    let (kept, gone) = (noise(4, 400_000, HEX), noise(5, 400_000, HEX));
    let (_, kept_put) = t.put_raw(&kept).await;
    let (_, gone_put) = t.put_raw(&gone).await;
    let (kept_id, gone_id) = (
        kept_put["id"].as_str().unwrap(),
        gone_put["id"].as_str().unwrap(),
    );
    // What a crash between upload and metadata commit leaves: an object no row names.
    let leftover = hex::encode(Sha256::digest(b"never committed"));
    t.s3.put(
        &Key::from(object_key(&leftover)),
        PutPayload::from_static(b"zstd frames"),
    )
    .await
    .unwrap();
    assert_eq!(keys(&t.s3, "blobs").await.len(), 3);

    let (status, _) = t
        .call(
            Request::delete(format!("/v1/memories/{gone_id}"))
                .body(Body::empty())
                .unwrap(),
        )
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    assert_eq!(
        keys(&t.s3, "blobs").await.len(),
        3,
        "the object outlives its memory until GC"
    );
    tokio::time::sleep(Duration::from_millis(5)).await;
    let report = t.admin("/v1/admin/gc", json!({})).await;
    assert_eq!(report["removed_objects"], 1, "{report}");
    assert_eq!(report["removed_orphan_files"], 1, "{report}");
    let left: Vec<String> = keys(&t.s3, "blobs")
        .await
        .into_iter()
        .map(|(k, _)| k)
        .collect();
    assert_eq!(left, vec![object_key(kept_id)]);
    let (status, whole) = t.raw(&format!("/v1/memories/{kept_id}/content")).await;
    assert_eq!(status, StatusCode::OK);
    assert!(whole[..] == kept[..]);
    t.app.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verify_finds_a_corrupted_and_a_deleted_object_and_repair_quarantines() {
    let Some(t) = start(|_| {}).await else { return };
    let (a, b) = (noise(6, 900_000, HEX), noise(7, 900_000, HEX));
    let (_, put_a) = t.put_raw(&a).await;
    let (_, put_b) = t.put_raw(&b).await;
    let (id_a, id_b) = (put_a["id"].as_str().unwrap(), put_b["id"].as_str().unwrap());
    let clean = t.admin("/v1/admin/verify", json!({})).await;
    assert_eq!(
        (clean["ok"].as_u64(), clean["corrupt"].clone()),
        (Some(2), json!([]))
    );

    // Flip one byte in the middle of A's object; delete B's.
    let key_a = Key::from(object_key(id_a));
    let mut object =
        t.s3.get(&key_a)
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap()
            .to_vec();
    let middle = object.len() / 2;
    object[middle] ^= 0x20;
    t.s3.put(&key_a, PutPayload::from(object)).await.unwrap();
    t.s3.delete(&Key::from(object_key(id_b))).await.unwrap();

    let report = t.admin("/v1/admin/verify", json!({})).await;
    assert_eq!(report["missing"], json!([id_b]), "{report}");
    let corrupt = report["corrupt"].as_array().unwrap();
    assert_eq!(corrupt.len(), 1, "{report}");
    assert_eq!(corrupt[0]["id"], id_a);
    let (status, body) = t
        .raw(&format!("/v1/memories/{id_b}/lines?start=1&end=5"))
        .await;
    assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
    assert!(String::from_utf8_lossy(&body).contains("integrity_error"));

    let repaired = t.admin("/v1/admin/verify", json!({"repair": true})).await;
    assert_eq!(repaired["quarantined"], 1, "{repaired}");
    assert_eq!(
        keys(&t.s3, "quarantine")
            .await
            .into_iter()
            .map(|(k, _)| k)
            .collect::<Vec<_>>(),
        vec![format!("{PREFIX}/quarantine/{id_a}.zst")]
    );
    assert!(keys(&t.s3, "blobs").await.is_empty());
    t.app.shutdown().await;
}

#[tokio::test]
async fn readyz_fails_when_the_endpoint_or_the_bucket_is_wrong() {
    let Some(endpoint) = endpoint().await else {
        return;
    };
    let closed_port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let bucket = new_bucket(&endpoint).await;
    let cases = [
        (blob_url(&endpoint, &bucket), StatusCode::OK),
        (
            blob_url(&format!("http://127.0.0.1:{closed_port}"), &bucket),
            StatusCode::SERVICE_UNAVAILABLE,
        ),
        (
            blob_url(&endpoint, &format!("{bucket}-absent")),
            StatusCode::SERVICE_UNAVAILABLE,
        ),
    ];
    for (url, expected) in cases {
        let dir = tempfile::tempdir().unwrap();
        let mut config = Config::with_data_dir(dir.path());
        config.blob_url = Some(url.clone());
        let app = App::build(&config).await.unwrap();
        let started = Instant::now();
        let response = app
            .router()
            .oneshot(Request::get("/readyz").body(Body::empty()).unwrap())
            .await
            .unwrap();
        let status = response.status();
        let body = response.into_body().collect().await.unwrap().to_bytes();
        let body: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(status, expected, "{url}: {body}");
        assert!(
            started.elapsed() < Duration::from_secs(4),
            "{url}: readyz took {:?}",
            started.elapsed()
        );
        if expected == StatusCode::OK {
            assert_eq!(body["blobs"], "ok");
        } else {
            assert_ne!(body["blobs"], "ok", "{body}");
            assert_eq!(body["metadata"], "ok");
        }
        app.shutdown().await;
    }
}

#[tokio::test]
async fn a_put_to_an_unreachable_store_fails_within_seconds_with_a_json_error() {
    let Some(t) = start(|c| {
        let closed_port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let bucket = "cairn-unreachable";
        c.blob_url = Some(blob_url(&format!("http://127.0.0.1:{closed_port}"), bucket));
    })
    .await
    else {
        return;
    };
    let started = Instant::now();
    let (status, body) = t.put_raw(&noise(31, 200_000, b"0123456789abcdef\n")).await;
    let took = started.elapsed();
    assert!(status.is_server_error(), "{status}: {body}");
    assert!(body["error"]["message"].is_string(), "{body}");
    // object_store's default retries would go on for about a minute.
    assert!(
        took < Duration::from_secs(20),
        "the put failed only after {took:?}"
    );
    assert_eq!(t.temp_files(), 0, "the spooled upload was removed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_configured_by_aws_variables_signs_and_stores_in_the_bucket() {
    let Some(endpoint) = endpoint().await else {
        return;
    };
    let bucket = new_bucket(&endpoint).await;
    let dir = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let base = format!("http://127.0.0.1:{port}");
    let mut server = std::process::Command::new(env!("CARGO_BIN_EXE_cairn"))
        .args([
            "serve",
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--data-dir",
        ])
        .arg(dir.path())
        .env("CAIRN_BLOB_URL", format!("s3://{bucket}/{PREFIX}"))
        .env("AWS_ENDPOINT_URL", &endpoint)
        .env("AWS_ALLOW_HTTP", "true")
        .env("AWS_REGION", "us-east-1")
        .env("AWS_ACCESS_KEY_ID", "testing")
        .env("AWS_SECRET_ACCESS_KEY", "testing")
        .env_remove("AWS_SESSION_TOKEN")
        .env_remove("AWS_SKIP_SIGNATURE")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let client = reqwest::Client::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Ok(r) = client.get(format!("{base}/readyz")).send().await
            && r.status().is_success()
        {
            break;
        }
        assert!(Instant::now() < deadline, "server did not become ready");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let content = noise(8, 600_000, HEX);
    let put: Value = client
        .post(format!("{base}/v1/memories"))
        .header("content-type", "text/plain")
        .body(content.clone())
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = put["id"].as_str().unwrap().to_owned();
    let back = client
        .get(format!("{base}/v1/memories/{id}/content"))
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    server.kill().unwrap();
    server.wait().unwrap();
    assert!(back[..] == content[..]);
    let s3 = bucket_client(&endpoint, &bucket);
    let stored: Vec<String> = keys(&s3, "blobs")
        .await
        .into_iter()
        .map(|(k, _)| k)
        .collect();
    assert_eq!(stored, vec![object_key(&id)]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leftover_object_with_other_bytes_is_replaced_not_trusted() {
    let Some(t) = start(|_| {}).await else { return };
    let content = noise(9, 500_000, HEX);
    let id = hex::encode(Sha256::digest(&content));
    // What a crash between upload and metadata commit may leave, written with
    // other settings: the create-only PUT finds it (412) and replaces it.
    let key = Key::from(object_key(&id));
    t.s3.put(&key, PutPayload::from_static(b"other frames"))
        .await
        .unwrap();
    let (status, put) = t.put_raw(&content).await;
    assert_eq!(status, StatusCode::CREATED, "{put}");
    let (status, whole) = t.raw(&format!("/v1/memories/{id}/content")).await;
    assert_eq!(status, StatusCode::OK);
    assert!(whole[..] == content[..]);
    let report = t.admin("/v1/admin/verify", json!({})).await;
    assert_eq!(
        (report["ok"].as_u64(), report["corrupt"].clone()),
        (Some(1), json!([]))
    );
    t.app.shutdown().await;
}

#[tokio::test]
async fn the_store_alone_answers_missing_and_truncated_like_the_file_store() {
    use cairn::storage::StorageError;
    use cairn::storage::blob::BlobStore;
    use cairn::storage::blob::s3::{S3BlobStore, S3Url};
    let Some(endpoint) = endpoint().await else {
        return;
    };
    let bucket = new_bucket(&endpoint).await;
    let dir = tempfile::tempdir().unwrap();
    let url = S3Url::parse(&blob_url(&endpoint, &bucket)).unwrap();
    let (store, _) = S3BlobStore::open(&url, dir.path().join("tmp")).unwrap();
    let hash = "cd".repeat(32);
    assert!(matches!(
        store.read_range(&hash, 0, 10).await,
        Err(StorageError::MissingObject(h)) if h == hash
    ));
    let s3 = bucket_client(&endpoint, &bucket);
    s3.put(
        &Key::from(object_key(&hash)),
        PutPayload::from(vec![9u8; 100]),
    )
    .await
    .unwrap();
    assert_eq!(&store.read_range(&hash, 95, 5).await.unwrap()[..], &[9; 5]);
    // Past the end, partly (a short 206) and wholly (416).
    for offset in [95, 100, 500] {
        assert!(
            matches!(
                store.read_range(&hash, offset, 10).await,
                Err(StorageError::Truncated(_))
            ),
            "offset {offset}"
        );
    }
    assert_eq!(store.list().await.unwrap().len(), 1);
    store.delete(&hash).await.unwrap();
    store.delete(&hash).await.unwrap();
    assert!(store.list().await.unwrap().is_empty());
    store.quarantine(&hash).await.unwrap();
}

/// The value of one `/metrics` sample as exposed, or 0.
async fn sample(t: &S3App, series: &str) -> f64 {
    let (_, body) = t.raw("/metrics").await;
    String::from_utf8_lossy(&body)
        .lines()
        .filter(|l| !l.starts_with('#'))
        .find_map(|l| {
            let (name, value) = l.rsplit_once(' ')?;
            (name == series).then(|| value.parse::<f64>().unwrap())
        })
        .unwrap_or(0.0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_redis_in_front_a_frame_read_from_the_bucket_is_then_served_from_redis() {
    // The combination of the scale-out setup: objects in S3, frames in Redis.
    let redis_url = match std::env::var("CAIRN_TEST_REDIS_URL") {
        Ok(url) if !url.is_empty() => url,
        _ => {
            assert!(
                std::env::var_os("CI").is_none(),
                "CAIRN_TEST_REDIS_URL is not set, and CI must run this test"
            );
            eprintln!("skipped: CAIRN_TEST_REDIS_URL is not set");
            return;
        }
    };
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let prefix = format!("cairn-s3-test-{}-{nanos}", std::process::id());
    let Some(t) = start(|c| {
        c.frame_bytes = 64 << 10;
        c.frame_cache_bytes = 0;
        c.redis_url = Some(redis_url.clone());
        c.redis_prefix = prefix.clone();
        c.redis_timeout_ms = 1000;
    })
    .await
    else {
        return;
    };
    let content = noise(7, 1 << 20, HEX);
    let (status, put) = t.put_raw(&content).await;
    assert_eq!(status, StatusCode::CREATED, "{put}");
    let id = put["id"].as_str().unwrap().to_owned();
    let uri = format!("/v1/memories/{id}/lines?start=100&end=140");
    let hit = r#"cairn_cache_lookups_total{layer="redis",result="hit"}"#;
    let (status, first) = t.raw(&uri).await;
    assert_eq!(status, StatusCode::OK);
    assert!(first[..] == lines_of(&content, 100, 140)[..]);
    // The cache fills in the background: read until Redis answers.
    let deadline = Instant::now() + Duration::from_secs(5);
    while sample(&t, hit).await < 1.0 {
        assert!(
            Instant::now() < deadline,
            "no Redis hit after the first read"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
        let (status, again) = t.raw(&uri).await;
        assert_eq!(status, StatusCode::OK);
        assert!(again[..] == first[..]);
    }
    let (_, ready) = t.raw("/readyz").await;
    let ready: Value = serde_json::from_slice(&ready).unwrap();
    assert_eq!(ready["status"], "ready", "{ready}");
    assert_eq!(ready["cache"], "ok");
}
