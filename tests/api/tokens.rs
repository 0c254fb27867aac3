//! `POST /v1/tokens`, and the token counts memories carry from their put.

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use serde_json::{Value, json};

use crate::helpers::{Resp, TestApp, spawn_app, spawn_app_with, tiny_frames};

async fn count(app: &TestApp, body: Value) -> Resp {
    app.send(
        Request::post("/v1/tokens")
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(body.to_string()))
            .unwrap(),
    )
    .await
}

fn o200k(text: &str) -> u64 {
    tiktoken_rs::o200k_base_singleton()
        .encode_ordinary(text)
        .len() as u64
}

fn cl100k(text: &str) -> u64 {
    tiktoken_rs::cl100k_base_singleton()
        .encode_ordinary(text)
        .len() as u64
}

const TEXT: &str = "fn main() {\n    println!(\"héllo, wörld 😀\");\n}\n// 1234567890 tokens?\n";

/// The OpenAI cookbook's example list ("How to count tokens with tiktoken").
fn cookbook_messages() -> Value {
    json!([
        {"role": "system", "content": "You are a helpful, pattern-following assistant that translates corporate jargon into plain English."},
        {"role": "system", "name": "example_user", "content": "New synergies will help drive top-line growth."},
        {"role": "system", "name": "example_assistant", "content": "Things working well together will increase revenue."},
        {"role": "system", "name": "example_user", "content": "Let's circle back when we have more bandwidth to touch base on opportunities for increased leverage."},
        {"role": "system", "name": "example_assistant", "content": "Let's talk later when we're less busy about how to do better."},
        {"role": "user", "content": "This late pivot means we don't have time to boil the ocean for the client deliverable."},
    ])
}

#[tokio::test]
async fn a_text_is_counted_exactly_with_gpt_4o_encoding_by_default() {
    let app = spawn_app().await;
    let resp = count(&app, json!({"text": TEXT})).await;
    assert_eq!(resp.status, StatusCode::OK, "{resp:?}");
    let body = resp.json();
    assert_eq!(body["tokens"], o200k(TEXT));
    assert_eq!(body["method"], "exact:o200k_base");
    assert_eq!(body["encoding"], "o200k_base");
    assert_eq!(body["exact"], true);
    assert_eq!(body["model"], Value::Null);
}

#[tokio::test]
async fn gpt_4_texts_are_counted_with_cl100k() {
    let app = spawn_app().await;
    let body = count(&app, json!({"text": TEXT, "model": "gpt-4-turbo"}))
        .await
        .json();
    assert_eq!(body["tokens"], cl100k(TEXT));
    assert_ne!(
        cl100k(TEXT),
        o200k(TEXT),
        "the two encodings must differ here"
    );
    assert_eq!(body["method"], "exact:cl100k_base");
    assert_eq!(body["encoding"], "cl100k_base");
    assert_eq!(body["model"], "gpt-4-turbo");
}

#[tokio::test]
async fn a_large_text_counts_the_same_each_time() {
    let app = spawn_app().await;
    let text = TEXT.repeat(400); // 30 KB: goes through the content-hash cache
    let first = count(&app, json!({"text": text})).await.json();
    let second = count(&app, json!({"text": text})).await.json();
    assert_eq!(first["tokens"], o200k(&text));
    assert_eq!(second["tokens"], first["tokens"]);
}

#[tokio::test]
async fn claude_texts_are_estimates_and_say_so() {
    let app = spawn_app().await;
    let body = count(&app, json!({"text": TEXT, "model": "claude-sonnet-4-5"}))
        .await
        .json();
    let chars = TEXT.chars().count() as f64;
    assert_eq!(body["tokens"], (chars / 3.5).ceil() as u64);
    assert_eq!(body["method"], "estimate:anthropic:chars/3.5");
    assert_eq!(body["encoding"], Value::Null);
    assert_eq!(body["exact"], false);
}

#[tokio::test]
async fn openai_messages_match_the_counts_the_api_reported() {
    let app = spawn_app().await;
    let gpt4o = count(
        &app,
        json!({"messages": cookbook_messages(), "model": "gpt-4o"}),
    )
    .await
    .json();
    assert_eq!(gpt4o["tokens"], 124);
    assert_eq!(
        gpt4o["method"],
        "exact:o200k_base;overhead:3/message,1/name,3/reply"
    );
    let gpt4 = count(
        &app,
        json!({"messages": cookbook_messages(), "model": "gpt-4"}),
    )
    .await
    .json();
    assert_eq!(gpt4["tokens"], 129);
}

#[tokio::test]
async fn openai_tool_calls_count_their_names_and_arguments() {
    let app = spawn_app().await;
    let args = r#"{"query":"disk full","limit":20}"#;
    let messages = json!([
        {"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_9", "type": "function", "function": {"name": "search_logs", "arguments": args}}
        ]},
        {"role": "tool", "tool_call_id": "call_9", "content": "no hits"},
    ]);
    let body = count(&app, json!({"messages": messages})).await.json();
    let expected = 3
        + o200k("assistant")
        + o200k("search_logs")
        + o200k(args)
        + 3
        + o200k("tool")
        + o200k("call_9")
        + o200k("no hits")
        + 3;
    assert_eq!(body["tokens"], expected);
}

#[tokio::test]
async fn anthropic_messages_count_blocks_tools_and_system() {
    let app = spawn_app().await;
    let input = json!({"command": "pytest -q", "timeout": 600});
    let messages = json!([
        {"role": "user", "content": "Run the tests."},
        {"role": "assistant", "content": [
            {"type": "text", "text": "Running them."},
            {"type": "tool_use", "id": "toolu_01", "name": "bash", "input": input},
        ]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_01", "content": "3 failed, 97 passed"},
        ]},
    ]);
    let system = json!([{"type": "text", "text": "You fix failing tests.", "cache_control": {"type": "ephemeral"}}]);
    // Counted with o200k_base so that every part is checked against the reference.
    let body = count(
        &app,
        json!({"messages": messages, "system": system, "model": "gpt-4o"}),
    )
    .await
    .json();
    let expected = (3 + o200k("system") + o200k("You fix failing tests."))
        + (3 + o200k("user") + o200k("Run the tests."))
        + (3 + o200k("assistant")
            + o200k("Running them.")
            + o200k("bash")
            + o200k(&input.to_string()))
        + (3 + o200k("user") + o200k("3 failed, 97 passed"))
        + 3;
    assert_eq!(body["tokens"], expected);

    let claude = count(
        &app,
        json!({"messages": messages, "system": "You fix failing tests.", "model": "claude-opus-4"}),
    )
    .await
    .json();
    assert_eq!(
        claude["method"],
        "estimate:anthropic:chars/3.5;overhead:3/message,1/name,3/reply"
    );
    assert_eq!(claude["exact"], false);
    assert!(claude["tokens"].as_u64().unwrap() > 15);
}

#[tokio::test]
async fn exactly_one_of_text_and_messages_is_required() {
    let app = spawn_app().await;
    for body in [
        json!({}),
        json!({"model": "gpt-4o"}),
        json!({"text": "a", "messages": []}),
    ] {
        let resp = count(&app, body).await;
        assert_eq!(resp.status, StatusCode::BAD_REQUEST, "{resp:?}");
        assert_eq!(resp.error_code(), "invalid_request");
        assert_eq!(resp.json()["error"]["fields"], json!(["text", "messages"]));
    }
}

#[tokio::test]
async fn malformed_message_lists_are_refused_naming_the_field() {
    let app = spawn_app().await;
    let cases = [
        (json!({"messages": "hi"}), "messages"),
        (json!({"messages": {"role": "user"}}), "messages"),
        (
            json!({"messages": [{"role": "user", "content": "a"}, "b"]}),
            "messages",
        ),
        (json!({"messages": [], "system": 42}), "system"),
        (json!({"text": "a", "system": "s"}), "system"),
    ];
    for (body, field) in cases {
        let resp = count(&app, body.clone()).await;
        assert_eq!(resp.status, StatusCode::BAD_REQUEST, "{body}: {resp:?}");
        assert_eq!(resp.error_code(), "invalid_field");
        assert_eq!(resp.json()["error"]["field"], field);
    }
}

#[tokio::test]
async fn bodies_that_are_not_the_json_asked_for_get_json_errors() {
    let app = spawn_app().await;
    let resp = count(&app, json!({"text": 5})).await;
    assert_eq!(resp.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(resp.error_code(), "invalid_json");
    let resp = count(&app, json!({"text": "a", "colour": "red"})).await;
    assert_eq!(resp.status, StatusCode::UNPROCESSABLE_ENTITY);
    let resp = app
        .send(
            Request::post("/v1/tokens")
                .header(header::CONTENT_TYPE, "application/json")
                .body(Body::from("{\"text\": "))
                .unwrap(),
        )
        .await;
    assert_eq!(resp.status, StatusCode::BAD_REQUEST);
    assert_eq!(resp.error_code(), "invalid_json");
    let resp = app
        .send(
            Request::post("/v1/tokens")
                .header(header::CONTENT_TYPE, "text/plain")
                .body(Body::from("hello"))
                .unwrap(),
        )
        .await;
    assert_eq!(resp.status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
    let small = spawn_app_with(|c| c.max_json_bytes = 1024).await;
    let resp = count(&small, json!({"text": "x".repeat(2048)})).await;
    assert_eq!(resp.status, StatusCode::PAYLOAD_TOO_LARGE);
}

#[tokio::test]
async fn a_multi_frame_memory_carries_the_exact_count_of_its_whole_text() {
    let app = spawn_app_with(tiny_frames).await;
    // 64-byte frames cut this text inside words, lines and characters.
    let text: String = [
        "2026-01-01 12:00:00 ERROR disk full on /dev/sda1\n",
        "  at fn write(&mut self) -> io::Result<()>\n",
        "Ünïcödé — 日本語 😀👍🏽\n",
        "!!\n/usr/bin/env python3\n",
        "99 bottles of beer\r\n\tTabbed\n",
    ]
    .iter()
    .cycle()
    .take(60)
    .copied()
    .collect();
    let put = app.put_raw("", text.clone()).await;
    assert_eq!(put.status, StatusCode::CREATED, "{put:?}");
    let put = put.json();
    assert!(put["stored_bytes"].as_u64().unwrap() > 0);
    assert_eq!(put["tokens"], o200k(&text));
    assert_eq!(put["token_method"], "exact:o200k_base");
    let id = put["id"].as_str().unwrap();
    let got = app.get(&format!("/v1/memories/{id}")).await.json();
    assert_eq!(got["tokens"], o200k(&text));
    assert_eq!(got["token_method"], "exact:o200k_base");
    let again = app.put_raw("", text.clone()).await.json();
    assert_eq!(again["deduplicated"], true);
    assert_eq!(again["token_method"], "exact:o200k_base");
}

#[tokio::test]
async fn small_and_json_puts_are_counted_exactly_too() {
    let app = spawn_app().await;
    let put = app.put_json(json!({"content": TEXT})).await.json();
    assert_eq!(put["tokens"], o200k(TEXT));
    assert_eq!(put["token_method"], "exact:o200k_base");
}

#[tokio::test]
async fn content_over_the_exact_limit_or_not_text_is_estimated() {
    let app = spawn_app_with(|c| {
        tiny_frames(c);
        c.exact_tokens_max_bytes = 1000;
    })
    .await;
    let text = TEXT.repeat(20); // 1.5 KB
    let put = app.put_raw("", text.clone()).await.json();
    assert_eq!(put["token_method"], "estimate:bytes/4");
    assert_eq!(put["tokens"], (text.len() as u64).div_ceil(4));
    let binary: Vec<u8> = (0..=255u8).cycle().take(900).collect();
    let put = app.put_raw("", binary).await.json();
    assert_eq!(put["token_method"], "estimate:bytes/4");
    assert_eq!(put["tokens"], 225);
}

#[tokio::test]
async fn a_large_put_answers_with_the_estimate_and_settles_to_the_exact_count() {
    let app = spawn_app_with(|c| c.exact_tokens_after_bytes = 1000).await;
    let text = TEXT.repeat(100);
    let estimate = (text.len() as u64).div_ceil(4);
    let put = app.put_raw("", text.clone()).await;
    assert_eq!(put.status, StatusCode::CREATED, "{put:?}");
    let put = put.json();
    assert_eq!(put["token_method"], "estimate:bytes/4");
    assert_eq!(put["tokens"], estimate);
    assert_eq!(put["tokens_settling"], true);
    let summary = put["summary"].as_str().unwrap();
    assert!(
        summary.contains(&format!("{estimate} tokens (estimate:bytes/4)")),
        "{summary}"
    );

    let id = put["id"].as_str().unwrap();
    let got = app.settled(id).await;
    let exact = o200k(&text);
    assert_eq!(got["tokens"], exact);
    assert_eq!(got["token_method"], "exact:o200k_base");
    let summary = got["summary"].as_str().unwrap();
    assert!(
        summary.contains(&format!("{exact} tokens (exact:o200k_base)")),
        "{summary}"
    );
    assert!(!summary.contains("estimate"), "{summary}");
    // Listed as it is got.
    let listed = app.get("/v1/memories").await.json();
    assert_eq!(listed["memories"][0]["tokens"], exact);

    // The put's saving is accounted once, by the exact count.
    let saved = exact - o200k(summary);
    let mut stats = Value::Null;
    for _ in 0..100 {
        stats = app.get("/v1/stats").await.json();
        if stats["tokens_saved"]["put"] != 0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(stats["tokens_saved"]["put"], saved, "{stats}");

    // The same content again: the memory's count, made.
    let again = app.put_raw("", text).await.json();
    assert_eq!(again["deduplicated"], true);
    assert_eq!(again["tokens"], exact);
    assert_eq!(again["tokens_settling"], false);
}

#[tokio::test]
async fn a_count_a_stop_left_unmade_is_made_at_the_next_start() {
    let app = spawn_app_with(|c| c.exact_tokens_after_bytes = 1000).await;
    let text = TEXT.repeat(100);
    let put = app.put_raw("", text.clone()).await.json();
    assert_eq!(put["tokens_settling"], true);
    let id = put["id"].as_str().unwrap().to_owned();
    let settled = app.settled(&id).await;
    assert_eq!(settled["tokens_settling"], false);
    let saved = settled["tokens"].as_u64().unwrap() - o200k(settled["summary"].as_str().unwrap());
    let stats = app.get("/v1/stats").await.json();
    assert_eq!(stats["tokens_saved"]["put"], saved, "{stats}");

    // The memory as a stop before its count would have left it.
    let estimate = put["tokens"].as_u64().unwrap();
    let summary = put["summary"].as_str().unwrap().replace('\'', "''");
    app.execute_on_metadata(&format!(
        "UPDATE memories SET tokens = {estimate}, token_method = 'estimate:bytes/4', \
         summary = '{summary}', tokens_settling = TRUE WHERE id = '{id}'"
    ))
    .await;
    let app = app
        .restart_with(|c| c.exact_tokens_after_bytes = 1000)
        .await;
    let got = app.settled(&id).await;
    assert_eq!(got["tokens"], o200k(&text));
    assert_eq!(got["token_method"], "exact:o200k_base");
    assert_eq!(got["tokens_settling"], false);
    assert_eq!(got["summary"], settled["summary"]);
    // The put's saving is accounted by the start that settled it (here, a
    // second time: the first run had accounted it before the "stop").
    let mut stats = Value::Null;
    for _ in 0..100 {
        stats = app.get("/v1/stats").await.json();
        if stats["tokens_saved"]["put"] == 2 * saved {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(stats["tokens_saved"]["put"], 2 * saved, "{stats}");
}

#[tokio::test]
async fn content_at_the_size_or_not_text_is_answered_as_counted() {
    let app = spawn_app_with(|c| c.exact_tokens_after_bytes = 1000).await;
    let text = "x".repeat(999) + "\n";
    let put = app.put_raw("", text.clone()).await.json();
    assert_eq!(put["token_method"], "exact:o200k_base");
    assert_eq!(put["tokens"], o200k(&text));
    assert_eq!(put["tokens_settling"], false);
    // Not text: the estimate, which the answer does not call settling.
    let mut binary: Vec<u8> = TEXT.repeat(100).into_bytes();
    binary[3000] = 0xff;
    let put = app.put_raw("", binary.clone()).await.json();
    assert_eq!(put["token_method"], "estimate:bytes/4");
    assert_eq!(put["tokens_settling"], false);
    let id = put["id"].as_str().unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let got = app.get(&format!("/v1/memories/{id}")).await.json();
    assert_eq!(got["token_method"], "estimate:bytes/4");
    assert_eq!(got["tokens"], (binary.len() as u64).div_ceil(4));
}

#[tokio::test]
async fn a_one_frame_put_is_counted_exactly_as_it_is_stored() {
    // Over the size worked on inline (16 KiB) and under a frame: one frame,
    // counted by the frame worker that redacts and compresses it.
    let app = spawn_app().await;
    let text: String = (0..2_500)
        .map(|i| format!("line {i}: ok — ünï {} 😀\n", i * 7))
        .collect();
    assert!((20_000..200_000).contains(&text.len()), "{}", text.len());
    let put = app.put_raw("", text.clone()).await;
    assert_eq!(put.status, StatusCode::CREATED, "{put:?}");
    let put = put.json();
    assert_eq!(put["tokens"], o200k(&text));
    assert_eq!(put["token_method"], "exact:o200k_base");
    // A secret in it: what is counted is the redacted content as stored.
    let secret = format!("{text}url = mysql://root:hunter2hunter2@10.1.2.3:3306/prod\n");
    let put = app.put_json(json!({"content": secret})).await.json();
    let id = put["id"].as_str().unwrap();
    let stored = app.get(&format!("/v1/memories/{id}/content")).await;
    let stored = stored.text();
    assert!(
        stored.contains("[REDACTED:url_password]"),
        "{}",
        &stored[stored.len() - 200..]
    );
    assert_ne!(o200k(stored), o200k(&secret));
    assert_eq!(put["tokens"], o200k(stored));
    assert_eq!(put["token_method"], "exact:o200k_base");
}
