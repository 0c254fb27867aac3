//! Object records (frame index, inline data) in the shared Redis cache: used
//! by a replica that has not read them yet, dropped by GC before the row goes
//! (with a tombstone that keeps fills out), and no GC at all while Redis
//! cannot be invalidated. Same Redis rules as `cache.rs`.

use std::time::{Duration, Instant};

use axum::http::StatusCode;
use serde_json::{Value, json};

use crate::cache::{redis_keys, redis_url, sample, small_frames, unique_prefix, wait_for_keys};
use crate::helpers::{TestApp, noise_lines, spawn_app_with, split_lines};

const OBJECT_HITS: &str = r#"cairn_cache_lookups_total{layer="redis_object",result="hit"}"#;

/// Runs GC with no grace period; answers its report.
async fn gc_now(app: &TestApp) -> Value {
    // Objects become collectable once their release is in the past.
    tokio::time::sleep(Duration::from_millis(5)).await;
    let resp = app
        .post(
            "/v1/admin/gc",
            Some("application/json"),
            &[],
            json!({"grace_seconds": 0}).to_string(),
        )
        .await;
    assert_eq!(resp.status, StatusCode::OK, "{}", resp.text());
    resp.json()
}

/// Asserts that the whole content of `id` reads back as `content`.
async fn assert_content(app: &TestApp, id: &str, content: &[u8]) {
    let back = app.get(&format!("/v1/memories/{id}/content")).await;
    assert_eq!(back.status, StatusCode::OK, "{}", back.text());
    assert!(back.body[..] == content[..], "the content differs");
}

/// Lines 300..=310 of `id`, asserted to be those of `content`.
async fn assert_slice(app: &TestApp, id: &str, content: &[u8]) {
    let resp = app
        .get(&format!("/v1/memories/{id}/lines?start=300&end=310"))
        .await;
    assert_eq!(resp.status, StatusCode::OK, "{}", resp.text());
    let expected = String::from_utf8(split_lines(content)[299..310].concat()).unwrap();
    assert_eq!(resp.json()["text"].as_str().unwrap(), expected);
}

async fn redis(url: &str) -> redis::aio::MultiplexedConnection {
    redis::Client::open(url)
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap()
}

/// Settings for a test with its own key prefix on the machine's Redis.
fn with_redis(url: &str, prefix: &str) -> impl Fn(&mut cairn::config::Config) {
    let (url, prefix) = (url.to_owned(), prefix.to_owned());
    move |c| {
        small_frames(c);
        c.redis_url = Some(url.clone());
        c.redis_prefix = prefix.clone();
        c.redis_timeout_ms = 1000;
        // No indexer: only the requests of the test read object records.
        c.search_index = false;
    }
}

async fn drop_keys(url: &str, prefix: &str) {
    let keys = redis_keys(url, &format!("{prefix}:*")).await;
    if !keys.is_empty() {
        let _: () = redis::cmd("DEL")
            .arg(keys)
            .query_async(&mut redis(url).await)
            .await
            .unwrap();
    }
}

#[tokio::test]
async fn a_replica_opens_a_memory_with_the_object_record_another_one_cached() {
    let Some(url) = redis_url() else { return };
    let prefix = unique_prefix("object-shared");
    let tune = with_redis(&url, &prefix);
    let writer = spawn_app_with(&tune).await;
    let content = noise_lines(21, 100_000);
    let id = writer.put_id(content.clone()).await;
    assert_slice(&writer, &id, &content).await;
    let key = format!("{prefix}:object:{id}");
    assert_eq!(
        wait_for_keys(&url, &key).await,
        std::slice::from_ref(&key),
        "the first read cached the object record"
    );

    // A new process over the same data: nothing read yet in memory.
    let replica = writer.restart_with(&tune).await;
    assert_eq!(sample(&replica, OBJECT_HITS).await, 0.0);
    assert_slice(&replica, &id, &content).await;
    assert!(
        sample(&replica, OBJECT_HITS).await >= 1.0,
        "the replica took the record from Redis"
    );
    assert_eq!(
        redis_keys(&url, &key).await,
        [key],
        "the entry was read as valid, not dropped"
    );
    drop_keys(&url, &prefix).await;
}

#[tokio::test]
async fn gc_drops_the_cached_record_first_and_a_later_put_stores_the_content_again() {
    let Some(url) = redis_url() else { return };
    let prefix = unique_prefix("object-gc");
    let app = spawn_app_with(with_redis(&url, &prefix)).await;
    let content = noise_lines(22, 100_000);
    let id = app.put_id(content.clone()).await;
    assert_slice(&app, &id, &content).await;
    let (key, tombstone) = (
        format!("{prefix}:object:{id}"),
        format!("{prefix}:object-gone:{id}"),
    );
    assert!(!wait_for_keys(&url, &key).await.is_empty(), "cached");

    let deleted = app.delete(&format!("/v1/memories/{id}")).await;
    assert_eq!(deleted.status, StatusCode::NO_CONTENT);
    assert_eq!(gc_now(&app).await["removed_objects"], 1);
    assert!(redis_keys(&url, &key).await.is_empty(), "entry dropped");
    let ttl: i64 = redis::cmd("TTL")
        .arg(&tombstone)
        .query_async(&mut redis(&url).await)
        .await
        .unwrap();
    assert!((1..=60).contains(&ttl), "tombstone held for {ttl} s");

    // The put finds no record (none cached, none stored) and keeps its own file.
    assert_eq!(app.put_id(content.clone()).await, id);
    assert!(app.object_exists(&id).await);
    assert_content(&app, &id, &content).await;

    // A new process's read of the new row fills nothing while the tombstone
    // lives, and fills once it is gone.
    let tune = with_redis(&url, &prefix);
    let reader = app.restart_with(&tune).await;
    assert_slice(&reader, &id, &content).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        redis_keys(&url, &key).await.is_empty(),
        "a fill got past the tombstone"
    );
    let _: () = redis::cmd("DEL")
        .arg(&tombstone)
        .query_async(&mut redis(&url).await)
        .await
        .unwrap();
    let reader = reader.restart_with(&tune).await;
    assert_slice(&reader, &id, &content).await;
    assert!(!wait_for_keys(&url, &key).await.is_empty(), "cached again");
    assert_content(&reader, &id, &content).await;
    drop_keys(&url, &prefix).await;
}

#[tokio::test]
async fn a_put_never_trusts_a_cached_record_of_an_object_the_store_no_longer_has() {
    let Some(url) = redis_url() else { return };
    let prefix = unique_prefix("object-stale");
    let app = spawn_app_with(with_redis(&url, &prefix)).await;
    let content = noise_lines(24, 100_000);
    let id = app.put_id(content.clone()).await;
    assert_slice(&app, &id, &content).await;
    let key = format!("{prefix}:object:{id}");
    assert!(!wait_for_keys(&url, &key).await.is_empty(), "cached");
    let mut conn = redis(&url).await;
    let entry: Vec<u8> = redis::cmd("GET")
        .arg(&key)
        .query_async(&mut conn)
        .await
        .unwrap();

    let deleted = app.delete(&format!("/v1/memories/{id}")).await;
    assert_eq!(deleted.status, StatusCode::NO_CONTENT);
    assert_eq!(gc_now(&app).await["removed_objects"], 1);
    assert!(!app.object_exists(&id).await, "GC removed the file");
    // The entry comes back as if an invalidation had been lost (or another
    // deployment shared the prefix): Redis says the object is stored, it is not.
    let _: () = redis::cmd("SET")
        .arg(&key)
        .arg(entry)
        .query_async(&mut conn)
        .await
        .unwrap();
    let _: () = redis::cmd("DEL")
        .arg(format!("{prefix}:object-gone:{id}"))
        .query_async(&mut conn)
        .await
        .unwrap();

    // The put asks the database, finds no object and keeps its own file.
    assert_eq!(app.put_id(content.clone()).await, id);
    assert!(app.object_exists(&id).await, "the put stored its file");
    assert_content(&app, &id, &content).await;
    drop_keys(&url, &prefix).await;
}

#[tokio::test]
async fn while_redis_is_unreachable_gc_keeps_unreferenced_objects_and_reads_go_on() {
    // A port nothing listens on: connection refused at once.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let app = spawn_app_with(|c| {
        small_frames(c);
        c.redis_url = Some(format!("redis://127.0.0.1:{port}"));
    })
    .await;
    let content = noise_lines(23, 100_000);
    let id = app.put_id(content.clone()).await;
    assert_slice(&app, &id, &content).await;
    let deleted = app.delete(&format!("/v1/memories/{id}")).await;
    assert_eq!(deleted.status, StatusCode::NO_CONTENT);

    let started = Instant::now();
    let report = gc_now(&app).await;
    assert_eq!(report["removed_objects"], 0, "{report}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "GC gave up on Redis quickly"
    );
    assert!(app.object_exists(&id).await, "the object is kept");

    assert_eq!(app.put_id(content.clone()).await, id);
    assert_slice(&app, &id, &content).await;
    assert_content(&app, &id, &content).await;
}
