//! `GET /v1/stats`: a namespace's figures, correct after puts and dedups, isolated
//! from other namespaces, and kept across a restart.

use axum::http::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{noise_lines, spawn_app, spawn_app_with};
use crate::usage::report;

const ALPHA: &str = "key-alpha-0001";
const BETA: &str = "key-beta-00002";

fn keys(c: &mut cairn::config::Config) {
    c.api_keys = Some(format!("{ALPHA}:alpha,{BETA}:beta"));
}

fn close(a: &Value, b: f64) -> bool {
    a.as_f64().is_some_and(|a| (a - b).abs() < 1e-6)
}

fn num(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

#[tokio::test]
async fn an_empty_namespace_has_zero_figures_and_unit_ratios() {
    let app = spawn_app().await;
    let resp = app.get("/v1/stats").await;
    assert_eq!(resp.status, StatusCode::OK);
    let s = resp.json();
    assert_eq!(s["namespace"], "default");
    assert_eq!(s["memories"], 0);
    assert_eq!(s["bytes_stored"], 0);
    assert_eq!(s["compression_ratio"], 1.0);
    assert_eq!(s["dedup_ratio"], 1.0);
    assert_eq!(
        s["tokens_saved"],
        json!({"total": 0, "put": 0, "compress": 0, "proxy": 0})
    );
    assert_eq!(
        s["prompt_cache"],
        json!({"read_tokens": 0, "write_tokens": 0})
    );
    assert_eq!(
        s["governor"],
        json!({"normal": 0, "warn": 0, "pointer_only": 0})
    );
    assert_eq!(s["usage"]["all_time"]["tokens"], 0);
    assert_eq!(s["calibration"], json!([]));
}

#[tokio::test]
async fn stats_count_puts_dedups_and_savings_per_namespace() {
    let app = spawn_app_with(keys).await;
    let shared = String::from_utf8(noise_lines(7, 40_000)).unwrap();
    let own = "short note\n".repeat(3);

    let first = app
        .put_json_as(ALPHA, json!({"content": shared}))
        .await
        .json();
    let again = app.put_json_as(ALPHA, json!({"content": shared})).await;
    assert_eq!(again.status, StatusCode::OK);
    let again = again.json();
    assert_eq!(again["deduplicated"], true);
    let small = app.put_json_as(ALPHA, json!({"content": own})).await.json();
    let beta_put = app
        .put_json_as(BETA, json!({"content": shared}))
        .await
        .json();
    assert_eq!(beta_put["deduplicated"], false);
    report(
        &app,
        Some(BETA),
        json!({"model": "gpt-4o", "input_tokens": 777, "output_tokens": 1, "estimated_input_tokens": 700}),
    )
    .await;

    let a = app.get_as("/v1/stats", ALPHA).await.json();
    assert_eq!(a["namespace"], "alpha");
    assert_eq!(a["memories"], 2);
    let bytes_in = num(&first["bytes"]) + num(&small["bytes"]);
    let stored = num(&first["stored_bytes"]) + num(&small["stored_bytes"]);
    assert_eq!(num(&a["bytes_in"]), bytes_in);
    assert_eq!(num(&a["bytes_stored"]), stored);
    assert!(close(
        &a["compression_ratio"],
        ((bytes_in as f64 / stored as f64) * 1e4).round() / 1e4
    ));
    assert_eq!(
        num(&a["tokens"]),
        num(&first["tokens"]) + num(&small["tokens"])
    );
    assert_eq!(
        a["puts"],
        json!({"total": 3, "new": 2, "deduplicated": 1,
               "bytes": 2 * num(&first["bytes"]) + num(&small["bytes"]), "new_bytes": bytes_in})
    );
    let dedup = (2 * num(&first["bytes"]) + num(&small["bytes"])) as f64 / bytes_in as f64;
    assert!(close(&a["dedup_ratio"], (dedup * 1e4).round() / 1e4), "{a}");
    let saved =
        num(&first["tokens_saved"]) + num(&again["tokens_saved"]) + num(&small["tokens_saved"]);
    assert!(saved > 1_000, "a 40 KB put saves tokens: {saved}");
    assert_eq!(num(&a["tokens_saved"]["put"]), saved);
    assert_eq!(num(&a["tokens_saved"]["total"]), saved);
    // Priced at the default model's input price, gpt-4o: $2.50 per million.
    assert!(close(&a["cost_saved_usd"], saved as f64 * 2.5 / 1e6), "{a}");
    // Beta's usage and calibration are not alpha's.
    assert_eq!(a["usage"]["all_time"]["reports"], 0);
    assert_eq!(a["calibration"], json!([]));

    let b = app.get_as("/v1/stats", BETA).await.json();
    assert_eq!(b["memories"], 1);
    assert_eq!(b["bytes_in"], first["bytes"]);
    assert_eq!(b["bytes_stored"], first["stored_bytes"]);
    assert_eq!(b["dedup_ratio"], 1.0);
    assert_eq!(b["puts"]["deduplicated"], 0);
    assert_eq!(b["tokens_saved"]["put"], beta_put["tokens_saved"]);
    assert_eq!(b["usage"]["today"]["input_tokens"], 777);
    assert_eq!(b["usage"]["all_time"]["tokens"], 778);
    assert_eq!(b["calibration"][0]["model"], "gpt-4o");
    assert!(close(&b["calibration"][0]["factor"], 1.11));
}

#[tokio::test]
async fn figures_and_budgets_survive_a_restart() {
    let budget = |c: &mut cairn::config::Config| c.daily_token_budget = Some(10_000);
    let app = spawn_app_with(budget).await;
    let put = app
        .put_text(
            &String::from_utf8(noise_lines(3, 20_000)).unwrap(),
            json!({}),
        )
        .await;
    let usage = report(
        &app,
        None,
        json!({"model": "claude-sonnet-4-5", "input_tokens": 9_000, "output_tokens": 500,
               "estimated_input_tokens": 7_500}),
    )
    .await;
    assert_eq!(usage.status, StatusCode::OK, "{}", usage.text());
    let mut before = app.get("/v1/stats").await.json();

    let app = app.restart_with(budget).await;
    let mut after = app.get("/v1/stats").await.json();
    // The search index lag is the server's progress, not a figure of the namespace.
    for stats in [&mut before, &mut after] {
        stats.as_object_mut().unwrap().remove("search_index");
    }
    assert_eq!(after, before);
    assert_eq!(after["tokens_saved"]["put"], put["tokens_saved"]);
    assert_eq!(after["usage"]["today"]["tokens"], 9_500);
    assert!(close(&after["calibration"][0]["factor"], 1.2));
    // Today's spend was reloaded: 600 more tokens cross the 10,000 budget.
    let over = report(
        &app,
        None,
        json!({"model": "claude-sonnet-4-5", "input_tokens": 600, "output_tokens": 0}),
    )
    .await;
    over.assert_error(StatusCode::TOO_MANY_REQUESTS, "budget_exceeded");
    app.shutdown().await;
}
