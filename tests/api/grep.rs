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

/// Every (memory, line) a grep across memories finds, answer after answer.
async fn across_all(app: &TestApp, query: &str, key: Option<&str>) -> (Vec<(String, u64)>, u32) {
    let (mut found, mut answers, mut cursor) = (Vec::new(), 0, None::<String>);
    loop {
        let mut uri = format!("/v1/grep?{query}");
        if let Some(c) = &cursor {
            uri.push_str(&format!("&cursor={}", enc(c)));
        }
        let resp = match key {
            Some(key) => app.get_as(&uri, key).await,
            None => app.get(&uri).await,
        };
        assert_eq!(resp.status, StatusCode::OK, "{}", resp.text());
        let answer = resp.json();
        answers += 1;
        for memory in answer["results"].as_array().unwrap() {
            assert!(!memory["matches"].as_array().unwrap().is_empty());
            for m in memory["matches"].as_array().unwrap() {
                let id = memory["id"].as_str().unwrap().to_owned();
                found.push((id, m["line"].as_u64().unwrap()));
            }
        }
        cursor = answer["next_cursor"].as_str().map(str::to_owned);
        assert_eq!(answer["truncated"], cursor.is_some());
        if cursor.is_none() {
            return (found, answers);
        }
        assert!(answers < 1000, "paging did not end");
    }
}

#[tokio::test]
async fn grep_across_memories_groups_by_memory_newest_first_and_pages_exactly() {
    let app = spawn_app().await;
    let mut ids = Vec::new();
    for (n, kind) in [(20, "LOG"), (30, "TEST_RUN"), (40, "LOG")] {
        let put = app
            .put_json(serde_json::json!({"content": log(n), "type": kind}))
            .await
            .json();
        ids.push(put["id"].as_str().unwrap().to_owned());
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    let answer = app.get("/v1/grep?pattern=ERROR").await.json();
    let order: Vec<&str> = answer["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(order, [ids[2].as_str(), ids[1].as_str(), ids[0].as_str()]);
    assert_eq!(answer["results"][0]["type"], "LOG");
    assert_eq!(answer["results"][0]["uri"], format!("mem://{}", ids[2]));
    assert_eq!(answer["searched"], 3);
    assert_eq!(answer["next_cursor"], Value::Null);
    // Every match once, whatever the page size and the memories per answer.
    let expected: Vec<(String, u64)> = [(2, 40), (1, 30), (0, 20)]
        .iter()
        .flat_map(|&(i, n): &(usize, u64)| (1..=n / 7).map(move |k| (i, k * 7)))
        .map(|(i, line)| (ids[i].clone(), line))
        .collect();
    for query in [
        "pattern=ERROR&max_matches=2",
        "pattern=ERROR&memories=1",
        "pattern=ERROR&max_matches=1&memories=2",
    ] {
        let (found, answers) = across_all(&app, query, None).await;
        assert_eq!(found, expected, "{query}");
        assert!(answers > 1, "{query}");
    }
    let logs = app.get("/v1/grep?pattern=ERROR&type=log").await.json();
    assert_eq!(logs["results"].as_array().unwrap().len(), 2);
    app.get("/v1/grep?pattern=ERROR&cursor=nonsense")
        .await
        .assert_error(StatusCode::BAD_REQUEST, "invalid_request");
    app.get("/v1/grep?pattern=a(b")
        .await
        .assert_error(StatusCode::BAD_REQUEST, "invalid_field");
}

#[tokio::test]
async fn grep_across_memories_never_shows_another_namespace() {
    const ALPHA: &str = "key-alpha-0001";
    const BETA: &str = "key-beta-00002";
    let app = spawn_app_with(|c| c.api_keys = Some(format!("{ALPHA}:alpha,{BETA}:beta"))).await;
    let secret = app
        .put_json_as(
            ALPHA,
            serde_json::json!({"content": "alpha secret ERROR line\n"}),
        )
        .await
        .json();
    let alpha_id = secret["id"].as_str().unwrap().to_owned();
    app.put_json_as(BETA, serde_json::json!({"content": "beta ERROR line\n"}))
        .await;
    let (alpha, _) = across_all(&app, "pattern=ERROR", Some(ALPHA)).await;
    assert_eq!(alpha, [(alpha_id.clone(), 1)]);
    let (beta, _) = across_all(&app, "pattern=ERROR", Some(BETA)).await;
    assert_eq!(beta.len(), 1);
    assert_ne!(beta[0].0, alpha_id);
    // A cursor naming alpha's memory is not a way in.
    let forged = format!("1.{alpha_id}.0");
    app.get_as(&format!("/v1/grep?pattern=secret&cursor={forged}"), BETA)
        .await
        .assert_error(StatusCode::NOT_FOUND, "not_found");
    app.get_as(
        &format!("/v1/memories/{alpha_id}/grep?pattern=secret"),
        BETA,
    )
    .await
    .assert_error(StatusCode::NOT_FOUND, "not_found");
}

#[tokio::test]
async fn a_big_memory_is_found_by_search_and_grep_reads_only_what_the_index_allows() {
    let app = spawn_app().await;
    // Several 512 KiB frames; one line near the end holds the rare words.
    let mut content = log(120_000);
    let at = content.len() - 2000;
    let at = at + content[at..].find('\n').unwrap() + 1;
    content.insert_str(at, "a quokka sighting, logged once\n");
    let line = content[..at].matches('\n').count() as u64 + 1;
    let size = content.len() as u64;
    let id = app.put_id(content).await;
    crate::search::wait_for_index(&app, None).await;
    let found = app.get("/v1/search?q=quokka").await.json();
    assert_eq!(found["results"][0]["id"], id.as_str(), "{found}");
    assert_eq!(found["results"][0]["hits"][0]["line"], line);

    let answer = grep(&app, &id, &format!("pattern={}", enc("a quokka sighting"))).await;
    assert_eq!(lines(&answer), [line]);
    let (scanned, skipped) = (
        answer["scanned_bytes"].as_u64().unwrap(),
        answer["skipped_bytes"].as_u64().unwrap(),
    );
    assert_eq!(scanned + skipped, size, "{answer}");
    assert!(scanned < size / 2, "{answer}");
    // No whole word pinned: every byte is read.
    let answer = grep(&app, &id, "pattern=quokka").await;
    assert_eq!(lines(&answer), [line]);
    assert_eq!(answer["skipped_bytes"], 0);
    // Across memories, the same: unless the index could not be asked (a
    // database too busy to answer, under CI's load), when grep reads
    // every frame and says so in /metrics.
    let lookups = |result: &str| format!(r#"cairn_grep_index_lookups_total{{result="{result}"}}"#);
    let failed_before = crate::cache::sample(&app, &lookups("failed")).await;
    let resp = app
        .get(&format!(
            "/v1/grep?pattern={}&fixed=true",
            enc("a quokka sighting")
        ))
        .await;
    assert_eq!(resp.status, StatusCode::OK, "{}", resp.text());
    let across = resp.json();
    assert_eq!(across["results"][0]["matches"][0]["line"], line);
    let mut counts = Vec::new();
    for result in ["used", "not_indexed", "failed"] {
        counts.push((result, crate::cache::sample(&app, &lookups(result)).await));
    }
    assert!(
        across["skipped_bytes"].as_u64().unwrap() > 0 || counts[2].1 > failed_before,
        "{across}\nindex lookups: {counts:?}"
    );
    assert!(counts[0].1 > 0.0, "index lookups: {counts:?}");
}
