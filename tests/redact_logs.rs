//! The real server, logging at trace level as JSON, is given secrets: none of
//! them appears in its logs.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

#[path = "common/fakes.rs"]
#[allow(dead_code)] // shared with the API tests
mod fakes;

#[path = "common/served.rs"]
mod served;

use served::free_port;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secrets_put_to_the_server_never_reach_its_logs() {
    let dir = tempfile::tempdir().unwrap();
    let log_path = dir.path().join("server.log");
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let mut server = served::serve(&dir.path().join("data"), port)
        .env("RUST_LOG", "trace")
        .env("CAIRN_LOG_FORMAT", "json")
        .stderr(std::fs::File::create(&log_path).unwrap())
        .spawn()
        .unwrap();
    let client = reqwest::Client::new();
    served::wait_ready(&client, &base, Duration::from_secs(30)).await;

    let fakes = fakes::fakes(7);
    let text: String = fakes.iter().map(|f| format!("{}\n", f.line)).collect();
    let mut ids = Vec::new();
    // A JSON put, a raw put, and a large raw put stored as a blob file.
    let json = client
        .post(format!("{base}/v1/memories"))
        .json(&serde_json::json!({ "content": text, "type": "TOOL_OUTPUT" }))
        .send()
        .await
        .unwrap();
    let raw = client
        .post(format!("{base}/v1/memories?subtype=env"))
        .header("content-type", "text/plain")
        .body(format!("{text}trailing\n"))
        .send()
        .await
        .unwrap();
    let large = client
        .post(format!("{base}/v1/memories"))
        .header("content-type", "text/x-log")
        .body(text.repeat(3000))
        .send()
        .await
        .unwrap();
    for resp in [json, raw, large] {
        assert!(resp.status().is_success(), "put failed: {}", resp.status());
        let body: serde_json::Value = resp.json().await.unwrap();
        assert_eq!(
            body["redacted"]["total"].as_u64().unwrap() % fakes.len() as u64,
            0
        );
        assert!(body["redacted"]["total"].as_u64().unwrap() > 0);
        ids.push(body["id"].as_str().unwrap().to_owned());
    }
    // Reads of every kind, and a bad put whose body holds secrets.
    for id in &ids {
        for path in [
            "",
            "/content",
            "/lines?start=1&end=50",
            "/chunks/0",
            "/bytes?offset=0&length=4096",
        ] {
            let r = client
                .get(format!("{base}/v1/memories/{id}{path}"))
                .send()
                .await
                .unwrap();
            assert!(r.status().is_success(), "{path}: {}", r.status());
            let body = r.text().await.unwrap();
            for fake in &fakes {
                assert!(
                    !body.contains(&fake.secret),
                    "{} served by {path}",
                    fake.kind
                );
            }
        }
    }
    let bad = client
        .post(format!("{base}/v1/memories"))
        .json(&serde_json::json!({ "content": text, "type": "not a type!" }))
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), 400);

    server.kill().unwrap();
    server.wait().unwrap();
    let log = std::fs::read_to_string(&log_path).unwrap();
    // The log did capture the requests (so an absent secret means something).
    let requests = log
        .lines()
        .filter(|l| l.contains("finished processing request") && l.contains("/v1/memories"))
        .count();
    let sent = 3 + 3 * 5 + 1; // puts, reads, the bad put
    assert!(requests >= sent, "the requests are not in the log:\n{log}");
    for fake in &fakes {
        assert!(
            !log.contains(&fake.secret),
            "{} appears in the server log",
            fake.kind
        );
    }
}
