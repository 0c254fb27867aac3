//! Storage guarantees through the real router: concurrent dedup, integrity
//! errors on corrupted objects, ambiguous prefixes.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use cairn::app::App;
use cairn::config::Config;
use http_body_util::BodyExt;
use serde_json::Value;
use tower::ServiceExt;

async fn call(router: &axum::Router, request: Request<Body>) -> (StatusCode, Value) {
    let response = router.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    (status, serde_json::from_slice(&body).unwrap_or(Value::Null))
}

fn put_request(content: Vec<u8>) -> Request<Body> {
    Request::post("/v1/memories")
        .header(header::CONTENT_TYPE, "text/plain")
        .body(Body::from(content))
        .unwrap()
}

fn get(uri: &str) -> Request<Body> {
    Request::get(uri).body(Body::empty()).unwrap()
}

/// Text of `lines` numbered lines, varied enough not to compress to nothing.
fn log_text(lines: usize, seed: u64) -> Vec<u8> {
    let mut out = String::new();
    let mut x = seed | 1;
    for i in 1..=lines {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        out.push_str(&format!(
            "{i:07} worker-{} took {} ms on /srv/data/{:x}.json\n",
            x % 97,
            x % 10_000,
            x
        ));
    }
    out.into_bytes()
}

fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                out.extend(files_under(&path));
            } else {
                out.push(path);
            }
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn thirty_two_concurrent_identical_puts_make_one_memory_and_one_object() {
    let dir = tempfile::tempdir().unwrap();
    let app = App::build(&Config::with_data_dir(dir.path()))
        .await
        .unwrap();
    let router = app.router();
    let content = log_text(60_000, 7); // ~3.5 MB: a multi-frame blob file
    let mut tasks = Vec::new();
    for _ in 0..32 {
        let (router, content) = (router.clone(), content.clone());
        tasks.push(tokio::spawn(async move {
            call(&router, put_request(content)).await
        }));
    }
    let mut created = 0;
    let mut deduplicated = 0;
    let mut ids = std::collections::HashSet::new();
    for task in tasks {
        let (status, body) = task.await.unwrap();
        ids.insert(body["id"].as_str().unwrap().to_owned());
        match status {
            StatusCode::CREATED => {
                assert_eq!(body["deduplicated"], Value::Bool(false));
                created += 1;
            }
            StatusCode::OK => {
                assert_eq!(body["deduplicated"], Value::Bool(true));
                deduplicated += 1;
            }
            other => panic!("unexpected {other}: {body}"),
        }
    }
    assert_eq!((created, deduplicated, ids.len()), (1, 31, 1));
    let objects = files_under(&dir.path().join("blobs"));
    assert_eq!(objects.len(), 1, "{objects:?}");
    assert!(
        files_under(&dir.path().join("tmp")).is_empty(),
        "temp files left behind"
    );
    let (_, list) = call(&router, get("/v1/memories")).await;
    assert_eq!(list["memories"].as_array().unwrap().len(), 1);
    app.shutdown().await;
}

#[tokio::test]
async fn a_flipped_byte_in_a_frame_is_an_integrity_error_naming_the_id() {
    let dir = tempfile::tempdir().unwrap();
    let app = App::build(&Config::with_data_dir(dir.path()))
        .await
        .unwrap();
    let router = app.router();
    let content = log_text(60_000, 11);
    let (status, put) = call(&router, put_request(content.clone())).await;
    assert_eq!(status, StatusCode::CREATED);
    let id = put["id"].as_str().unwrap().to_owned();
    let other = log_text(60_000, 12);
    let (_, other_put) = call(&router, put_request(other.clone())).await;
    let other_id = other_put["id"].as_str().unwrap().to_owned();

    // Flip one byte in the middle of the second frame's compressed data.
    let path = dir
        .path()
        .join("blobs")
        .join(&id[..2])
        .join(format!("{id}.zst"));
    let mut object = std::fs::read(&path).unwrap();
    let middle = object.len() / 2;
    object[middle] ^= 0x01;
    std::fs::write(&path, &object).unwrap();

    let lines = put["lines"].as_u64().unwrap();
    let mut failures = 0;
    for start in (1..lines).step_by(2_000) {
        let (status, body) = call(
            &router,
            get(&format!(
                "/v1/memories/{id}/lines?start={start}&end={}",
                start + 9
            )),
        )
        .await;
        match status {
            StatusCode::OK => {
                // Frames that were not touched still serve the right bytes.
                let text = body["text"].as_str().unwrap();
                let expected: Vec<&str> = std::str::from_utf8(&content)
                    .unwrap()
                    .split_inclusive('\n')
                    .skip(start as usize - 1)
                    .take(10)
                    .collect();
                assert_eq!(text, expected.concat());
            }
            StatusCode::INTERNAL_SERVER_ERROR => {
                assert_eq!(body["error"]["code"], "integrity_error");
                assert_eq!(body["error"]["id"].as_str(), Some(id.as_str()));
                assert!(body["error"]["message"].as_str().unwrap().contains(&id));
                failures += 1;
            }
            other => panic!("unexpected {other}: {body}"),
        }
    }
    assert!(failures > 0, "no slice hit the corrupted frame");
    // The whole-content read refuses too (the corrupt frame is never sent as content).
    let response = router
        .clone()
        .oneshot(get(&format!("/v1/memories/{id}/content")))
        .await
        .unwrap();
    let streamed = response.into_body().collect().await;
    assert!(streamed.is_err(), "a corrupt object streamed to the end");
    // Other memories are unaffected.
    let (status, body) = call(
        &router,
        get(&format!(
            "/v1/memories/{other_id}/lines?start=30000&end=30001"
        )),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert!(body["text"].as_str().unwrap().starts_with("0030000 "));
    let (status, _) = call(&router, get("/healthz")).await;
    assert_eq!(status, StatusCode::OK);
    app.shutdown().await;
}

#[tokio::test]
async fn corrupted_inline_content_is_an_integrity_error() {
    let dir = tempfile::tempdir().unwrap();
    let app = App::build(&Config::with_data_dir(dir.path()))
        .await
        .unwrap();
    let router = app.router();
    let (_, small) = call(&router, put_request(b"tiny inline content\n".to_vec())).await;
    let (_, framed) = call(&router, put_request(log_text(300, 5))).await;
    let db = sqlx::SqlitePool::connect(&format!(
        "sqlite://{}",
        dir.path().join("meta.sqlite").display()
    ))
    .await
    .unwrap();
    for put in [&small, &framed] {
        let id = put["id"].as_str().unwrap();
        sqlx::query("UPDATE objects SET data = CAST(replace(CAST(data AS TEXT), 'e', 'E') AS BLOB) WHERE hash = ? AND layout = 'raw'")
            .bind(id)
            .execute(&db)
            .await
            .unwrap();
        // Inline zstd objects: flip a byte inside the first frame's payload.
        sqlx::query("UPDATE objects SET data = substr(data, 1, 40) || x'00' || substr(data, 42) WHERE hash = ? AND layout = 'inline'")
            .bind(id)
            .execute(&db)
            .await
            .unwrap();
        let (status, body) = call(&router, get(&format!("/v1/memories/{id}/lines"))).await;
        assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR, "{body}");
        assert_eq!(body["error"]["code"], "integrity_error");
        assert_eq!(body["error"]["id"].as_str(), Some(id));
    }
    app.shutdown().await;
}

#[tokio::test]
async fn an_ambiguous_prefix_is_a_409_and_a_longer_one_resolves() {
    let dir = tempfile::tempdir().unwrap();
    let app = App::build(&Config::with_data_dir(dir.path()))
        .await
        .unwrap();
    let router = app.router();
    let (_, put) = call(&router, put_request(b"first\n".to_vec())).await;
    let id = put["id"].as_str().unwrap().to_owned();
    // A second memory whose id shares the first 20 characters (no SHA-256 pair
    // that close can be found by brute force, so the row is written directly).
    let twin = format!("{}{}", &id[..20], "0".repeat(44));
    let db = sqlx::SqlitePool::connect(&format!(
        "sqlite://{}",
        dir.path().join("meta.sqlite").display()
    ))
    .await
    .unwrap();
    sqlx::query("INSERT INTO objects SELECT ?, bytes, lines, stored_bytes, layout, data, created_at FROM objects WHERE hash = ?")
        .bind(&twin)
        .bind(&id)
        .execute(&db)
        .await
        .unwrap();
    sqlx::query(
        "INSERT INTO memories (namespace, id, type, mime, tokens, summary, created_at, updated_at) \
         SELECT namespace, ?, type, mime, tokens, summary, created_at, updated_at FROM memories WHERE id = ?",
    )
    .bind(&twin)
    .bind(&id)
    .execute(&db)
    .await
    .unwrap();
    let (status, body) = call(&router, get(&format!("/v1/memories/{}", &id[..16]))).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["error"]["code"], "ambiguous_id");
    let (status, body) = call(&router, get(&format!("/v1/memories/{}/lines", &id[..24]))).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["text"], "first\n");
    app.shutdown().await;
}

#[tokio::test]
async fn reads_are_counted_in_batches() {
    let dir = tempfile::tempdir().unwrap();
    let app = App::build(&Config::with_data_dir(dir.path()))
        .await
        .unwrap();
    let router = app.router();
    let (_, put) = call(&router, put_request(b"counted\n".to_vec())).await;
    let id = put["id"].as_str().unwrap().to_owned();
    for _ in 0..3 {
        let (status, _) = call(&router, get(&format!("/v1/memories/{id}/lines"))).await;
        assert_eq!(status, StatusCode::OK);
    }
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    let (_, after) = call(&router, get(&format!("/v1/memories/{id}"))).await;
    assert_eq!(after["access_count"], 3);
    assert!(after["last_accessed_at"].is_string());
    app.shutdown().await;
}

#[tokio::test]
async fn a_leftover_object_file_without_metadata_is_replaced_not_trusted() {
    use sha2::Digest;
    let dir = tempfile::tempdir().unwrap();
    let app = App::build(&Config::with_data_dir(dir.path()))
        .await
        .unwrap();
    let router = app.router();
    let content = log_text(60_000, 21);
    let id = hex::encode(sha2::Sha256::digest(&content));
    // What a crash between linking an object and committing its metadata
    // leaves behind, here written with other settings (1 KiB frames, level 1).
    let fan = dir.path().join("blobs").join(&id[..2]);
    std::fs::create_dir_all(&fan).unwrap();
    let mut leftover = Vec::new();
    for part in content.chunks(1024) {
        leftover.extend(zstd::bulk::compress(part, 1).unwrap());
    }
    std::fs::write(fan.join(format!("{id}.zst")), &leftover).unwrap();

    let (status, put) = call(&router, put_request(content.clone())).await;
    assert_eq!(status, StatusCode::CREATED);
    assert_eq!(put["id"].as_str(), Some(id.as_str()));
    for start in [1, 20_000, 59_990] {
        let (status, body) = call(
            &router,
            get(&format!(
                "/v1/memories/{id}/lines?start={start}&end={}",
                start + 5
            )),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let want: String = std::str::from_utf8(&content)
            .unwrap()
            .split_inclusive('\n')
            .skip(start - 1)
            .take(6)
            .collect();
        assert_eq!(body["text"].as_str(), Some(want.as_str()));
    }
    let response = router
        .clone()
        .oneshot(get(&format!("/v1/memories/{id}/content")))
        .await
        .unwrap();
    let whole = response.into_body().collect().await.unwrap().to_bytes();
    assert!(whole[..] == content[..]);
    // A second put of the same content keeps the (now described) object.
    let (status, again) = call(&router, put_request(content.clone())).await;
    assert_eq!(
        (status, again["deduplicated"].as_bool()),
        (StatusCode::OK, Some(true))
    );
    assert_eq!(files_under(&dir.path().join("blobs")).len(), 1);
    app.shutdown().await;
}

/// The WAL does not grow with the writes: the checkpointer thread copies it
/// into the database while puts go on (commits never checkpoint), so the
/// WAL is reused from its start instead of holding every page ever written.
/// (Without the checkpointer, three bursts of 100 puts here left a 20 MB WAL.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_wal_is_checkpointed_while_puts_go_on() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = Config::with_data_dir(dir.path());
    config.search_index = false; // only the puts write
    let app = App::build(&config).await.unwrap();
    let router = app.router();
    let wal = dir.path().join("meta.sqlite-wal");
    let mut stored = 0;
    let mut sizes = Vec::new();
    // Many short bursts: the WAL restarts once a checkpoint caught up, so
    // with checkpoints it holds about a burst (on a fast machine, where a
    // checkpoint rarely catches up during a burst), without them all of it.
    for burst in 0..10u64 {
        for i in 0..30u64 {
            // ~40 KB of text each, stored compressed inside the database.
            let content = log_text(800, (burst * 1000 + i) * 2 + 1);
            let (status, put) = call(&router, put_request(content)).await;
            assert_eq!(status, StatusCode::CREATED);
            stored += put["stored_bytes"].as_u64().unwrap();
        }
        sizes.push(std::fs::metadata(&wal).unwrap().len());
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    }
    // Every stored byte passes through the WAL: without checkpoints it ends
    // at least as large as what was stored. With them it is reused, and its
    // high-water mark stays well below that — a half on a quiet machine; a
    // busy one (the other tests of this binary running beside it) once
    // starved the checkpointer for half the bursts, so the bound is 3/4.
    assert!(
        stored > 3 << 20,
        "the puts should store over 3 MiB: {stored}"
    );
    let largest = sizes.iter().copied().max().unwrap_or(0);
    assert!(
        largest < stored / 4 * 3,
        "the WAL held {sizes:?} bytes after each burst, of {stored} bytes stored"
    );
}
