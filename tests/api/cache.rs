//! The hot cache: the in-process LRU of decoded frames, and Redis shared by
//! replicas. The Redis tests use a real server: `CAIRN_TEST_REDIS_URL`
//! (`.ci/run` sets it) and, to be killed mid-load, a `redis-server` of their
//! own; without them they say they were skipped, except under CI (`CI` set),
//! where they fail.

use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use axum::http::StatusCode;

use crate::helpers::{TestApp, noise_lines, spawn_app_with, split_lines, tiny_frames};

/// The value of one sample as exposed (labels sorted by name), or 0.
pub(crate) async fn sample(app: &TestApp, series: &str) -> f64 {
    let text = String::from_utf8(app.get("/metrics").await.body.to_vec()).unwrap();
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .find_map(|l| {
            let (name, value) = l.rsplit_once(' ')?;
            (name == series).then(|| value.parse::<f64>().unwrap())
        })
        .unwrap_or(0.0)
}

/// Lines `a..=b` (1-based) of `content`, as the API answers them.
fn expected_lines(content: &[u8], a: usize, b: usize) -> String {
    let lines = split_lines(content);
    String::from_utf8(lines[a - 1..b].concat()).unwrap()
}

/// Frames of 4 KiB, nothing inline: a 200 KiB memory spans ~50 frames.
pub(crate) fn small_frames(config: &mut cairn::config::Config) {
    tiny_frames(config);
    config.frame_bytes = 4096;
}

#[tokio::test]
async fn a_second_read_of_a_frame_is_served_decoded_from_memory() {
    let app = spawn_app_with(small_frames).await;
    let content = noise_lines(7, 200_000);
    let id = app.put_id(content.clone()).await;
    let hit = r#"cairn_cache_lookups_total{layer="frames",result="hit"}"#;
    let miss = r#"cairn_cache_lookups_total{layer="frames",result="miss"}"#;
    let uri = format!("/v1/memories/{id}/lines?start=100&end=120");
    let first = app.get(&uri).await;
    assert_eq!(first.status, StatusCode::OK);
    let misses = sample(&app, miss).await;
    assert!(misses >= 1.0, "the first read decodes");
    assert_eq!(sample(&app, hit).await, 0.0);
    let second = app.get(&uri).await;
    assert_eq!(second.json()["text"], first.json()["text"]);
    assert_eq!(
        second.json()["text"].as_str().unwrap(),
        expected_lines(&content, 100, 120)
    );
    assert!(sample(&app, hit).await >= 1.0, "the second read hits");
    assert_eq!(sample(&app, miss).await, misses, "and decodes nothing");
}

#[tokio::test]
async fn a_search_hit_s_frame_is_decoded_for_the_slice_that_follows() {
    let app = spawn_app_with(small_frames).await;
    let mut content = noise_lines(11, 100_000);
    content.extend_from_slice(b"the xylophonic failure is here\n");
    content.extend(noise_lines(12, 100_000));
    let id = app.put_id(content).await;
    let hit = r#"cairn_cache_lookups_total{layer="frames",result="hit"}"#;
    let miss = r#"cairn_cache_lookups_total{layer="frames",result="miss"}"#;
    let found = app.get("/v1/search?q=xylophonic&wait_ms=10000").await;
    assert_eq!(found.status, StatusCode::OK);
    let result = &found.json()["results"][0];
    assert_eq!(result["id"], id.as_str());
    let line = result["hits"][0]["line"].as_u64().unwrap();
    let misses = sample(&app, miss).await;
    assert!(
        misses >= 1.0,
        "the search read its hit's frame through the cache"
    );
    let hits = sample(&app, hit).await;
    let slice = app
        .get(&format!("/v1/memories/{id}/lines?start={line}&end={line}"))
        .await;
    assert_eq!(slice.status, StatusCode::OK);
    assert!(
        slice.json()["text"]
            .as_str()
            .unwrap()
            .contains("xylophonic")
    );
    // (The slice also reads ahead of its line, so it may decode more.)
    assert!(sample(&app, hit).await > hits, "the slice found it decoded");
}

#[tokio::test]
async fn frame_cache_of_zero_bytes_decodes_every_time() {
    let app = spawn_app_with(|c| {
        small_frames(c);
        c.frame_cache_bytes = 0;
    })
    .await;
    let id = app.put_id(noise_lines(8, 50_000)).await;
    for _ in 0..2 {
        let resp = app
            .get(&format!("/v1/memories/{id}/lines?start=1&end=5"))
            .await;
        assert_eq!(resp.status, StatusCode::OK);
    }
    let text = String::from_utf8(app.get("/metrics").await.body.to_vec()).unwrap();
    assert!(
        !text.contains(r#"layer="frames""#),
        "no lookups when the cache is off"
    );
}

#[tokio::test]
async fn a_redis_that_is_down_from_the_start_only_degrades_the_cache() {
    // A port nothing listens on: connection refused at once.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let app = spawn_app_with(|c| {
        small_frames(c);
        c.frame_cache_bytes = 0;
        c.redis_url = Some(format!("redis://127.0.0.1:{port}"));
    })
    .await;
    let content = noise_lines(9, 60_000);
    let id = app.put_id(content.clone()).await;
    for start in [1, 200, 400, 1, 200] {
        let resp = app
            .get(&format!(
                "/v1/memories/{id}/lines?start={start}&end={}",
                start + 9
            ))
            .await;
        assert_eq!(resp.status, StatusCode::OK);
        assert_eq!(
            resp.json()["text"].as_str().unwrap(),
            expected_lines(&content, start, start + 9)
        );
    }
    let ready = app.get("/readyz").await;
    assert_eq!(ready.status, StatusCode::OK, "the stores answer");
    let ready = ready.json();
    assert_eq!(ready["status"], "degraded");
    assert!(
        ready["cache"].as_str().unwrap().starts_with("degraded: "),
        "{ready}"
    );
    assert_eq!(
        sample(&app, r#"cairn_cache_degraded{layer="redis"}"#).await,
        1.0
    );
    let failures = sample(
        &app,
        r#"cairn_cache_errors_total{layer="redis",reason="error"}"#,
    )
    .await
        + sample(
            &app,
            r#"cairn_cache_errors_total{layer="redis",reason="timeout"}"#,
        )
        .await;
    assert!(failures >= 3.0, "{failures} failures counted");
    assert!(
        sample(
            &app,
            r#"cairn_cache_errors_total{layer="redis",reason="circuit_open"}"#
        )
        .await
            >= 1.0,
        "once open, the circuit skips Redis"
    );
}

/// The Redis URL of the machine's server, or `None` (skipped) outside CI.
pub(crate) fn redis_url() -> Option<String> {
    match std::env::var("CAIRN_TEST_REDIS_URL") {
        Ok(url) if !url.is_empty() => Some(url),
        _ => {
            assert!(
                std::env::var_os("CI").is_none(),
                "CAIRN_TEST_REDIS_URL is not set, and CI must run the Redis tests"
            );
            eprintln!("skipped: CAIRN_TEST_REDIS_URL is not set (e.g. redis://127.0.0.1:6379)");
            None
        }
    }
}

/// A key prefix of this test run alone, so runs never see each other's keys.
pub(crate) fn unique_prefix(test: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("cairn-test-{test}-{}-{nanos}", std::process::id())
}

pub(crate) async fn redis_keys(url: &str, pattern: &str) -> Vec<String> {
    let client = redis::Client::open(url).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    redis::cmd("KEYS")
        .arg(pattern)
        .query_async(&mut conn)
        .await
        .unwrap()
}

/// Waits until Redis holds a key matching `pattern` (the cache fills in the background).
pub(crate) async fn wait_for_keys(url: &str, pattern: &str) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let keys = redis_keys(url, pattern).await;
        if !keys.is_empty() || Instant::now() > deadline {
            return keys;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn frames_are_shared_through_redis_and_a_bad_entry_is_never_served() {
    let Some(url) = redis_url() else { return };
    let prefix = unique_prefix("shared");
    let tune = |c: &mut cairn::config::Config| {
        small_frames(c);
        c.frame_cache_bytes = 0;
        c.redis_url = Some(url.clone());
        c.redis_prefix = prefix.clone();
        c.redis_timeout_ms = 1000;
    };
    let writer = spawn_app_with(tune).await;
    let content = noise_lines(10, 100_000);
    let id = writer.put_id(content.clone()).await;
    let uri = format!("/v1/memories/{id}/lines?start=500&end=510");
    let first = writer.get(&uri).await;
    assert_eq!(first.status, StatusCode::OK);
    let keys = wait_for_keys(&url, &format!("{prefix}:frame:{id}:*")).await;
    assert!(!keys.is_empty(), "the frame read went to Redis");
    let ready = writer.get("/readyz").await.json();
    assert_eq!(ready["status"], "ready");
    assert_eq!(ready["cache"], "ok");

    // Another replica (a new process over the same stores: replicas sharing
    // a key prefix share them, as cached object records are trusted) reads
    // the frame from Redis.
    let replica = writer.restart_with(tune).await;
    let hit = r#"cairn_cache_lookups_total{layer="redis",result="hit"}"#;
    let second = replica.get(&uri).await;
    assert_eq!(second.json()["text"], first.json()["text"]);
    assert!(sample(&replica, hit).await >= 1.0);

    // Garbage under every cached key: the answer is still the stored content.
    let client = redis::Client::open(url.as_str()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    for key in redis_keys(&url, &format!("{prefix}:frame:{id}:*")).await {
        let _: () = redis::cmd("SET")
            .arg(&key)
            .arg(b"not a zstd frame".as_slice())
            .query_async(&mut conn)
            .await
            .unwrap();
    }
    let third = replica.get(&uri).await;
    assert_eq!(third.status, StatusCode::OK);
    assert_eq!(
        third.json()["text"].as_str().unwrap(),
        expected_lines(&content, 500, 510)
    );
    let _: () = redis::cmd("DEL")
        .arg(redis_keys(&url, &format!("{prefix}:*")).await)
        .query_async(&mut conn)
        .await
        .unwrap_or(());
}

/// A `redis-server` of the test's own, on a free port, keeping nothing on disk.
struct OwnRedis {
    child: Child,
    url: String,
}

impl OwnRedis {
    fn start() -> Option<Self> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        Self::start_on(port)
    }

    fn start_on(port: u16) -> Option<Self> {
        let child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn();
        let Ok(child) = child else {
            assert!(
                std::env::var_os("CI").is_none(),
                "redis-server is not installed, and CI must run this test (apt-get install redis-server)"
            );
            eprintln!("skipped: redis-server is not installed");
            return None;
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        // A connect to itself (simultaneous open on an ephemeral port) is
        // not redis listening.
        while !std::net::TcpStream::connect(("127.0.0.1", port))
            .is_ok_and(|s| s.local_addr().ok() != s.peer_addr().ok())
        {
            assert!(Instant::now() < deadline, "redis-server did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
        Some(Self {
            child,
            url: format!("redis://127.0.0.1:{port}"),
        })
    }
}

impl Drop for OwnRedis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test]
async fn killing_redis_under_load_fails_no_request() {
    let Some(mut redis) = OwnRedis::start() else {
        return;
    };
    let app = spawn_app_with(|c| {
        small_frames(c);
        c.frame_cache_bytes = 0;
        c.redis_url = Some(redis.url.clone());
    })
    .await;
    let content = noise_lines(11, 300_000);
    let id = app.put_id(content.clone()).await;
    let total_lines = split_lines(&content).len();
    let app = Arc::new(app);
    let (ok, failed) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let stop = Arc::new(AtomicBool::new(false));
    let mut clients = Vec::new();
    for client in 0..8usize {
        let (app, id, content) = (app.clone(), id.clone(), content.clone());
        let (ok, failed, stop) = (ok.clone(), failed.clone(), stop.clone());
        clients.push(tokio::spawn(async move {
            let mut n = client * 97;
            while !stop.load(Ordering::Relaxed) {
                n = (n * 31 + 17) % (total_lines - 20);
                let start = n + 1;
                let resp = app
                    .get(&format!(
                        "/v1/memories/{id}/lines?start={start}&end={}",
                        start + 19
                    ))
                    .await;
                let right = resp.status == StatusCode::OK
                    && resp.json()["text"].as_str()
                        == Some(&expected_lines(&content, start, start + 19));
                if right { &ok } else { &failed }.fetch_add(1, Ordering::Relaxed);
            }
        }));
    }
    // Counted, not timed, so a busy machine only makes the test slower: 40
    // requests with Redis up, the kill, then 60 more served without it.
    let done = || ok.load(Ordering::Relaxed) + failed.load(Ordering::Relaxed);
    let wait_for = |count: usize, what: &'static str| {
        let done = &done;
        async move {
            let deadline = Instant::now() + Duration::from_secs(120);
            while done() < count {
                assert!(
                    Instant::now() < deadline,
                    "{what}: {} of {count} requests after 120 s",
                    done()
                );
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    };
    wait_for(40, "load with Redis up").await;
    let hits_before_kill = sample(
        &app,
        r#"cairn_cache_lookups_total{layer="redis",result="hit"}"#,
    )
    .await;
    redis.child.kill().unwrap();
    redis.child.wait().unwrap();
    let at_kill = done();
    wait_for(at_kill + 60, "load after the kill").await;
    stop.store(true, Ordering::Relaxed);
    for client in clients {
        client.await.unwrap();
    }
    let (ok, failed) = (ok.load(Ordering::Relaxed), failed.load(Ordering::Relaxed));
    assert_eq!(failed, 0, "{failed} of {} requests failed", ok + failed);
    assert!(
        hits_before_kill >= 1.0,
        "Redis served frames before it died"
    );
    let ready = app.get("/readyz").await;
    assert_eq!(ready.status, StatusCode::OK);
    assert_eq!(ready.json()["status"], "degraded", "{}", ready.json());
    assert_eq!(
        sample(&app, r#"cairn_cache_degraded{layer="redis"}"#).await,
        1.0
    );

    // Redis comes back on the same port: after the breaker's pause, one probe
    // closes the circuit and frames are cached again.
    let port: u16 = redis.url.rsplit(':').next().unwrap().parse().unwrap();
    let _back = OwnRedis::start_on(port).unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let resp = app
            .get(&format!("/v1/memories/{id}/lines?start=1&end=5"))
            .await;
        assert_eq!(resp.status, StatusCode::OK);
        let ready = app.get("/readyz").await.json();
        if ready["status"] == "ready" {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the cache never recovered: {ready}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    assert_eq!(
        sample(&app, r#"cairn_cache_degraded{layer="redis"}"#).await,
        0.0
    );
}

#[tokio::test]
async fn two_replicas_share_a_daily_budget_through_redis_and_fall_back_when_it_dies() {
    let Some(redis) = OwnRedis::start() else {
        return;
    };
    let prefix = format!("budget-test-{}", std::process::id());
    async fn usage(app: &TestApp) -> crate::helpers::Resp {
        let report = r#"{"model": "gpt-4o", "input_tokens": 100, "output_tokens": 5}"#;
        app.post(
            "/v1/usage",
            Some("application/json"),
            &[],
            report.to_owned(),
        )
        .await
    }
    async fn governor(app: &TestApp) -> StatusCode {
        let body = r#"{"tokens": 10}"#.to_owned();
        app.post("/v1/governor", Some("application/json"), &[], body)
            .await
            .status
    }
    let tune = |c: &mut cairn::config::Config| {
        c.redis_url = Some(redis.url.clone());
        c.redis_prefix = prefix.clone();
        // A loaded machine (the backend suites run side by side in .ci/run)
        // can miss the 50 ms default deadline, and a replica then answers
        // from its own view: this test is about sharing, not the deadline.
        c.redis_timeout_ms = 1000;
        c.daily_token_budget = Some(300);
    };
    let (a, b) = (spawn_app_with(tune).await, spawn_app_with(tune).await);
    // 105 tokens through A, 105 through B: 210 of 300, both still answer.
    assert_eq!(usage(&a).await.status, StatusCode::OK);
    assert_eq!(usage(&b).await.status, StatusCode::OK);
    assert_eq!(governor(&b).await, StatusCode::OK);
    // 105 more through A: 315, the sum of both, is over the budget...
    let spent = usage(&a).await;
    assert_eq!(spent.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(spent.json()["error"]["spent"], 315.0);
    // ...and B, which saw only 105 itself, refuses too.
    assert_eq!(governor(&b).await, StatusCode::TOO_MANY_REQUESTS);
    // Redis dies mid-day: each replica falls back to its own view and says so.
    drop(redis);
    assert_eq!(
        governor(&b).await,
        StatusCode::OK,
        "B's own view: 105 of 300"
    );
    assert_eq!(
        governor(&a).await,
        StatusCode::OK,
        "A's own view: 210 of 300"
    );
    // B's own view still enforces the budget: 210, then 315.
    assert_eq!(usage(&b).await.status, StatusCode::OK);
    assert_eq!(usage(&b).await.status, StatusCode::TOO_MANY_REQUESTS);
    let ready = b.get("/readyz").await;
    assert_eq!(ready.status, StatusCode::OK);
    assert_eq!(
        ready.json()["status"],
        "degraded",
        "{}",
        String::from_utf8_lossy(&ready.body)
    );
    a.shutdown().await;
    b.shutdown().await;
}
