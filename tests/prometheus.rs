//! `/metrics` with the real Prometheus tools: `promtool check metrics` on a
//! live answer, and a real Prometheus scraping a test server, through which
//! every PromQL expression of the shipped Grafana dashboard must return data.
//!
//! Needs `promtool` and `prometheus` (Debian's `prometheus` package, which
//! `.ci/run` installs). Without them the tests say they were skipped, except
//! under CI (`CI` set), where they fail.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

#[path = "common/in_process.rs"]
mod in_process;
#[path = "common/served.rs"]
mod served;

use serde_json::{Value, json};
use served::free_port;

const DASHBOARD: &str = include_str!("../docker/grafana/dashboards/cairn.json");

/// Whether `tool` runs; if not, panics under CI and otherwise says the test is skipped.
fn have(tool: &str) -> bool {
    let found = Command::new(tool)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !found {
        assert!(
            std::env::var_os("CI").is_none(),
            "`{tool}` is not installed, and CI must run this test (apt-get install prometheus)"
        );
        eprintln!("skipped: `{tool}` is not installed (apt-get install prometheus)");
    }
    found
}

/// A Cairn server on a random loopback port.
type Server = in_process::Listening;

/// A stand-in OpenAI upstream for the proxy's panels: it calls Cairn's
/// `memory_fetch` on the first pointer it sees until a fetch result is in the
/// conversation, then answers text; usage with cached tokens every time. The
/// model `overloaded` gets a 529, as a provider answers under load.
async fn start_upstream() -> String {
    async fn answer(axum::Json(body): axum::Json<Value>) -> axum::response::Response {
        use axum::response::IntoResponse;
        if body["model"] == "overloaded" {
            let error = json!({"error": {"message": "overloaded", "type": "overloaded_error"}});
            return (
                axum::http::StatusCode::from_u16(529).unwrap(),
                axum::Json(error),
            )
                .into_response();
        }
        let text = body["messages"].to_string();
        let fetched = body["messages"]
            .as_array()
            .is_some_and(|ms| ms.iter().any(|m| m["tool_call_id"] == "call_fetch"));
        let pointer = text.find("mem://").map(|i| text[i..i + 70].to_owned());
        let message = match pointer {
            Some(uri) if !fetched => json!({"role": "assistant", "content": null, "tool_calls": [
                {"id": "call_fetch", "type": "function",
                 "function": {"name": "memory_fetch", "arguments": json!({"uri": uri, "line_start": 1, "line_end": 3}).to_string()}}]}),
            _ => json!({"role": "assistant", "content": "done"}),
        };
        axum::Json(
            json!({"id": "c", "object": "chat.completion", "created": 1, "model": "gpt-4o",
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 900, "completion_tokens": 5, "prompt_tokens_details": {"cached_tokens": 512}}}),
        )
        .into_response()
    }
    let app = axum::Router::new().route("/v1/chat/completions", axum::routing::post(answer));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    url
}

async fn start_server() -> Server {
    let upstream = start_upstream().await;
    in_process::listen(|config| config.upstream_openai_url = Some(upstream)).await
}

/// Puts, dedup hits, slices of every kind, a compress, governor decisions in
/// every tier and a 404: every series the dashboard reads gets samples.
async fn drive_traffic(client: &reqwest::Client, base: &str, round: usize) {
    let content = format!("round {round}: a tool output line worth offloading\n").repeat(500);
    for query in ["type=TOOL_OUTPUT", "type=TOOL_OUTPUT", "type=WEB_SCRAPE"] {
        let resp = client
            .post(format!("{base}/v1/memories?{query}"))
            .header("content-type", "text/plain")
            .body(content.clone())
            .send()
            .await
            .unwrap();
        assert!(resp.status().is_success());
    }
    let put: Value = client
        .post(format!("{base}/v1/memories?type=TOOL_OUTPUT"))
        .header("content-type", "text/plain")
        .body(content)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = put["id"].as_str().unwrap();
    for path in [
        format!("/v1/memories/{id}/lines?start=1&end=20"),
        format!("/v1/memories/{id}/bytes?offset=0&length=64"),
        format!("/v1/memories/{id}/chunks/0"),
        format!("/v1/memories/{id}/content"),
        "/v1/no-such-route".to_owned(),
    ] {
        client.get(format!("{base}{path}")).send().await.unwrap();
    }
    let doc: Value = serde_json::from_str(include_str!("fixtures/openai.json")).unwrap();
    let compress =
        json!({"messages": doc["messages"], "model": doc["model"], "strategy": "pointer"});
    let resp = client
        .post(format!("{base}/v1/compress"))
        .json(&compress)
        .send()
        .await
        .unwrap();
    assert!(resp.status().is_success());
    // Through the proxy: a big tool result offloaded, one retrieval round.
    let result = format!("round {round}: proxied tool output line\n").repeat(600);
    let chat = json!({"model": "gpt-4o", "messages": [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_run", "type": "function", "function": {"name": "run", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "call_run", "content": result}]});
    let resp = client
        .post(format!("{base}/v1/chat/completions"))
        .json(&chat)
        .send()
        .await
        .unwrap();
    assert_eq!(
        resp.status(),
        200,
        "{}",
        resp.text().await.unwrap_or_default()
    );
    // A request without a message list goes upstream unchanged (a skip).
    let resp = client
        .post(format!("{base}/v1/chat/completions"))
        .json(&json!({"model": "gpt-4o", "prompt": "legacy"}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.headers()["x-cairn-skipped"], "no messages");
    // An upstream fault, passed on.
    let resp = client
        .post(format!("{base}/v1/chat/completions"))
        .json(&json!({"model": "overloaded", "messages": [{"role": "user", "content": "hi"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 529);
    for tokens in [100, 30_000, 90_000] {
        let resp = client
            .post(format!("{base}/v1/governor"))
            .json(&json!({"tokens": tokens}))
            .send()
            .await
            .unwrap();
        assert!(resp.status().is_success());
    }
}

#[tokio::test]
async fn promtool_accepts_a_live_metrics_answer() {
    if !have("promtool") {
        return;
    }
    let server = start_server().await;
    let client = reqwest::Client::new();
    drive_traffic(&client, &server.base, 0).await;
    let text = client
        .get(format!("{}/metrics", server.base))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(text.contains("cairn_memories_put_total"));
    let mut promtool = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    promtool
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = promtool.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "promtool check metrics failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A Prometheus process, killed when dropped.
struct Prometheus {
    child: Child,
    base: String,
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_prometheus(dir: &std::path::Path, target_port: u16) -> Prometheus {
    let config = dir.join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: cairn\n    static_configs:\n      - targets: ['127.0.0.1:{target_port}']\n"
        ),
    )
    .unwrap();
    let port = free_port();
    let log = std::fs::File::create(dir.join("prometheus.log")).unwrap();
    let child = Command::new("prometheus")
        .arg(format!("--config.file={}", config.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.join("tsdb").display()
        ))
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap();
    Prometheus {
        child,
        base: format!("http://127.0.0.1:{port}"),
    }
}

async fn query(client: &reqwest::Client, prometheus: &str, expr: &str) -> Value {
    let resp = client
        .get(format!("{prometheus}/api/v1/query"))
        .query(&[("query", expr)])
        .send()
        .await;
    match resp {
        Ok(resp) => resp.json().await.unwrap_or(Value::Null),
        Err(_) => Value::Null,
    }
}

/// Every `expr` of every panel (rows' nested panels included).
fn dashboard_expressions(dashboard: &Value) -> Vec<(String, String)> {
    fn walk(panels: &Value, out: &mut Vec<(String, String)>) {
        for panel in panels.as_array().into_iter().flatten() {
            let title = panel["title"].as_str().unwrap_or_default();
            for target in panel["targets"].as_array().into_iter().flatten() {
                if let Some(expr) = target["expr"].as_str() {
                    out.push((title.to_owned(), expr.to_owned()));
                }
            }
            walk(&panel["panels"], out);
        }
    }
    let mut out = Vec::new();
    walk(&dashboard["panels"], &mut out);
    out
}

/// Grafana's interval variables as a 1 s scrape needs them.
fn substitute(expr: &str) -> String {
    expr.replace("$__rate_interval", "30s")
        .replace("$__range", "1h")
        .replace("$__interval", "5s")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_dashboard_expression_returns_data_from_a_real_prometheus() {
    if !have("prometheus") {
        return;
    }
    let dashboard: Value = serde_json::from_str(DASHBOARD).unwrap();
    assert_eq!(dashboard["title"], "Cairn — token savings");
    let expressions = dashboard_expressions(&dashboard);
    assert!(expressions.len() >= 15, "{} expressions", expressions.len());

    let server = start_server().await;
    let client = reqwest::Client::new();
    drive_traffic(&client, &server.base, 0).await;
    let dir = tempfile::tempdir().unwrap();
    let prometheus = start_prometheus(dir.path(), server.port);

    // Wait for the first scrape, then add traffic so that rates see increases.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let up = query(&client, &prometheus.base, "up{job=\"cairn\"} == 1").await;
        if up["data"]["result"]
            .as_array()
            .is_some_and(|r| !r.is_empty())
        {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "Prometheus did not scrape the server within 60 s; its log:\n{}",
            std::fs::read_to_string(dir.path().join("prometheus.log")).unwrap_or_default()
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    for round in 1..=3 {
        drive_traffic(&client, &server.base, round).await;
        tokio::time::sleep(Duration::from_millis(1_200)).await;
    }
    tokio::time::sleep(Duration::from_millis(2_500)).await;

    let mut empty = Vec::new();
    for (title, expr) in &expressions {
        let expr = substitute(expr);
        let answer = query(&client, &prometheus.base, &expr).await;
        assert_eq!(
            answer["status"], "success",
            "panel `{title}`: `{expr}` failed: {answer}"
        );
        if answer["data"]["result"]
            .as_array()
            .is_none_or(Vec::is_empty)
        {
            empty.push(format!("panel `{title}`: `{expr}`"));
        }
    }
    assert!(
        empty.is_empty(),
        "expressions without data:\n{}",
        empty.join("\n")
    );
}
