//! `POST /v1/usage`: cost from the price table, today's spend, budgets (429), calibration.

use axum::http::StatusCode;
use cairn::app::App;
use cairn::config::Config;
use serde_json::{Value, json};

use crate::helpers::{Resp, TestApp, spawn_app, spawn_app_with};

const ALPHA: &str = "key-alpha-0001";
const BETA: &str = "key-beta-00002";

/// POST /v1/usage, as `key` when given.
pub async fn report(app: &TestApp, key: Option<&str>, body: Value) -> Resp {
    let bearer = key.map(|k| format!("Bearer {k}"));
    let headers: Vec<(&str, &str)> = bearer
        .as_deref()
        .map(|b| vec![("authorization", b)])
        .unwrap_or_default();
    app.post(
        "/v1/usage",
        Some("application/json"),
        &headers,
        body.to_string(),
    )
    .await
}

fn close(a: &Value, b: f64) -> bool {
    a.as_f64().is_some_and(|a| (a - b).abs() < 1e-9)
}

#[tokio::test]
async fn usage_is_priced_by_the_longest_matching_entry_and_summed_for_the_day() {
    let app = spawn_app().await;
    let resp = report(
        &app,
        None,
        json!({"model": "gpt-4o-mini-2024-07-18", "input_tokens": 10_000, "output_tokens": 2_000}),
    )
    .await;
    assert_eq!(resp.status, StatusCode::OK, "{}", resp.text());
    let body = resp.json();
    assert_eq!(body["model"], "gpt-4o-mini-2024-07-18");
    assert_eq!(body["price"]["entry"], "gpt-4o-mini");
    assert!(close(&body["price"]["input_per_mtok"], 0.15));
    assert!(close(&body["price"]["output_per_mtok"], 0.60));
    assert_eq!(body["price"]["fallback"], false);
    // 10,000 × 0.15/M + 2,000 × 0.60/M
    assert!(close(&body["cost_usd"], 0.0015 + 0.0012), "{body}");
    assert_eq!(body["today"]["tokens"], 12_000);
    assert_eq!(body["budget"]["tokens_limit"], Value::Null);
    assert_eq!(body["budget"]["cost_remaining_usd"], Value::Null);
    assert!(
        body["budget"]["resets_at"]
            .as_str()
            .unwrap()
            .ends_with("T00:00:00Z")
    );
    assert_eq!(body["calibration"], json!({"factor": 1.0, "samples": 0}));

    let second = report(
        &app,
        None,
        json!({"model": "anthropic/Claude-Sonnet-4-5", "input_tokens": 1_000, "output_tokens": 100}),
    )
    .await
    .json();
    assert_eq!(second["model"], "claude-sonnet-4-5");
    // $3/M in, $15/M out.
    assert!(close(&second["cost_usd"], 0.003 + 0.0015), "{second}");
    assert_eq!(second["today"]["tokens"], 13_100);
    assert!(close(&second["today"]["cost_usd"], 0.0027 + 0.0045));
}

#[tokio::test]
async fn estimates_teach_a_calibration_factor_per_model() {
    let app = spawn_app().await;
    let mut last = Value::Null;
    for (reported, estimated) in [(1_100, 1_000), (1_300, 1_000), (900_000, 1_000)] {
        last = report(
            &app,
            None,
            json!({"model": "claude-haiku-4-5", "input_tokens": reported, "output_tokens": 0,
                   "estimated_input_tokens": estimated}),
        )
        .await
        .json();
    }
    // The absurd third sample is clamped to 4: (1.1 + 1.3 + 4) / 3.
    assert_eq!(last["calibration"]["samples"], 3);
    assert!(close(&last["calibration"]["factor"], 2.1333), "{last}");
    // Another model has its own factor.
    let other = report(
        &app,
        None,
        json!({"model": "gemini-2.5-pro", "input_tokens": 5, "output_tokens": 5}),
    )
    .await
    .json();
    assert_eq!(other["calibration"], json!({"factor": 1.0, "samples": 0}));
}

#[tokio::test]
async fn bad_reports_are_refused_with_the_field() {
    let app = spawn_app().await;
    let cases = [
        (
            json!({"model": "gpt-4o", "input_tokens": -1, "output_tokens": 0}),
            "input_tokens",
        ),
        (
            json!({"model": "gpt-4o", "input_tokens": 1, "output_tokens": 2.5}),
            "output_tokens",
        ),
        (
            json!({"model": "gpt-4o", "input_tokens": 1e15, "output_tokens": 0}),
            "input_tokens",
        ),
        (
            json!({"model": "gpt-4o", "input_tokens": 100_000_001u64, "output_tokens": 0}),
            "input_tokens",
        ),
        (
            json!({"model": "gpt-4o", "input_tokens": 1, "output_tokens": 0, "estimated_input_tokens": 0}),
            "estimated_input_tokens",
        ),
        (
            json!({"model": " ", "input_tokens": 1, "output_tokens": 0}),
            "model",
        ),
    ];
    for (body, field) in cases {
        let resp = report(&app, None, body.clone()).await;
        let error = resp.assert_error(StatusCode::BAD_REQUEST, "invalid_field");
        assert_eq!(error["field"], field, "{body}");
    }
    let missing = report(&app, None, json!({"model": "gpt-4o", "input_tokens": 1})).await;
    missing.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "invalid_json");
    let typo = report(
        &app,
        None,
        json!({"model": "gpt-4o", "input_tokens": 1, "output_tokens": 1, "outptu": 2}),
    )
    .await;
    typo.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "invalid_json");
    let not_json = app
        .post("/v1/usage", Some("application/json"), &[], "{model")
        .await;
    not_json.assert_error(StatusCode::BAD_REQUEST, "invalid_json");
    // Nothing of the refused reports was counted.
    let stats = app.get("/v1/stats").await.json();
    assert_eq!(stats["usage"]["all_time"]["reports"], 0);
}

#[tokio::test]
async fn a_spent_token_budget_answers_429_with_its_figures() {
    let app = spawn_app_with(|c| c.daily_token_budget = Some(1_000)).await;
    let first = report(
        &app,
        None,
        json!({"model": "gpt-4o", "input_tokens": 500, "output_tokens": 100}),
    )
    .await
    .json();
    assert_eq!(first["budget"]["tokens_limit"], 1_000);
    assert_eq!(first["budget"]["tokens_remaining"], 400);

    let over = report(
        &app,
        None,
        json!({"model": "gpt-4o", "input_tokens": 500, "output_tokens": 100}),
    )
    .await;
    let error = over.assert_error(StatusCode::TOO_MANY_REQUESTS, "budget_exceeded");
    assert_eq!(error["budget"], "tokens");
    assert!(close(&error["limit"], 1_000.0));
    assert!(close(&error["spent"], 1_200.0));
    let resets_at = error["resets_at"].as_str().unwrap();
    let reset = chrono::DateTime::parse_from_rfc3339(resets_at).unwrap();
    let retry: i64 = over.header("retry-after").unwrap().parse().unwrap();
    let until = (reset.to_utc() - chrono::Utc::now()).num_seconds();
    assert!((1..=86_400).contains(&retry), "{retry}");
    assert!((retry - until).abs() <= 2, "{retry} vs {until}");
    assert!(resets_at.ends_with("T00:00:00Z"), "{resets_at}");

    // The refused report was still recorded; further reports are refused too.
    let stats = app.get("/v1/stats").await.json();
    assert_eq!(stats["usage"]["today"]["tokens"], 1_200);
    assert_eq!(stats["budget"]["tokens_remaining"], 0);
    let again = report(
        &app,
        None,
        json!({"model": "gpt-4o", "input_tokens": 1, "output_tokens": 0}),
    )
    .await;
    again.assert_error(StatusCode::TOO_MANY_REQUESTS, "budget_exceeded");
}

#[tokio::test]
async fn a_namespace_budget_binds_only_that_namespace() {
    let app = spawn_app_with(|c| {
        c.api_keys = Some(format!("{ALPHA}:alpha,{BETA}:beta"));
        // $0.001 = 400 input tokens of gpt-4o at $2.50/M.
        c.budgets = Some("alpha:cost=0.001".into());
    })
    .await;
    let body = json!({"model": "gpt-4o", "input_tokens": 400, "output_tokens": 0});
    let alpha = report(&app, Some(ALPHA), body.clone()).await;
    let error = alpha.assert_error(StatusCode::TOO_MANY_REQUESTS, "budget_exceeded");
    assert_eq!(error["budget"], "cost_usd");
    assert!(close(&error["limit"], 0.001));
    let beta = report(&app, Some(BETA), body).await;
    assert_eq!(beta.status, StatusCode::OK, "{}", beta.text());
    assert_eq!(beta.json()["budget"]["cost_limit_usd"], Value::Null);
    assert_eq!(beta.json()["today"]["tokens"], 400);
}

#[tokio::test]
async fn unknown_models_are_priced_as_the_default_model_and_a_pricing_file_overrides() {
    let dir = tempfile::tempdir().unwrap();
    let prices = dir.path().join("prices.json");
    std::fs::write(
        &prices,
        r#"{"local-llama": {"input_per_mtok": 0.2, "output_per_mtok": 0.4},
            "gpt-4o": {"input_per_mtok": 2.0, "output_per_mtok": 8.0}}"#,
    )
    .unwrap();
    let app = spawn_app_with(|c| c.pricing_file = Some(prices.clone())).await;
    let unknown = report(
        &app,
        None,
        json!({"model": "mystery-1", "input_tokens": 1_000_000, "output_tokens": 0}),
    )
    .await
    .json();
    assert_eq!(unknown["price"]["entry"], "gpt-4o");
    assert_eq!(unknown["price"]["fallback"], true);
    assert!(close(&unknown["cost_usd"], 2.0), "{unknown}");
    let local = report(
        &app,
        None,
        json!({"model": "local-llama-3-8b", "input_tokens": 1_000_000, "output_tokens": 1_000_000}),
    )
    .await
    .json();
    assert_eq!(local["price"]["entry"], "local-llama");
    assert!(close(&local["cost_usd"], 0.6), "{local}");
}

#[tokio::test]
async fn bad_pricing_and_budget_settings_stop_the_start() {
    let dir = tempfile::tempdir().unwrap();
    let prices = dir.path().join("prices.json");
    std::fs::write(&prices, r#"{"x": {"input_per_mtok": "cheap"}}"#).unwrap();
    let mut config = Config::with_data_dir(dir.path());
    config.pricing_file = Some(prices);
    let err = App::build(&config).await.err().unwrap().to_string();
    assert!(err.contains("prices.json"), "{err}");

    let mut config = Config::with_data_dir(dir.path());
    config.budgets = Some("alpha:tokens=many".into());
    let err = App::build(&config).await.err().unwrap().to_string();
    assert!(err.contains("budget"), "{err}");

    let mut config = Config::with_data_dir(dir.path());
    config.default_model = "no-such-model".into();
    let err = App::build(&config).await.err().unwrap().to_string();
    assert!(err.contains("no-such-model"), "{err}");
}
