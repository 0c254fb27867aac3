//! `max_tokens` on `/lines` and `/v1/fetch`: the longest run of whole lines
//! that fits a token budget, with the count and how it was made.

use axum::http::StatusCode;

use crate::helpers::{TestApp, enc, in_both_layouts};

in_both_layouts!(
    a_budget_takes_the_whole_lines_that_fit_and_says_what_they_count,
    end_still_bounds_a_budgeted_slice,
    next_pointers_carry_the_budget_and_rebuild_the_content,
    a_fetch_budget_overrides_the_pointers_own,
    a_model_without_a_public_tokenizer_gets_a_labelled_estimate,
    budgets_below_the_minimum_are_a_400,
    raw_budgeted_slices_carry_their_count_in_headers,
);

fn numbered(n: u32) -> String {
    (1..=n).map(|i| format!("budget line {i}\n")).collect()
}

fn o200k(text: &str) -> u64 {
    tiktoken_rs::o200k_base_singleton()
        .encode_ordinary(text)
        .len() as u64
}

async fn a_budget_takes_the_whole_lines_that_fit_and_says_what_they_count(app: &TestApp) {
    let content = numbered(500);
    let id = app.put_id(content.clone()).await;
    let body = app
        .get(&format!("/v1/memories/{id}/lines?start=10&max_tokens=100"))
        .await
        .json();
    let text = body["text"].as_str().unwrap();
    let lines: Vec<&str> = content.split_inclusive('\n').collect();
    let taken = text.split_inclusive('\n').count();
    assert_eq!(text, lines[9..9 + taken].concat());
    assert!(o200k(text) <= 100);
    assert!(
        o200k(&lines[9..10 + taken].concat()) > 100,
        "one more line would fit"
    );
    assert_eq!(body["tokens"].as_u64(), Some(o200k(text)));
    assert_eq!(body["method"], "exact:o200k_base");
    assert_eq!(body["start"], 10);
    assert_eq!(body["end"].as_u64(), Some(9 + taken as u64));
    assert_eq!(body["truncated"], false);
    assert_eq!(
        body["uri"],
        format!("mem://{id}#L10-{}", 9 + taken),
        "whole lines keep a line pointer"
    );
    assert_eq!(
        body["next"],
        format!("mem://{id}?max_tokens=100#L{}-", 10 + taken)
    );
    // Without max_tokens nothing about tokens is said.
    let plain = app
        .get(&format!("/v1/memories/{id}/lines?start=10"))
        .await
        .json();
    assert!(plain.get("tokens").is_none() && plain.get("method").is_none());
}

async fn end_still_bounds_a_budgeted_slice(app: &TestApp) {
    let id = app.put_id(numbered(50)).await;
    let body = app
        .get(&format!(
            "/v1/memories/{id}/lines?start=3&end=5&max_tokens=10000"
        ))
        .await
        .json();
    assert_eq!(
        body["text"],
        "budget line 3\nbudget line 4\nbudget line 5\n"
    );
    assert_eq!(body["end"], 5);
    assert_eq!(body["next"], format!("mem://{id}?max_tokens=10000#L6-"));
}

async fn next_pointers_carry_the_budget_and_rebuild_the_content(app: &TestApp) {
    let long: String = (0..400)
        .map(|i| format!("{{\"k{i}\":[{i},\"v\"]}},"))
        .collect();
    let content = format!("{}{long}\n{}", numbered(30), "tail é€😀\r\nno newline");
    let id = app.put_id(content.clone()).await;
    let mut uri = format!("mem://{id}?max_tokens=64");
    let mut rebuilt = String::new();
    let mut cut = 0;
    for _ in 0..1000 {
        let body = app
            .get(&format!("/v1/fetch?uri={}", enc(&uri)))
            .await
            .json();
        let text = body["text"].as_str().unwrap();
        assert!(o200k(text) <= 64, "{uri}: {} tokens", o200k(text));
        assert_eq!(body["tokens"].as_u64(), Some(o200k(text)));
        rebuilt.push_str(text);
        cut += usize::from(body["truncated"] == true);
        match body["next"].as_str() {
            Some(next) => uri = next.to_owned(),
            None => break,
        }
    }
    assert_eq!(rebuilt, content);
    assert!(cut > 1, "the long JSON line is served in pieces");
}

async fn a_fetch_budget_overrides_the_pointers_own(app: &TestApp) {
    let id = app.put_id(numbered(200)).await;
    let small = app
        .get(&format!(
            "/v1/fetch?uri={}&max_tokens=20",
            enc(&format!("mem://{id}?max_tokens=500#L5-"))
        ))
        .await
        .json();
    assert!(small["tokens"].as_u64().unwrap() <= 20);
    assert_eq!(small["start"], 5);
    let by_line = app
        .get(&format!(
            "/v1/fetch?uri={}&max_tokens=20",
            enc(&format!("mem://{id}#L5-9"))
        ))
        .await
        .json();
    assert_eq!(by_line["text"], small["text"]);
}

async fn a_model_without_a_public_tokenizer_gets_a_labelled_estimate(app: &TestApp) {
    let id = app.put_id(numbered(100)).await;
    let body = app
        .get(&format!(
            "/v1/memories/{id}/lines?max_tokens=50&model=claude-sonnet-4-5"
        ))
        .await
        .json();
    assert_eq!(body["method"], "estimate:anthropic:chars/3.5");
    let chars = body["text"].as_str().unwrap().chars().count() as f64;
    assert!((chars / 3.5).ceil() as u64 <= 50);
    let cl100k = app
        .get(&format!(
            "/v1/memories/{id}/lines?max_tokens=50&model=gpt-4"
        ))
        .await
        .json();
    assert_eq!(cl100k["method"], "exact:cl100k_base");
}

async fn budgets_below_the_minimum_are_a_400(app: &TestApp) {
    let id = app.put_id(numbered(10)).await;
    let resp = app
        .get(&format!("/v1/memories/{id}/lines?max_tokens=3"))
        .await;
    let body = resp.assert_error(StatusCode::BAD_REQUEST, "invalid_range");
    assert!(body["message"].as_str().unwrap().contains("max_tokens"));
    let resp = app
        .get(&format!(
            "/v1/fetch?uri={}",
            enc(&format!("mem://{id}?max_tokens=0"))
        ))
        .await;
    resp.assert_error(StatusCode::BAD_REQUEST, "invalid_range");
}

async fn raw_budgeted_slices_carry_their_count_in_headers(app: &TestApp) {
    let id = app.put_id(numbered(100)).await;
    let resp = app
        .get_with(
            &format!("/v1/memories/{id}/lines?max_tokens=40"),
            &[("accept", "application/octet-stream")],
        )
        .await;
    assert_eq!(resp.status, StatusCode::OK);
    let text = String::from_utf8(resp.body.to_vec()).unwrap();
    assert_eq!(
        resp.header("x-cairn-tokens"),
        Some(o200k(&text).to_string().as_str())
    );
    assert_eq!(
        resp.header("x-cairn-token-method"),
        Some("exact:o200k_base")
    );
    let next = resp.header("x-cairn-next").unwrap();
    assert!(next.contains("max_tokens=40"), "{next}");
}
