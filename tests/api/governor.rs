//! `POST /v1/governor`: tiers, configured limits and their precedence,
//! dry-run figures, applying, errors.

use axum::http::StatusCode;
use serde_json::{Value, json};

use crate::compress::{assert_pairs, fixture, post, restore};
use crate::helpers::{TestApp, spawn_app, spawn_app_with};

async fn govern(app: &TestApp, body: Value) -> Value {
    let resp = post(app, "/v1/governor", &body).await;
    assert_eq!(
        resp.status,
        StatusCode::OK,
        "{}",
        String::from_utf8_lossy(&resp.body)
    );
    resp.json()
}

#[tokio::test]
async fn tiers_follow_the_default_limits() {
    let app = spawn_app().await;
    for (tokens, tier) in [
        (0, "normal"),
        (19_999, "normal"),
        (20_000, "warn"),
        (39_999, "warn"),
        (40_000, "pointer_only"),
    ] {
        let answer = govern(&app, json!({"tokens": tokens})).await;
        assert_eq!(answer["tier"], tier, "{tokens}");
        assert_eq!(
            answer["limits"],
            json!({"warn": 20000, "pointer_only": 40000, "source": "global"})
        );
        assert_eq!(answer["tokens_after_compression"], tokens);
        assert_eq!(answer["method"], "reported");
    }
    let warn = govern(&app, json!({"tokens": 27_345})).await;
    let advice = warn["advice"].as_str().unwrap();
    assert!(
        advice.starts_with("Context is at 27.3k tokens (warn from 20k"),
        "{advice}"
    );
    assert!(advice.contains("memory_fetch"));
    let hot = govern(&app, json!({"tokens": 45_000})).await;
    assert!(
        hot["advice"]
            .as_str()
            .unwrap()
            .contains("pointer-only from 40k")
    );
    app.shutdown().await;
}

#[tokio::test]
async fn messages_are_counted_and_a_dry_run_stores_nothing() {
    let app = spawn_app().await;
    let doc = fixture("openai");
    let body = json!({"messages": doc["messages"], "model": "gpt-4.1"});
    let answer = govern(&app, body.clone()).await;
    let tokens = answer["tokens"].as_u64().unwrap();
    assert!(tokens >= 40_000, "{tokens}");
    assert_eq!(answer["tier"], "pointer_only");
    assert_eq!(answer["method"], "exact:o200k_base");
    let dry = answer["tokens_after_compression"].as_u64().unwrap();
    assert!(dry < tokens / 4, "{dry} of {tokens}");
    assert!(answer.get("messages").is_none());
    let listed = app.get("/v1/memories").await.json();
    assert_eq!(listed["memories"], json!([]), "a dry run stores nothing");

    // Applying gives the figure the dry run promised, and valid, restorable messages.
    let mut apply = body.clone();
    apply["apply"] = json!(true);
    let applied = govern(&app, apply.clone()).await;
    assert_eq!(applied["tokens_after_compression"].as_u64().unwrap(), dry);
    assert_eq!(applied["report"]["tokens_after"].as_u64().unwrap(), dry);
    assert_eq!(applied["report"]["strategy"], "pointer+observation_masking");
    let messages = applied["messages"].as_array().unwrap();
    assert_pairs("openai", messages);
    let refs: Vec<String> = applied["memory_refs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        &restore(&app, messages, &refs).await,
        doc["messages"].as_array().unwrap()
    );
    // pointer_only keeps only the last tool result verbatim.
    let verbatim = messages
        .iter()
        .filter(|m| m["role"] == "tool" && !m["content"].as_str().unwrap().starts_with("[cairn:"))
        .count();
    assert_eq!(verbatim, 1);

    // The governed messages are governed: applying again changes nothing.
    let mut again = apply.clone();
    again["messages"] = applied["messages"].clone();
    let second = govern(&app, again).await;
    assert_eq!(second["messages"], applied["messages"]);
    assert!(second["tokens"].as_u64().unwrap() < 20_000);
    assert_eq!(second["tier"], "normal");
    app.shutdown().await;
}

#[tokio::test]
async fn warn_masks_older_results_and_offloads_big_ones() {
    let app = spawn_app_with(|c| {
        c.governor_warn_tokens = 30_000;
        c.governor_pointer_only_tokens = 1_000_000;
    })
    .await;
    let doc = fixture("anthropic");
    let answer = govern(&app, json!({"messages": doc["messages"], "system": doc["system"], "model": "claude-sonnet-4", "apply": true})).await;
    assert_eq!(answer["tier"], "warn");
    assert_eq!(answer["limits"]["warn"], 30_000);
    assert!(
        answer["method"]
            .as_str()
            .unwrap()
            .starts_with("estimate:anthropic")
    );
    let messages = answer["messages"].as_array().unwrap();
    assert_pairs("anthropic", messages);
    assert_eq!(answer["system"], doc["system"]);
    assert_eq!(
        messages[0], doc["messages"][0],
        "the cache_control prefix stays"
    );
    assert!(
        answer["tokens_after_compression"].as_u64().unwrap() < answer["tokens"].as_u64().unwrap()
    );
    app.shutdown().await;
}

#[tokio::test]
async fn a_named_strategy_replaces_the_tiers_own() {
    let app = spawn_app().await;
    let doc = fixture("openai");
    let answer = govern(&app, json!({"messages": doc["messages"], "apply": true, "strategy": "sliding_window", "preserve_prefix": 1})).await;
    assert_eq!(answer["report"]["strategy"], "sliding_window");
    assert_eq!(answer["messages"][0], doc["messages"][0]);
    app.shutdown().await;
}

#[tokio::test]
async fn normal_contexts_come_back_unchanged() {
    let app = spawn_app().await;
    let messages =
        json!([{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]);
    let answer = govern(&app, json!({"messages": messages, "apply": true})).await;
    assert_eq!(answer["tier"], "normal");
    assert_eq!(answer["messages"], messages);
    assert_eq!(answer["tokens_after_compression"], answer["tokens"]);
    app.shutdown().await;
}

const LIMITS_FILE: &str = r#"{
  "models": {"gpt-4.1": {"warn": 1000, "pointer_only": 2000},
             "gpt-4.1-mini": {"warn": 3000, "pointer_only": 4000}},
  "namespaces": {"tight": {"warn": 10, "pointer_only": 20}}
}"#;

#[tokio::test]
async fn namespace_limits_win_over_model_over_global() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("governor.json");
    std::fs::write(&path, LIMITS_FILE).unwrap();
    let app = spawn_app_with(|c| {
        c.governor_file = Some(path.clone());
        c.governor_warn_tokens = 500;
        c.governor_pointer_only_tokens = 600;
        c.api_keys = Some("key-tight-0001:tight,key-loose-0001:loose".into());
    })
    .await;
    let ask = |key: &'static str, body: Value| {
        let app = &app;
        async move {
            let resp = app
                .post(
                    "/v1/governor",
                    Some("application/json"),
                    &[("authorization", &format!("Bearer {key}"))],
                    body.to_string(),
                )
                .await;
            assert_eq!(
                resp.status,
                StatusCode::OK,
                "{}",
                String::from_utf8_lossy(&resp.body)
            );
            resp.json()
        }
    };
    let messages = json!([{"role": "user", "content": "hello ".repeat(1500)}]);
    let answer = ask(
        "key-tight-0001",
        json!({"messages": messages, "model": "gpt-4.1"}),
    )
    .await;
    assert_eq!(
        answer["limits"],
        json!({"warn": 10, "pointer_only": 20, "source": "namespace"})
    );
    assert_eq!(answer["tier"], "pointer_only");
    let answer = ask(
        "key-loose-0001",
        json!({"messages": messages, "model": "gpt-4.1"}),
    )
    .await;
    assert_eq!(answer["limits"]["source"], "model");
    assert_eq!(answer["limits"]["warn"], 1000);
    assert_eq!(answer["tier"], "warn", "{} tokens", answer["tokens"]);
    let answer = ask(
        "key-loose-0001",
        json!({"messages": messages, "model": "gpt-4.1-mini-2025-04-14"}),
    )
    .await;
    assert_eq!(answer["limits"]["warn"], 3000);
    assert_eq!(answer["tier"], "normal");
    let answer = ask(
        "key-loose-0001",
        json!({"messages": messages, "model": "gpt-4o"}),
    )
    .await;
    assert_eq!(
        answer["limits"],
        json!({"warn": 500, "pointer_only": 600, "source": "global"})
    );
    assert_eq!(answer["tier"], "pointer_only");
    app.shutdown().await;
}

#[tokio::test]
async fn bad_limits_stop_the_start_with_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = cairn::config::Config::with_data_dir(dir.path());
    config.governor_warn_tokens = 50_000;
    let err = cairn::app::App::build(&config)
        .await
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.contains("warn (50000) must be at least 1 and below pointer_only (40000)"),
        "{err}"
    );
    let path = dir.path().join("g.json");
    std::fs::write(
        &path,
        r#"{"namespaces": {"a": {"warn": 9, "pointer_only": 3}}}"#,
    )
    .unwrap();
    let mut config = cairn::config::Config::with_data_dir(dir.path());
    config.governor_file = Some(path.clone());
    let err = cairn::app::App::build(&config)
        .await
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.contains("namespaces.a") && err.contains("g.json"),
        "{err}"
    );
    std::fs::write(&path, r#"{"modelz": {}}"#).unwrap();
    let err = cairn::app::App::build(&config)
        .await
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("unknown field `modelz`"), "{err}");
}

#[tokio::test]
async fn bad_questions_get_clear_errors() {
    let app = spawn_app().await;
    let resp = post(&app, "/v1/governor", &json!({})).await;
    assert_eq!(
        resp.assert_error(StatusCode::BAD_REQUEST, "invalid_field")["field"],
        "messages"
    );
    let resp = post(&app, "/v1/governor", &json!({"tokens": 5, "messages": []})).await;
    resp.assert_error(StatusCode::BAD_REQUEST, "invalid_field");
    let resp = post(&app, "/v1/governor", &json!({"tokens": 5, "apply": true})).await;
    assert_eq!(
        resp.assert_error(StatusCode::BAD_REQUEST, "invalid_field")["field"],
        "apply"
    );
    let resp = post(
        &app,
        "/v1/governor",
        &json!({"tokens": 5, "strategy": "zip"}),
    )
    .await;
    assert_eq!(
        resp.assert_error(StatusCode::BAD_REQUEST, "invalid_field")["field"],
        "strategy"
    );
    let resp = post(
        &app,
        "/v1/governor",
        &json!({"messages": [{"role": "user"}], "format": "openai"}),
    )
    .await;
    assert_eq!(
        resp.assert_error(StatusCode::BAD_REQUEST, "invalid_messages")["path"],
        "messages[0].content"
    );
    let resp = post(&app, "/v1/governor", &json!({"tokens": -1})).await;
    resp.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "invalid_json");
    app.shutdown().await;
}
