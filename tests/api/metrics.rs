//! `GET /metrics`: every metric moves when its event happens, labels stay
//! low-cardinality (route templates, known types; never ids or namespaces).

use axum::http::StatusCode;
use serde_json::json;

use crate::compress::{fixture, post};
use crate::helpers::{TestApp, spawn_app, spawn_app_with};

/// The value of one sample (`name{labels}` exactly as exposed, labels sorted
/// by name), or 0 when the series does not exist yet.
async fn sample(app: &TestApp, series: &str) -> f64 {
    let resp = app.get("/metrics").await;
    assert_eq!(resp.status, StatusCode::OK);
    let text = String::from_utf8(resp.body.to_vec()).unwrap();
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .find_map(|l| {
            let (name, value) = l.rsplit_once(' ')?;
            (name == series).then(|| value.parse::<f64>().unwrap())
        })
        .unwrap_or(0.0)
}

async fn exposition(app: &TestApp) -> String {
    String::from_utf8(app.get("/metrics").await.body.to_vec()).unwrap()
}

#[tokio::test]
async fn metrics_are_prometheus_text_and_open_without_a_key() {
    let app = spawn_app_with(|c| c.api_keys = Some("secret-key-1:agents".into())).await;
    let resp = app.get("/metrics").await;
    assert_eq!(resp.status, StatusCode::OK);
    assert!(
        resp.header("content-type")
            .unwrap()
            .starts_with("text/plain; version=0.0.4")
    );
    let text = exposition(&app).await;
    for family in [
        "cairn_store_objects",
        "cairn_store_bytes",
        "cairn_bytes_in_total",
        "process_resident_memory_bytes",
    ] {
        assert!(
            text.contains(&format!("# TYPE {family} ")),
            "{family} missing"
        );
    }
}

#[tokio::test]
async fn a_put_counts_the_memory_its_bytes_and_its_saving() {
    let app = spawn_app().await;
    let content = "line of a tool output that is long enough to save tokens\n".repeat(400);
    let put = |q: &'static str| app.put_raw(q, content.clone());
    assert_eq!(put("type=TOOL_OUTPUT").await.status, StatusCode::CREATED);
    let first = put("type=TOOL_OUTPUT").await;
    assert_eq!(first.status, StatusCode::OK);
    let stored = first.json()["stored_bytes"].as_f64().unwrap();
    let saved = first.json()["tokens_saved"].as_f64().unwrap();
    assert!(saved > 0.0);

    let new = r#"cairn_memories_put_total{deduplicated="false",type="TOOL_OUTPUT"}"#;
    let dedup = r#"cairn_memories_put_total{deduplicated="true",type="TOOL_OUTPUT"}"#;
    assert_eq!(sample(&app, new).await, 1.0);
    assert_eq!(sample(&app, dedup).await, 1.0);
    let bytes = content.len() as f64;
    assert_eq!(sample(&app, "cairn_bytes_in_total").await, 2.0 * bytes);
    assert_eq!(sample(&app, "cairn_bytes_new_total").await, bytes);
    assert_eq!(sample(&app, "cairn_bytes_stored_total").await, stored);
    let tokens = r#"cairn_tokens_saved_total{source="put",type="TOOL_OUTPUT"}"#;
    assert_eq!(sample(&app, tokens).await, 2.0 * saved);
    let cost = sample(&app, r#"cairn_cost_saved_usd_total{model="gpt-4o"}"#).await;
    // gpt-4o input: $2.50 per million tokens.
    assert!((cost - 2.0 * saved * 2.5 / 1e6).abs() < 1e-9, "{cost}");
    assert_eq!(sample(&app, "cairn_store_objects").await, 1.0);
    assert_eq!(sample(&app, "cairn_store_bytes").await, stored);
    assert_eq!(sample(&app, "cairn_store_content_bytes").await, bytes);
}

#[tokio::test]
async fn a_put_in_another_namespace_stores_no_new_object() {
    let app = spawn_app_with(|c| c.api_keys = Some("key-of-a-1:a,key-of-b-1:b".into())).await;
    let body = json!({"content": "shared content\n".repeat(300), "type": "DOCUMENT"});
    assert_eq!(
        app.put_json_as("key-of-a-1", body.clone()).await.status,
        StatusCode::CREATED
    );
    assert_eq!(
        app.put_json_as("key-of-b-1", body).await.status,
        StatusCode::CREATED
    );
    let new = r#"cairn_memories_put_total{deduplicated="false",type="DOCUMENT"}"#;
    assert_eq!(sample(&app, new).await, 2.0);
    let stored = sample(&app, "cairn_bytes_stored_total").await;
    assert!(stored > 0.0);
    assert_eq!(sample(&app, "cairn_store_bytes").await, stored);
    assert_eq!(sample(&app, "cairn_store_objects").await, 1.0);
    let text = exposition(&app).await;
    assert!(
        !text.contains("namespace=\""),
        "no namespace label by default"
    );
    assert!(!text.contains("\"a\"") && !text.contains("\"b\""));
}

#[tokio::test]
async fn client_invented_types_fold_onto_other() {
    let app = spawn_app().await;
    for n in 0..3 {
        let q = format!("type=MY_TYPE_{n}");
        let resp = app.put_raw(&q, format!("content {n}\n")).await;
        assert_eq!(resp.status, StatusCode::CREATED);
    }
    let other = r#"cairn_memories_put_total{deduplicated="false",type="OTHER"}"#;
    assert_eq!(sample(&app, other).await, 3.0);
    assert!(!exposition(&app).await.contains("MY_TYPE"));
}

#[tokio::test]
async fn every_slice_kind_counts_as_a_refetch_of_its_type() {
    let app = spawn_app().await;
    let content = "0123456789\n".repeat(5_000);
    let id = app.put_raw("type=WEB_SCRAPE", content.clone()).await.json()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let reads = [
        (format!("/v1/memories/{id}/lines?start=1&end=10"), "lines"),
        (
            format!("/v1/memories/{id}/bytes?offset=0&length=100"),
            "bytes",
        ),
        (format!("/v1/memories/{id}/chunks/0"), "chunk"),
        (format!("/v1/memories/{id}/content"), "content"),
    ];
    for (uri, kind) in &reads {
        let series = format!("cairn_slices_served_total{{kind=\"{kind}\"}}");
        let before = sample(&app, &series).await;
        assert_eq!(app.get(uri).await.status, StatusCode::OK, "{uri}");
        assert_eq!(sample(&app, &series).await, before + 1.0, "{kind}");
    }
    let fetched = app.get(&format!("/v1/fetch?uri=mem://{id}%23L5-6")).await;
    assert_eq!(fetched.status, StatusCode::OK);
    let ranged = app
        .get_with(
            &format!("/v1/memories/{id}/content"),
            &[("range", "bytes=0-9")],
        )
        .await;
    assert_eq!(ranged.status, StatusCode::PARTIAL_CONTENT);
    assert_eq!(
        sample(&app, r#"cairn_slices_served_total{kind="lines"}"#).await,
        2.0
    );
    assert_eq!(
        sample(&app, r#"cairn_slices_served_total{kind="range"}"#).await,
        1.0
    );
    assert_eq!(
        sample(&app, r#"cairn_refetches_total{type="WEB_SCRAPE"}"#).await,
        6.0
    );
    // A failed read is no refetch.
    let refused = app
        .get(&format!("/v1/memories/{id}/lines?start=1&end=100000"))
        .await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST);
    assert_eq!(
        sample(&app, r#"cairn_refetches_total{type="WEB_SCRAPE"}"#).await,
        6.0
    );
    // Paging through one memory is served from the metadata caches.
    assert!(
        sample(
            &app,
            r#"cairn_cache_lookups_total{layer="memory_meta",result="hit"}"#
        )
        .await
            >= 4.0
    );
    assert!(
        sample(
            &app,
            r#"cairn_cache_lookups_total{layer="object_meta",result="hit"}"#
        )
        .await
            >= 4.0
    );
    assert_eq!(
        sample(
            &app,
            r#"cairn_cache_lookups_total{layer="object_meta",result="miss"}"#
        )
        .await,
        1.0
    );
}

#[tokio::test]
async fn compress_counts_its_call_pieces_saving_and_context_size() {
    let app = spawn_app().await;
    let doc = fixture("openai");
    let body = json!({"messages": doc["messages"], "model": doc["model"], "strategy": "pointer"});
    let resp = post(&app, "/v1/compress", &body).await;
    assert_eq!(resp.status, StatusCode::OK, "{}", resp.text());
    let report = &resp.json()["report"];
    let offloaded = report["offloaded"].as_array().unwrap().len() as f64;
    assert!(offloaded > 0.0);
    let calls = r#"cairn_compress_calls_total{strategy="pointer"}"#;
    let pieces = r#"cairn_compress_offloaded_total{strategy="pointer"}"#;
    let saved = r#"cairn_tokens_saved_total{source="compress",type="CONTEXT"}"#;
    let seen = r#"cairn_context_tokens_count{source="compress"}"#;
    let seen_sum = r#"cairn_context_tokens_sum{source="compress"}"#;
    assert_eq!(sample(&app, calls).await, 1.0);
    assert_eq!(sample(&app, pieces).await, offloaded);
    assert_eq!(
        sample(&app, saved).await,
        report["tokens_saved"].as_f64().unwrap()
    );
    assert_eq!(sample(&app, seen).await, 1.0);
    assert_eq!(
        sample(&app, seen_sum).await,
        report["tokens_before"].as_f64().unwrap()
    );
    let offload_hits = r#"cairn_cache_lookups_total{layer="offload",result="hit"}"#;
    let offload_misses = r#"cairn_cache_lookups_total{layer="offload",result="miss"}"#;
    assert_eq!(sample(&app, offload_misses).await, offloaded);
    assert_eq!(sample(&app, offload_hits).await, 0.0);
    let token_hits = r#"cairn_cache_lookups_total{layer="token_counts",result="hit"}"#;
    let token_hits_before = sample(&app, token_hits).await;

    // The same transcript again: its pieces come from the offload cache.
    assert_eq!(
        post(&app, "/v1/compress", &body).await.status,
        StatusCode::OK
    );
    assert_eq!(sample(&app, calls).await, 2.0);
    assert_eq!(sample(&app, offload_hits).await, offloaded);
    assert!(sample(&app, token_hits).await > token_hits_before);
}

#[tokio::test]
async fn governor_decisions_count_by_tier() {
    let app = spawn_app().await;
    for tokens in [100, 25_000, 50_000, 60_000] {
        let resp = post(&app, "/v1/governor", &json!({"tokens": tokens})).await;
        assert_eq!(resp.status, StatusCode::OK);
    }
    let tier = |t: &str| format!("cairn_governor_decisions_total{{tier=\"{t}\"}}");
    assert_eq!(sample(&app, &tier("normal")).await, 1.0);
    assert_eq!(sample(&app, &tier("warn")).await, 1.0);
    assert_eq!(sample(&app, &tier("pointer_only")).await, 2.0);
    let bucket = r#"cairn_context_tokens_bucket{source="governor",le="40000"}"#;
    assert_eq!(sample(&app, bucket).await, 2.0);
    assert_eq!(
        sample(&app, r#"cairn_context_tokens_count{source="governor"}"#).await,
        4.0
    );
}

#[tokio::test]
async fn requests_are_counted_by_route_template_never_by_path() {
    let app = spawn_app().await;
    let id = app.put_id("hello\n").await;
    assert_eq!(
        app.get(&format!("/v1/memories/{id}")).await.status,
        StatusCode::OK
    );
    let missing = format!("/v1/memories/{}", "ab".repeat(32));
    assert_eq!(app.get(&missing).await.status, StatusCode::NOT_FOUND);
    assert_eq!(
        app.get("/no/such/route/abcdef").await.status,
        StatusCode::NOT_FOUND
    );
    let route = |status: &str| {
        format!(
            "cairn_http_requests_total{{method=\"GET\",route=\"/v1/memories/{{id}}\",status=\"{status}\"}}"
        )
    };
    assert_eq!(sample(&app, &route("200")).await, 1.0);
    assert_eq!(sample(&app, &route("404")).await, 1.0);
    assert_eq!(
        sample(
            &app,
            r#"cairn_http_requests_total{method="GET",route="unmatched",status="404"}"#
        )
        .await,
        1.0
    );
    assert_eq!(
        sample(
            &app,
            r#"cairn_http_request_duration_seconds_count{method="GET",route="/v1/memories/{id}"}"#
        )
        .await,
        2.0
    );
    let text = exposition(&app).await;
    assert!(!text.contains(&id), "an id became a label");
    assert!(
        !text.contains("/no/such/route"),
        "a raw path became a label"
    );
}
