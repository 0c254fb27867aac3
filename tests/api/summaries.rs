//! Summaries through the real router: the kind is detected, the summary is
//! the same whatever the framing, and LLM summaries are made in the
//! background against a local stand-in of an OpenAI-compatible endpoint.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::http::{HeaderMap, StatusCode};
use cairn::domain::summary::{SUMMARY_CHARS, SummaryFacts, summarize};
use serde_json::{Value, json};

use crate::helpers::{TestApp, enc, in_both_layouts, spawn_app_with};

fn json_answer() -> String {
    let rows: Vec<Value> = (0..400)
        .map(|i| json!({"id": i, "sku": format!("SKU-{i:05}"), "price": i as f64 * 1.5, "tags": ["a", "b"]}))
        .collect();
    json!({"items": rows, "count": 400, "next": null}).to_string()
}

fn html_page() -> String {
    let mut page = String::from(
        "<!doctype html><html><head><title>Pricing</title><script>var x = 1;</script></head><body><h1>Plans</h1>",
    );
    for i in 0..40 {
        page.push_str(&format!(
            "<h2>Plan {i}</h2><p>Plan {i} costs {i} euros a month.</p>\n"
        ));
    }
    page.push_str("</body></html>\n");
    page
}

fn log_lines() -> String {
    (1..=3000)
        .map(|i| {
            if i == 1234 {
                "2024-05-01 10:00:00,123 ERROR worker: job 77 crashed\n".to_owned()
            } else {
                format!(
                    "2024-05-01 10:00:00,{:03} INFO worker: job {i} done\n",
                    i % 1000
                )
            }
        })
        .collect()
}

/// Puts `content` as `mime`, checks the summary names `kind` and equals
/// the in-memory summary of the same content.
async fn put_and_check(app: &TestApp, content: &str, mime: &str, kind: &str) -> String {
    let resp = app
        .put_raw(&format!("mime={}", enc(mime)), content.to_owned())
        .await;
    assert_eq!(resp.status, StatusCode::CREATED, "{}", resp.text());
    let body = resp.json();
    let summary = body["summary"].as_str().unwrap().to_owned();
    assert!(summary.starts_with(&format!("kind: {kind}")), "{summary}");
    assert!(summary.contains(body["uri"].as_str().unwrap()), "{summary}");
    assert!(summary.chars().count() <= SUMMARY_CHARS);
    let facts = SummaryFacts {
        uri: body["uri"].as_str().unwrap().to_owned(),
        mime: mime.to_owned(),
        bytes: body["bytes"].as_u64().unwrap(),
        lines: body["lines"].as_u64().unwrap(),
        tokens: body["tokens"].as_u64().unwrap(),
        token_method: body["token_method"]
            .as_str()
            .unwrap_or(cairn::domain::tokens::ESTIMATE_METHOD)
            .to_owned(),
    };
    assert_eq!(
        summary,
        summarize(content.as_bytes(), &facts, SUMMARY_CHARS)
    );
    // A put over CAIRN_EXACT_TOKENS_AFTER_BYTES answered with the estimate:
    // its count settles moments later, and the summary then states it.
    let id = body["id"].as_str().unwrap();
    if body["tokens_settling"] == true {
        let got = app.settled(id).await;
        assert_eq!(got["token_method"], "exact:o200k_base");
        let restated = cairn::domain::summary::restate_tokens(
            &summary,
            (facts.tokens, &facts.token_method),
            (got["tokens"].as_u64().unwrap(), "exact:o200k_base"),
            SUMMARY_CHARS,
        );
        assert_eq!(got["summary"].as_str(), restated.as_deref());
    } else {
        let got = app.get(&format!("/v1/memories/{id}")).await.json();
        assert_eq!(got["summary"], summary);
    }
    summary
}

async fn json_content_gets_a_json_summary(app: &TestApp) {
    let summary = put_and_check(app, &json_answer(), "application/json", "json").await;
    assert!(
        summary.contains("items: array[400] of {id: number, price: number, sku: string"),
        "{summary}"
    );
}

async fn html_content_gets_an_html_summary(app: &TestApp) {
    let summary = put_and_check(app, &html_page(), "text/html", "html").await;
    assert!(
        summary.contains("title: Pricing") && summary.contains("h1 Plans; h2 Plan 0"),
        "{summary}"
    );
}

async fn log_content_gets_a_log_summary(app: &TestApp) {
    let summary = put_and_check(app, &log_lines(), "text/plain", "log").await;
    assert!(
        summary.contains("L1234: 2024-05-01 10:00:00,123 ERROR worker: job 77 crashed"),
        "{summary}"
    );
}

in_both_layouts!(
    json_content_gets_a_json_summary,
    html_content_gets_an_html_summary,
    log_content_gets_a_log_summary,
);

#[tokio::test]
async fn the_summary_cap_is_configurable() {
    let app = spawn_app_with(|c| c.summary_chars = 300).await;
    let resp = app.put_raw("", log_lines()).await;
    let summary = resp.json()["summary"].as_str().unwrap().to_owned();
    assert!(
        summary.chars().count() <= 300 && summary.starts_with("kind: log"),
        "{summary}"
    );
}

// ---------------------------------------------------------------------------
// LLM summaries against a stand-in endpoint.
// ---------------------------------------------------------------------------

/// Requests the stand-in received: (authorization header, JSON body).
type Seen = Arc<Mutex<Vec<(Option<String>, Value)>>>;

/// An OpenAI-compatible stand-in on 127.0.0.1:0 answering `status` with a canned completion.
async fn stand_in(status: StatusCode) -> (String, Seen) {
    let seen: Seen = Arc::default();
    let recorded = seen.clone();
    let router = axum::Router::new().route(
        "/v1/chat/completions",
        axum::routing::post(move |headers: HeaderMap, axum::Json(body): axum::Json<Value>| {
            let recorded = recorded.clone();
            async move {
                let auth = headers
                    .get("authorization")
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned);
                recorded.lock().unwrap().push((auth, body));
                let answer = json!({
                    "id": "chatcmpl-1", "object": "chat.completion", "model": "stand-in",
                    "choices": [{"index": 0, "finish_reason": "stop",
                        "message": {"role": "assistant", "content": "A worker log; job 77 crashed at line 1234."}}],
                });
                (status, axum::Json(answer))
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await });
    (format!("http://{addr}/v1"), seen)
}

/// The SUMMARY memories linked to `source`, polled for up to 10 s until `want` are there.
async fn summaries_of(app: &TestApp, source: &str, want: usize) -> Vec<Value> {
    let uri = format!("/v1/memories?tag={}", enc(&format!("source:{source}")));
    for _ in 0..200 {
        let found = app.get(&uri).await.json()["memories"]
            .as_array()
            .unwrap()
            .clone();
        if found.len() >= want {
            return found;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Vec::new()
}

#[tokio::test]
async fn big_new_memories_get_an_llm_summary_linked_to_them() {
    let (url, seen) = stand_in(StatusCode::OK).await;
    let app = spawn_app_with(|c| {
        c.summarizer_url = Some(url);
        c.summarizer_model = "tiny-model".into();
        c.summarizer_api_key = Some("sk-test-123".parse().unwrap());
    })
    .await;
    let log = log_lines();
    let query = "thread=t-9&checkpoint=c-2&directory=%2Fsrv%2Fjobs&type=TOOL_OUTPUT&subtype=worker";
    let put = app.put_raw(query, log.clone()).await.json();
    let id = put["id"].as_str().unwrap();

    let found = summaries_of(&app, id, 1).await;
    assert_eq!(found.len(), 1, "no SUMMARY memory appeared");
    let summary = &found[0];
    assert_eq!(summary["type"], "SUMMARY");
    assert_eq!(summary["subtype"], "llm");
    assert_eq!(summary["title"], format!("Summary of {}", &id[..12]));
    assert_eq!(summary["thread"], "t-9");
    assert_eq!(summary["checkpoint"], "c-2");
    assert_eq!(summary["directory"], "/srv/jobs");
    assert_eq!(summary["tags"], json!([format!("source:{id}")]));
    let text = app
        .get(&format!(
            "/v1/memories/{}/content",
            summary["id"].as_str().unwrap()
        ))
        .await;
    assert_eq!(text.text(), "A worker log; job 77 crashed at line 1234.");

    let requests = seen.lock().unwrap().clone();
    assert_eq!(requests.len(), 1, "the SUMMARY itself is not summarized");
    let (auth, body) = &requests[0];
    assert_eq!(auth.as_deref(), Some("Bearer sk-test-123"));
    assert_eq!(body["model"], "tiny-model");
    let prompt = body["messages"][1]["content"].as_str().unwrap();
    assert!(prompt.contains(&format!("mem://{id}")), "{prompt}");
    assert!(prompt.contains("L1234: 2024-05-01 10:00:00,123 ERROR worker: job 77 crashed"));
    assert!(
        prompt.len() <= 26 << 10,
        "the excerpt is bounded: {}",
        prompt.len()
    );
}

#[tokio::test]
async fn small_and_deduplicated_content_is_not_sent() {
    let (url, seen) = stand_in(StatusCode::OK).await;
    let app = spawn_app_with(|c| c.summarizer_url = Some(url)).await;
    let first = log_lines();
    let id = app.put_id(first.clone()).await;
    assert_eq!(summaries_of(&app, &id, 1).await.len(), 1);
    // Small content and a deduplicated put are not queued...
    assert_eq!(
        app.put_raw("", "short ERROR line\n").await.status,
        StatusCode::CREATED
    );
    assert_eq!(app.put_raw("", first).await.status, StatusCode::OK);
    // ...so the next big one is the second request the endpoint sees (jobs run in order).
    let second = log_lines().replace("job 77", "job 78");
    let id2 = app.put_id(second).await;
    assert_eq!(summaries_of(&app, &id2, 1).await.len(), 1);
    assert_eq!(seen.lock().unwrap().len(), 2);
}

#[tokio::test]
async fn a_failing_endpoint_never_fails_the_put() {
    let (url, seen) = stand_in(StatusCode::INTERNAL_SERVER_ERROR).await;
    let app = spawn_app_with(|c| c.summarizer_url = Some(url)).await;
    let resp = app.put_raw("", log_lines()).await;
    assert_eq!(resp.status, StatusCode::CREATED);
    for _ in 0..200 {
        if !seen.lock().unwrap().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert_eq!(seen.lock().unwrap().len(), 1, "the endpoint was asked");
    tokio::time::sleep(Duration::from_millis(200)).await;
    let all = app.get("/v1/memories?type=SUMMARY").await.json();
    assert_eq!(all["memories"].as_array().unwrap().len(), 0, "{all}");
}
