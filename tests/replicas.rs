//! Two replicas: two real `cairn serve` processes on their own ports and data
//! directories, sharing PostgreSQL (a fresh schema), S3 (a fresh bucket) and
//! Redis (a fresh key prefix). What one stores the other serves, searches and
//! deletes; identical puts racing through both make one object.
//!
//! Needs `CAIRN_TEST_DATABASE_URL`, `CAIRN_TEST_S3_ENDPOINT` and
//! `CAIRN_TEST_REDIS_URL` (`.ci/run` sets them); without them it says it was
//! skipped, except under CI (`CI` set), where it fails.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "common/backends.rs"]
mod backends;
#[path = "common/served.rs"]
mod served;

use std::path::Path;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use backends::{Backends, S3Bucket, Selection};
use serde_json::Value;
use served::free_port;

/// One `cairn serve` process, killed when dropped.
struct Replica {
    name: &'static str,
    base: String,
    child: Child,
    _dir: tempfile::TempDir,
}

impl Replica {
    async fn start(name: &'static str, backends: &Backends, client: &reqwest::Client) -> Replica {
        let dir = tempfile::tempdir().unwrap();
        let port = free_port();
        let mut config = cairn::config::Config::with_data_dir(dir.path());
        backends.apply(&mut config);
        let child = command(dir.path(), port, &config).spawn().unwrap();
        let mut replica = Replica {
            name,
            base: format!("http://127.0.0.1:{port}"),
            child,
            _dir: dir,
        };
        replica.wait_ready(client).await;
        replica
    }

    async fn wait_ready(&mut self, client: &reqwest::Client) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            if let Some(status) = self.child.try_wait().unwrap() {
                panic!(
                    "replica {} exited before it was ready ({status}); its log is above",
                    self.name
                );
            }
            if let Ok(r) = client.get(format!("{}/readyz", self.base)).send().await
                && r.status().is_success()
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("replica {} did not become ready within 60 s", self.name);
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `cairn serve` on `port` over `data`, with the shared services of `config`.
fn command(data: &Path, port: u16, config: &cairn::config::Config) -> Command {
    let mut command = served::serve(data, port);
    command
        .env(
            "CAIRN_DATABASE_URL",
            config.database_url.as_deref().unwrap(),
        )
        .env("CAIRN_BLOB_URL", config.blob_url.as_deref().unwrap())
        .env("CAIRN_REDIS_URL", config.redis_url.as_deref().unwrap())
        .env("CAIRN_REDIS_PREFIX", &config.redis_prefix)
        // Random test content could look like a secret; this tests sharing.
        .env("CAIRN_REDACT", "false");
    command
}

/// Poorly compressible lines (a blob object on S3, not inline), `len` bytes.
fn noise(seed: u64, len: usize) -> Vec<u8> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut out = Vec::with_capacity(len + 200);
    while out.len() < len {
        for _ in 0..(state % 120) {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            out.push(b"0123456789abcdef"[(state % 16) as usize]);
        }
        out.push(b'\n');
        state = state.wrapping_add(1);
    }
    out
}

async fn put(client: &reqwest::Client, replica: &Replica, content: Vec<u8>) -> (u16, Value) {
    let r = client
        .post(replica.url("/v1/memories"))
        .header("content-type", "text/plain")
        .body(content)
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    (status, r.json().await.unwrap())
}

async fn get(client: &reqwest::Client, replica: &Replica, path: &str) -> (u16, Value) {
    let r = client.get(replica.url(path)).send().await.unwrap();
    let status = r.status().as_u16();
    let body = r.bytes().await.unwrap();
    (
        status,
        serde_json::from_slice(&body)
            .unwrap_or(Value::String(String::from_utf8_lossy(&body).into_owned())),
    )
}

/// Polls `check` every 100 ms until it holds, for at most `limit`.
async fn eventually<F, Fut>(limit: Duration, what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<(), String>>,
{
    let deadline = Instant::now() + limit;
    loop {
        match check().await {
            Ok(()) => return,
            Err(last) if Instant::now() >= deadline => {
                panic!("{what}: not so after {limit:?}; last: {last}")
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_replicas_share_metadata_objects_and_cache() {
    let have = (
        backends::postgres_url().is_some(),
        backends::s3_endpoint().is_some(),
        backends::redis_url().is_some(),
    );
    if have != (true, true, true) {
        eprintln!("skipped: the multi-replica test needs PostgreSQL, S3 and Redis (see above)");
        return;
    }
    let backends = Backends::provision(Selection::all()).await;
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(60))
        .build()
        .unwrap();
    let a = Replica::start("A", &backends, &client).await;
    let b = Replica::start("B", &backends, &client).await;

    // Put through A: a blob object on S3, with a word to search for.
    let mut content = b"the quixotic marmalade incident\n".to_vec();
    content.extend(noise(1, 300_000));
    let (status, body) = put(&client, &a, content.clone()).await;
    assert_eq!(status, 201, "put through A: {body}");
    let id = body["id"].as_str().unwrap().to_owned();
    let lines = body["lines"].as_u64().unwrap();

    // B serves it: metadata, a slice, the content.
    let (status, meta) = get(&client, &b, &format!("/v1/memories/{id}")).await;
    assert_eq!(status, 200, "B does not see A's memory: {meta}");
    assert_eq!(meta["lines"], lines);
    let (status, slice) = get(
        &client,
        &b,
        &format!("/v1/memories/{id}/lines?start=1&end=3"),
    )
    .await;
    assert_eq!(status, 200, "slice through B: {slice}");
    let expected: String = String::from_utf8(content.clone())
        .unwrap()
        .split_inclusive('\n')
        .take(3)
        .collect();
    assert_eq!(slice["text"], expected.as_str());
    let whole = client
        .get(b.url(&format!("/v1/memories/{id}/content")))
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    assert!(whole[..] == content[..], "content through B differs");
    // A reads a slice too (and caches the memory's metadata for a moment).
    let (status, _) = get(
        &client,
        &a,
        &format!("/v1/memories/{id}/lines?start=2&end=2"),
    )
    .await;
    assert_eq!(status, 200);

    // B finds it once its own index (built from the shared objects) has it.
    eventually(
        Duration::from_secs(30),
        "B's search finds A's memory",
        || async {
            let (status, found) = get(&client, &b, "/v1/search?q=marmalade").await;
            if status != 200 {
                return Err(format!("{status}: {found}"));
            }
            let ids: Vec<&str> = found["results"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|r| r["id"].as_str())
                .collect();
            if ids == [id.as_str()] {
                Ok(())
            } else {
                Err(found.to_string())
            }
        },
    )
    .await;

    // Deleted through B: gone for A too (A may serve its 2 s metadata cache).
    let deleted = client
        .delete(b.url(&format!("/v1/memories/{id}")))
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status().as_u16(), 204);
    eventually(
        Duration::from_secs(5),
        "A answers 404 after B's delete",
        || async {
            let (meta, _) = get(&client, &a, &format!("/v1/memories/{id}")).await;
            let (slice, _) = get(
                &client,
                &a,
                &format!("/v1/memories/{id}/lines?start=1&end=3"),
            )
            .await;
            if (meta, slice) == (404, 404) {
                Ok(())
            } else {
                Err(format!("metadata {meta}, slice {slice}"))
            }
        },
    )
    .await;
    let (status, found) = get(&client, &a, "/v1/search?q=marmalade").await;
    assert_eq!(status, 200);
    assert_eq!(found["results"], serde_json::json!([]), "A still finds it");

    // Identical puts racing through both replicas: one creates, the rest dedupe.
    let racing = noise(2, 300_000);
    let puts: Vec<_> = (0..16)
        .map(|n| {
            let (client, content) = (client.clone(), racing.clone());
            let replica = if n % 2 == 0 { &a } else { &b };
            let url = replica.url("/v1/memories");
            tokio::spawn(async move {
                let r = client
                    .post(url)
                    .header("content-type", "text/plain")
                    .body(content)
                    .send()
                    .await
                    .unwrap();
                let status = r.status().as_u16();
                (status, r.json::<Value>().await.unwrap())
            })
        })
        .collect();
    let mut answers = Vec::new();
    for put in puts {
        answers.push(put.await.unwrap());
    }
    let created: Vec<_> = answers.iter().filter(|(s, _)| *s == 201).collect();
    assert_eq!(created.len(), 1, "exactly one put creates: {answers:?}");
    for (status, body) in &answers {
        assert!(*status == 201 || *status == 200, "{status}: {body}");
        assert_eq!(body["deduplicated"], *status == 200, "{body}");
    }
    let racing_id = created[0].1["id"].as_str().unwrap().to_owned();
    assert!(
        answers
            .iter()
            .all(|(_, body)| body["id"] == racing_id.as_str())
    );

    // One object each in the bucket: the deleted memory's (kept until GC's
    // grace has passed) and the raced one's, nothing else.
    let s3 = backends.s3.as_ref().unwrap();
    let mut expected = vec![
        S3Bucket::object_key(&id).to_string(),
        S3Bucket::object_key(&racing_id).to_string(),
    ];
    expected.sort();
    assert_eq!(s3.object_keys().await, expected);
    for replica in [&a, &b] {
        let back = client
            .get(replica.url(&format!("/v1/memories/{racing_id}/content")))
            .send()
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap();
        assert!(
            back[..] == racing[..],
            "raced content through {}",
            replica.name
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn gc_on_one_replica_never_removes_an_object_a_put_on_the_other_reuses() {
    if (
        backends::postgres_url().is_some(),
        backends::s3_endpoint().is_some(),
        backends::redis_url().is_some(),
    ) != (true, true, true)
    {
        eprintln!("skipped: the multi-replica test needs PostgreSQL, S3 and Redis (see above)");
        return;
    }
    let backends = Backends::provision(Selection::all()).await;
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(60))
        .build()
        .unwrap();
    let a = Replica::start("A", &backends, &client).await;
    let b = Replica::start("B", &backends, &client).await;
    // B collects garbage with a zero grace period, over and over.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let gc = {
        let (client, url, stop) = (client.clone(), b.url("/v1/admin/gc"), stop.clone());
        tokio::spawn(async move {
            let mut runs = 0u32;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let r = client
                    .post(&url)
                    .json(&serde_json::json!({"grace_seconds": 0}))
                    .send()
                    .await
                    .unwrap();
                let status = r.status().as_u16();
                let text = r.text().await.unwrap();
                assert_eq!(status, 200, "GC through B: {text}");
                runs += 1;
            }
            runs
        })
    };
    // Meanwhile A stores, reads back and deletes the same few contents: each
    // put finds the object unreferenced, relies on it, and races B's GC.
    let contents: Vec<Vec<u8>> = (0..3).map(|n| noise(10 + n, 200_000)).collect();
    for round in 0..60 {
        let content = &contents[round % contents.len()];
        let puts: Vec<_> = (0..2)
            .map(|_| {
                let (client, content) = (client.clone(), content.clone());
                let url = a.url("/v1/memories");
                tokio::spawn(async move {
                    let r = client
                        .post(url)
                        .header("content-type", "text/plain")
                        .body(content)
                        .send()
                        .await
                        .unwrap();
                    (r.status().as_u16(), r.json::<Value>().await.unwrap())
                })
            })
            .collect();
        let mut id = String::new();
        for put in puts {
            let (status, body) = put.await.unwrap();
            assert!(status == 201 || status == 200, "round {round}: put: {body}");
            id = body["id"].as_str().unwrap().to_owned();
        }
        for replica in [&a, &b] {
            let r = client
                .get(replica.url(&format!("/v1/memories/{id}/content")))
                .send()
                .await
                .unwrap();
            let status = r.status().as_u16();
            let back = r.bytes().await.unwrap();
            assert_eq!(
                status,
                200,
                "round {round}, through {}: {}",
                replica.name,
                String::from_utf8_lossy(&back)
            );
            assert!(
                back[..] == content[..],
                "round {round}: content through {} differs",
                replica.name
            );
        }
        let deleted = client
            .delete(a.url(&format!("/v1/memories/{id}")))
            .send()
            .await
            .unwrap();
        assert_eq!(deleted.status().as_u16(), 204, "round {round}");
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let runs = gc.await.unwrap();
    assert!(runs > 10, "B ran GC only {runs} times");
}
