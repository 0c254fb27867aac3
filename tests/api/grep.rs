//! `GET /v1/memories/{id}/grep`: matching lines with context, paged by
//! `after`/`next` under a scan cap, on multi-frame objects.

use axum::http::StatusCode;
use serde_json::Value;

use crate::helpers::{TestApp, enc, spawn_app, spawn_app_with, tiny_frames};

/// A log of `lines` lines; every seventh is an error.
fn log(lines: u64) -> String {
    (1..=lines)
        .map(|n| {
            if n % 7 == 0 {
                format!("{n:05} ERROR job {n} failed: timeout\n")
            } else {
                format!("{n:05} INFO job {n} done\n")
            }
        })
        .collect()
}

async fn grep(app: &TestApp, id: &str, query: &str) -> Value {
    let resp = app.get(&format!("/v1/memories/{id}/grep?{query}")).await;
    assert_eq!(resp.status, StatusCode::OK, "{}", resp.text());
    resp.json()
}

fn lines(answer: &Value) -> Vec<u64> {
    answer["matches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["line"].as_u64().unwrap())
        .collect()
}

#[tokio::test]
async fn matches_come_with_numbers_context_and_a_pointer_that_fetches_them() {
    let app = spawn_app().await;
    let id = app.put_id(log(30)).await;
    let answer = grep(&app, &id, "pattern=ERROR&context=1").await;
    assert_eq!(lines(&answer), [7, 14, 21, 28]);
    let first = &answer["matches"][0];
    assert_eq!(first["text"], "00007 ERROR job 7 failed: timeout");
    assert_eq!(
        first["before"],
        serde_json::json!(["00006 INFO job 6 done"])
    );
    assert_eq!(first["after"], serde_json::json!(["00008 INFO job 8 done"]));
    assert_eq!(first["cut"], false);
    assert_eq!(answer["truncated"], false);
    assert_eq!(answer["next"], Value::Null);
    assert_eq!(answer["id"], id.as_str());
    let uri = first["uri"].as_str().unwrap();
    assert_eq!(uri, format!("mem://{id}#L7-7"));
    let slice = app.get(&format!("/v1/fetch?uri={}", enc(uri))).await.json();
    assert_eq!(slice["text"], "00007 ERROR job 7 failed: timeout\n");
    // Options: a literal, any case, a prefix id.
    let fixed = grep(&app, &id[..12], "pattern=job%201&fixed=true").await;
    assert_eq!(lines(&fixed), [1, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19]);
    let any_case = grep(&app, &id, "pattern=error&ignore_case=true&max_matches=2").await;
    assert_eq!(lines(&any_case), [7, 14]);
    assert_eq!(
        (any_case["truncated"].clone(), any_case["next"].clone()),
        (Value::Bool(true), 14.into())
    );
    let rest = grep(&app, &id, "pattern=error&ignore_case=true&after=14").await;
    assert_eq!(lines(&rest), [21, 28]);
}

#[tokio::test]
async fn the_scan_cap_pages_a_big_memory_and_next_resumes_exactly() {
    let app = spawn_app_with(|c| {
        tiny_frames(c);
        c.grep_scan_bytes = 512;
    })
    .await;
    let id = app.put_id(log(700)).await;
    let (mut after, mut found, mut pages) = (0u64, Vec::new(), 0);
    loop {
        let answer = grep(&app, &id, &format!("pattern=ERROR&after={after}")).await;
        pages += 1;
        assert!(answer["scanned_bytes"].as_u64().unwrap() <= 512 + 64);
        found.extend(lines(&answer));
        match answer["next"].as_u64() {
            Some(next) => {
                assert_eq!(answer["truncated"], true);
                assert!(next > after);
                after = next;
            }
            None => break,
        }
    }
    assert_eq!(found, (1..=100).map(|k| k * 7).collect::<Vec<u64>>());
    assert!(pages > 20, "{pages} pages");
}

#[tokio::test]
async fn bad_patterns_and_options_are_clear_400s() {
    let app = spawn_app().await;
    let id = app.put_id(log(10)).await;
    for (query, field) in [
        ("pattern=a(b", "pattern"),
        ("pattern=(a%7B1000%7D)%7B1000%7D", "pattern"),
        ("pattern=a&context=11", "context"),
        ("pattern=a&max_matches=0", "max_matches"),
        ("pattern=a&max_matches=1001", "max_matches"),
    ] {
        let body = app
            .get(&format!("/v1/memories/{id}/grep?{query}"))
            .await
            .assert_error(StatusCode::BAD_REQUEST, "invalid_field");
        assert_eq!(body["field"], field, "{query}: {body}");
    }
    app.get(&format!("/v1/memories/{id}/grep"))
        .await
        .assert_error(StatusCode::BAD_REQUEST, "invalid_query");
    app.get(&format!("/v1/memories/{}/grep?pattern=a", "0".repeat(64)))
        .await
        .assert_error(StatusCode::NOT_FOUND, "not_found");
}
