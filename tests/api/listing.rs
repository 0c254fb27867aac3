//! `GET /v1/memories`: newest first, filters, cursor pagination.

use std::collections::HashSet;
use std::time::Duration;

use axum::http::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{TestApp, enc, spawn_app};

fn ids(page: &Value) -> Vec<String> {
    page["memories"]
        .as_array()
        .unwrap_or_else(|| panic!("not a page: {page}"))
        .iter()
        .map(|m| m["id"].as_str().unwrap().to_owned())
        .collect()
}

/// Puts `content` with `fields` and waits a little so creation times differ.
async fn put_spaced(app: &TestApp, content: &str, fields: Value) -> String {
    let body = app.put_text(content, fields).await;
    tokio::time::sleep(Duration::from_millis(5)).await;
    body["id"].as_str().unwrap().to_owned()
}

async fn list(app: &TestApp, query: &str) -> Vec<String> {
    let resp = app.get(&format!("/v1/memories?{query}")).await;
    assert_eq!(
        resp.status,
        StatusCode::OK,
        "{query}: {}",
        String::from_utf8_lossy(&resp.body)
    );
    ids(&resp.json())
}

#[tokio::test]
async fn an_empty_namespace_lists_nothing() {
    let app = spawn_app().await;
    let page = app.get("/v1/memories").await;
    assert_eq!(page.status, StatusCode::OK);
    let page = page.json();
    assert_eq!(page["memories"], json!([]));
    assert!(page["next_cursor"].is_null());
}

#[tokio::test]
async fn memories_are_listed_newest_first_with_their_metadata() {
    let app = spawn_app().await;
    let a = put_spaced(&app, "first", json!({"title": "A"})).await;
    let b = put_spaced(&app, "second", json!({"title": "B"})).await;
    let c = put_spaced(&app, "third", json!({"title": "C"})).await;
    let page = app.get("/v1/memories").await.json();
    assert_eq!(ids(&page), [c.as_str(), &b, &a]);
    let newest = &page["memories"][0];
    assert_eq!(newest["title"], "C");
    assert_eq!(newest["uri"], format!("mem://{c}"));
    assert_eq!(newest["bytes"], 5);
    assert!(newest["summary"].is_string());
    assert!(newest.get("content").is_none());
    assert!(page["next_cursor"].is_null());
}

#[tokio::test]
async fn a_deduplicated_put_does_not_move_a_memory_to_the_front() {
    let app = spawn_app().await;
    let a = put_spaced(&app, "older", json!({})).await;
    let b = put_spaced(&app, "newer", json!({})).await;
    assert_eq!(app.put_raw("", "older").await.status, StatusCode::OK);
    assert_eq!(list(&app, "").await, [b, a], "order is by creation time");
}

#[tokio::test]
async fn every_filter_selects_its_memories() {
    let app = spawn_app().await;
    let a = put_spaced(
        &app,
        "a",
        json!({"type": "web_scrape", "subtype": "curl", "tags": ["x", "y"], "thread": "t1", "checkpoint": "c1", "directory": "/d1"}),
    )
    .await;
    let b = put_spaced(
        &app,
        "b",
        json!({"type": "TOOL_OUTPUT", "subtype": "pytest", "tags": ["y"], "thread": "t2", "checkpoint": "c1", "directory": "/d2"}),
    )
    .await;
    let c = put_spaced(
        &app,
        "c",
        json!({"type": "WEB_SCRAPE", "subtype": "pytest", "thread": "t1"}),
    )
    .await;

    assert_eq!(
        list(&app, "type=WEB_SCRAPE").await,
        [c.as_str(), a.as_str()]
    );
    assert_eq!(
        list(&app, "type=web_scrape").await,
        [c.as_str(), a.as_str()],
        "type is matched upper-cased"
    );
    assert_eq!(list(&app, "type=TOOL_OUTPUT").await, [b.as_str()]);
    assert_eq!(list(&app, "type=DOCUMENT").await, Vec::<String>::new());
    assert_eq!(list(&app, "subtype=pytest").await, [c.as_str(), b.as_str()]);
    assert_eq!(list(&app, "subtype=curl").await, [a.as_str()]);
    assert_eq!(list(&app, "tag=y").await, [b.as_str(), a.as_str()]);
    assert_eq!(list(&app, "tag=x").await, [a.as_str()]);
    assert_eq!(list(&app, "tag=z").await, Vec::<String>::new());
    assert_eq!(list(&app, "thread=t1").await, [c.as_str(), a.as_str()]);
    assert_eq!(list(&app, "checkpoint=c1").await, [b.as_str(), a.as_str()]);
    assert_eq!(
        list(&app, &format!("directory={}", enc("/d2"))).await,
        [b.as_str()]
    );
    // Filters combine.
    assert_eq!(
        list(&app, "type=WEB_SCRAPE&subtype=pytest").await,
        [c.as_str()]
    );
    assert_eq!(list(&app, "thread=t1&tag=y").await, [a.as_str()]);
    assert_eq!(list(&app, "thread=t2&tag=x").await, Vec::<String>::new());
}

#[tokio::test]
async fn since_and_until_filter_by_creation_time() {
    let app = spawn_app().await;
    let a = put_spaced(&app, "early", json!({})).await;
    let b = put_spaced(&app, "middle", json!({})).await;
    let c = put_spaced(&app, "late", json!({})).await;
    let b_created = app.get(&format!("/v1/memories/{b}")).await.json()["created_at"]
        .as_str()
        .unwrap()
        .to_owned();
    let t = enc(&b_created);
    assert_eq!(
        list(&app, &format!("since={t}")).await,
        [c.as_str(), b.as_str()],
        "since is inclusive"
    );
    assert_eq!(
        list(&app, &format!("until={t}")).await,
        [a.as_str()],
        "until is exclusive"
    );
    assert_eq!(
        list(&app, &format!("since={t}&until={t}")).await,
        Vec::<String>::new()
    );
    // The same instant with an explicit offset.
    let offset = b_created.replace('Z', "+00:00");
    assert_eq!(
        list(&app, &format!("since={}", enc(&offset))).await,
        [c.as_str(), b.as_str()]
    );
    let two_hours_ahead = chrono::DateTime::parse_from_rfc3339(&b_created)
        .unwrap()
        .with_timezone(&chrono::FixedOffset::east_opt(2 * 3600).unwrap())
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, false);
    assert_eq!(
        list(&app, &format!("until={}", enc(&two_hours_ahead))).await,
        [a.as_str()]
    );
}

#[tokio::test]
async fn since_and_until_accept_unix_seconds() {
    let app = spawn_app().await;
    let a = put_spaced(&app, "one", json!({})).await;
    let b = put_spaced(&app, "two", json!({})).await;
    let now = chrono::Utc::now().timestamp();
    assert_eq!(list(&app, "since=0").await, [b.as_str(), a.as_str()]);
    assert_eq!(
        list(&app, &format!("since={}", now - 3600)).await,
        [b.as_str(), a.as_str()]
    );
    assert_eq!(
        list(&app, &format!("since={}", now + 3600)).await,
        Vec::<String>::new()
    );
    assert_eq!(
        list(&app, &format!("until={}", now + 3600)).await,
        [b.as_str(), a.as_str()]
    );
    assert_eq!(
        list(&app, &format!("until={}", now - 3600)).await,
        Vec::<String>::new()
    );
    assert_eq!(list(&app, "until=0").await, Vec::<String>::new());
}

#[tokio::test]
async fn limit_and_cursor_walk_every_memory_once() {
    let app = spawn_app().await;
    let mut expected = Vec::new();
    for n in 0..7 {
        expected.push(put_spaced(&app, &format!("page item {n}"), json!({})).await);
    }
    expected.reverse();
    let first = app.get("/v1/memories?limit=3").await.json();
    assert_eq!(ids(&first), expected[..3]);
    let cursor = first["next_cursor"]
        .as_str()
        .expect("a first page has a cursor");
    let second = app
        .get(&format!("/v1/memories?limit=3&cursor={}", enc(cursor)))
        .await
        .json();
    assert_eq!(ids(&second), expected[3..6]);
    let cursor = second["next_cursor"]
        .as_str()
        .expect("a second page has a cursor");
    let third = app
        .get(&format!("/v1/memories?limit=3&cursor={}", enc(cursor)))
        .await
        .json();
    assert_eq!(ids(&third), expected[6..]);
    assert!(
        third["next_cursor"].is_null(),
        "the last page has no cursor"
    );
}

#[tokio::test]
async fn an_exactly_full_last_page_has_no_cursor() {
    let app = spawn_app().await;
    for n in 0..4 {
        put_spaced(&app, &format!("even {n}"), json!({})).await;
    }
    let first = app.get("/v1/memories?limit=2").await.json();
    let cursor = first["next_cursor"].as_str().unwrap();
    let second = app
        .get(&format!("/v1/memories?limit=2&cursor={}", enc(cursor)))
        .await
        .json();
    assert_eq!(ids(&second).len(), 2);
    assert!(second["next_cursor"].is_null());
    let all = app.get("/v1/memories?limit=4").await.json();
    assert_eq!(ids(&all).len(), 4);
    assert!(all["next_cursor"].is_null());
}

#[tokio::test]
async fn pages_of_memories_created_in_the_same_millisecond_still_hold_each_once() {
    let app = spawn_app().await;
    let mut puts = Vec::new();
    for n in 0..40 {
        puts.push(app.put_raw("tags=burst", format!("burst {n}")));
    }
    let mut all = HashSet::new();
    for resp in futures::future::join_all(puts).await {
        assert_eq!(resp.status, StatusCode::CREATED);
        all.insert(resp.json()["id"].as_str().unwrap().to_owned());
    }
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let query = match &cursor {
            Some(c) => format!("/v1/memories?tag=burst&limit=3&cursor={}", enc(c)),
            None => "/v1/memories?tag=burst&limit=3".to_owned(),
        };
        let page = app.get(&query).await.json();
        let page_ids = ids(&page);
        assert!(page_ids.len() <= 3);
        seen.extend(page_ids);
        match page["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => break,
        }
        assert!(seen.len() <= 40, "pagination does not end");
    }
    assert_eq!(seen.len(), 40, "each memory once");
    assert_eq!(seen.iter().cloned().collect::<HashSet<_>>(), all);
    // Newest first across pages.
    let full = app.get("/v1/memories?tag=burst&limit=200").await.json();
    assert_eq!(ids(&full), seen, "pages join up to the single-page order");
    let created: Vec<String> = full["memories"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["created_at"].as_str().unwrap().to_owned())
        .collect();
    assert!(
        created.windows(2).all(|w| w[0] >= w[1]),
        "newest first: {created:?}"
    );
}

#[tokio::test]
async fn the_default_page_holds_50() {
    let app = spawn_app().await;
    let mut puts = Vec::new();
    for n in 0..51 {
        puts.push(app.put_raw("", format!("default page {n}")));
    }
    futures::future::join_all(puts).await;
    let page = app.get("/v1/memories").await.json();
    assert_eq!(ids(&page).len(), 50);
    assert!(page["next_cursor"].is_string());
    let rest = app
        .get(&format!(
            "/v1/memories?cursor={}",
            enc(page["next_cursor"].as_str().unwrap())
        ))
        .await
        .json();
    assert_eq!(ids(&rest).len(), 1);
    assert_eq!(list(&app, "limit=200").await.len(), 51);
}

#[tokio::test]
async fn a_limit_outside_1_to_200_is_a_400() {
    let app = spawn_app().await;
    for limit in ["0", "201", "100000"] {
        let error = app
            .get(&format!("/v1/memories?limit={limit}"))
            .await
            .assert_error(StatusCode::BAD_REQUEST, "invalid_request");
        assert_eq!(error["field"], "limit");
    }
    for limit in ["-1", "ten", "1.5"] {
        app.get(&format!("/v1/memories?limit={limit}"))
            .await
            .assert_error(StatusCode::BAD_REQUEST, "invalid_query");
    }
    assert_eq!(app.get("/v1/memories?limit=1").await.status, StatusCode::OK);
    assert_eq!(
        app.get("/v1/memories?limit=200").await.status,
        StatusCode::OK
    );
}

#[tokio::test]
async fn a_cursor_the_server_did_not_issue_is_a_400() {
    let app = spawn_app().await;
    // Not base64; base64 of text without `:`; base64 of `x:id` with a non-numeric time.
    for cursor in ["!!!", "aGVsbG8", "eDphYmM", "%FF%FE"] {
        let error = app
            .get(&format!("/v1/memories?cursor={cursor}"))
            .await
            .assert_error(StatusCode::BAD_REQUEST, "invalid_request");
        assert_eq!(error["field"], "cursor", "{cursor}");
    }
}

#[tokio::test]
async fn a_malformed_since_or_until_is_a_400() {
    let app = spawn_app().await;
    for (field, value) in [
        ("since", "yesterday"),
        ("since", "2026-13-01T00:00:00Z"),
        ("until", "2026-01-01"),
        ("until", "soon"),
    ] {
        let error = app
            .get(&format!("/v1/memories?{field}={value}"))
            .await
            .assert_error(StatusCode::BAD_REQUEST, "invalid_request");
        assert_eq!(error["field"], field);
    }
}
