//! Upstream faults, each with what the client sees, in the provider's shape:
//! a connection reset before the head, rate limits and overload passed
//! through unretried, a stalled stream ended after the idle limit, a
//! malformed event passed on, a compressed answer decoded, an answer larger
//! than Cairn holds; and client faults: a client that leaves mid-stream, a
//! client that stops reading (backpressure, not buffering).

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::{content_of, metrics_of, recorded, serve, upstream};

/// Whether `/metrics` counts `n` upstream faults of `kind` for `provider`.
async fn faults_counted(base: &str, provider: &str, kind: &str, n: u64) -> bool {
    metrics_of(base).await.contains(&format!(
        "cairn_proxy_upstream_errors_total{{kind=\"{kind}\",provider=\"{provider}\"}} {n}"
    ))
}

fn chat(stream: bool) -> Value {
    json!({"model": "gpt-4o", "stream": stream, "messages": [{"role": "user", "content": "hi"}]})
}

fn messages(stream: bool) -> Value {
    json!({"model": "claude-sonnet-4-6", "max_tokens": 16, "stream": stream,
        "messages": [{"role": "user", "content": "hi"}]})
}

async fn post(base: &str, path: &str, scenario: &str, body: &Value) -> reqwest::Response {
    reqwest::Client::new()
        .post(format!("{base}{path}"))
        .header("authorization", "Bearer sk-test")
        .header("x-api-key", "sk-ant-test")
        .header("x-test-scenario", scenario)
        .json(body)
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn a_reset_before_the_head_is_a_502_in_the_providers_shape() {
    let up = upstream();
    let server = serve(|c| {
        c.upstream_openai_url = Some(format!("{}/v1", up.url));
        c.upstream_anthropic_url = Some(up.url.clone());
    })
    .await;
    let answer = post(&server.base, "/v1/chat/completions", "reset", &chat(false)).await;
    assert_eq!(answer.status(), 502);
    let body: Value = answer.json().await.unwrap();
    assert!(body["error"]["message"].is_string(), "{body}");
    let answer = post(&server.base, "/v1/messages", "reset", &messages(true)).await;
    assert_eq!(answer.status(), 502);
    let body: Value = answer.json().await.unwrap();
    assert_eq!(body["type"], "error", "{body}");
    // Counted as failed, recorded with the reason, nothing left in flight.
    let metrics = metrics_of(&server.base).await;
    for provider in ["openai", "anthropic"] {
        assert!(
            metrics.contains(&format!(
                "cairn_proxy_exchanges_total{{outcome=\"failed\",provider=\"{provider}\"}} 1"
            )),
            "{metrics}"
        );
        assert!(metrics.contains(&format!(
            "cairn_proxy_in_flight{{provider=\"{provider}\"}} 0"
        )));
        assert!(
            faults_counted(&server.base, provider, "unreachable", 1).await,
            "{metrics}"
        );
    }
    let listed: Value = reqwest::get(format!("{}/v1/exchanges", server.base))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    for x in listed["exchanges"].as_array().unwrap() {
        assert_eq!(x["status"], 502, "{x}");
        assert!(
            x["outcome"].as_str().unwrap().starts_with("failed: "),
            "{x}"
        );
    }
}

#[tokio::test]
async fn rate_limits_and_overload_pass_through_without_a_retry() {
    let up = upstream();
    let server = serve(|c| {
        c.upstream_openai_url = Some(format!("{}/v1", up.url));
        c.upstream_anthropic_url = Some(up.url.clone());
    })
    .await;
    for (path, scenario, body, status, kind) in [
        (
            "/v1/chat/completions",
            "status_429",
            chat(false),
            429,
            "rate_limit_error",
        ),
        (
            "/v1/messages",
            "status_529",
            messages(true),
            529,
            "overloaded_error",
        ),
    ] {
        let answer = post(&server.base, path, scenario, &body).await;
        assert_eq!(answer.status(), status, "{path}");
        assert_eq!(answer.headers()["retry-after"], "7", "{path}");
        let text = answer.text().await.unwrap();
        assert!(text.contains(kind), "{path}: {text}");
    }
    let sent = recorded(&reqwest::Client::new(), &up).await;
    assert_eq!(
        sent.len(),
        2,
        "one upstream request each: Cairn retries nothing"
    );
    assert!(faults_counted(&server.base, "openai", "rate_limited", 1).await);
    assert!(faults_counted(&server.base, "anthropic", "overloaded", 1).await);
}

#[tokio::test]
async fn a_stalled_stream_ends_with_an_error_after_the_idle_limit() {
    let up = upstream();
    let server = serve(|c| {
        c.upstream_openai_url = Some(format!("{}/v1", up.url));
        c.proxy_idle_secs = 1;
    })
    .await;
    let started = Instant::now();
    let answer = post(&server.base, "/v1/chat/completions", "stall", &chat(true)).await;
    assert_eq!(answer.status(), 200);
    let read = answer.text().await;
    let took = started.elapsed();
    assert!(
        read.is_err(),
        "a stalled stream must not end as if complete"
    );
    assert!(
        took < Duration::from_secs(6),
        "ended after the 1 s idle limit, not the upstream's 8 s stall: {took:?}"
    );
    assert!(faults_counted(&server.base, "openai", "stalled", 1).await);
}

#[tokio::test]
async fn a_malformed_event_passes_on_and_the_stream_completes() {
    let up = upstream();
    let server = serve(|c| c.upstream_anthropic_url = Some(up.url.clone())).await;
    let answer = post(&server.base, "/v1/messages", "malformed", &messages(true)).await;
    assert_eq!(answer.status(), 200);
    let text = answer.text().await.expect("the stream ends cleanly");
    assert!(text.contains("data: {not json"), "{text}");
    assert!(text.contains("message_stop"), "{text}");
}

#[tokio::test]
async fn a_compressed_answer_reaches_the_client_decoded() {
    let up = upstream();
    let server = serve(|c| c.upstream_openai_url = Some(format!("{}/v1", up.url))).await;
    let answer = reqwest::Client::new()
        .post(format!("{}/v1/chat/completions", server.base))
        .header("authorization", "Bearer sk-test")
        .header("accept-encoding", "identity")
        .header("x-test-scenario", "gzip")
        .json(&chat(false))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);
    assert!(answer.headers().get("content-encoding").is_none());
    let body: Value = answer.json().await.expect("plain JSON");
    assert_eq!(body["object"], "chat.completion", "{body}");
}

#[tokio::test]
async fn an_answer_larger_than_cairn_holds_is_a_502() {
    let up = upstream();
    let server = serve(|c| {
        c.upstream_openai_url = Some(format!("{}/v1", up.url));
        c.max_json_bytes = 1 << 20;
    })
    .await;
    let answer = post(&server.base, "/v1/chat/completions", "huge", &chat(false)).await;
    assert_eq!(answer.status(), 502);
    let body: Value = answer.json().await.unwrap();
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("larger"),
        "{body}"
    );
    assert!(faults_counted(&server.base, "openai", "too_large", 1).await);
}

#[tokio::test]
async fn a_client_that_goes_away_mid_stream_cancels_the_upstream_request() {
    let up = upstream();
    let server = serve(|c| c.upstream_openai_url = Some(format!("{}/v1", up.url))).await;
    let mut answer = post(&server.base, "/v1/chat/completions", "slow", &chat(true)).await;
    assert_eq!(answer.status(), 200);
    // The first bytes arrive, then the client leaves.
    let first = answer.chunk().await.unwrap();
    assert!(first.is_some());
    drop(answer);
    let http = reqwest::Client::new();
    wait_cancelled(&http, &up).await;
    // The exchange ended as the client's leaving; nothing is left in flight.
    let deadline = Instant::now() + Duration::from_secs(8);
    loop {
        let metrics = metrics_of(&server.base).await;
        let gone = "cairn_proxy_exchanges_total{outcome=\"client_gone\",provider=\"openai\"} 1";
        if metrics.contains(gone)
            && metrics.contains("cairn_proxy_in_flight{provider=\"openai\"} 0")
        {
            break;
        }
        assert!(Instant::now() < deadline, "{metrics}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn a_stream_cut_during_a_hidden_round_is_cut_for_the_client_and_the_pieces_stay() {
    let up = upstream();
    let server = serve(|c| c.upstream_openai_url = Some(format!("{}/v1", up.url))).await;
    let big: String = (1..=3000).map(|i| format!("row {i}\n")).collect();
    let body = json!({"model": "gpt-4o", "stream": true,
        "tools": [{"type": "function", "function": {"name": "ls", "parameters": {"type": "object"}}}],
        "messages": [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": big}]});
    let answer = post(&server.base, "/v1/chat/completions", "cut_round", &body).await;
    assert_eq!(answer.status(), 200);
    assert!(
        answer.text().await.is_err(),
        "the retrieval round's cut reaches the client as a cut"
    );
    let sent = recorded(&reqwest::Client::new(), &up).await;
    assert_eq!(sent.len(), 2, "the first round and the retrieval round");
    assert!(faults_counted(&server.base, "openai", "cut", 1).await);
    // What was offloaded before the fault is still there, byte for byte.
    let http = reqwest::Client::new();
    let listed: Value = http
        .get(format!("{}/v1/memories", server.base))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = listed["memories"][0]["id"].as_str().unwrap();
    let content = content_of(&server, id).await;
    assert_eq!(content, big);
}

/// Waits (8 s at most) until the stand-in saw its last request's reader go.
async fn wait_cancelled(http: &reqwest::Client, up: &super::Upstream) {
    let deadline = Instant::now() + Duration::from_secs(8);
    loop {
        let sent = recorded(http, up).await;
        if sent.last().is_some_and(|r| r["cancelled"] == true) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the upstream kept streaming to nobody: {sent:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Bytes the stand-in has handed to its socket in the `flood` scenario so far.
async fn flooded(http: &reqwest::Client, up: &super::Upstream) -> u64 {
    let sent = recorded(http, up).await;
    sent.last().unwrap()["flooded"].as_u64().unwrap()
}

#[tokio::test]
async fn a_slow_reader_holds_the_upstream_back_instead_of_filling_cairns_memory() {
    let up = upstream();
    let server = serve(|c| c.upstream_openai_url = Some(format!("{}/v1", up.url))).await;
    let mut answer = post(&server.base, "/v1/chat/completions", "flood", &chat(true)).await;
    assert_eq!(answer.status(), 200);
    assert!(answer.chunk().await.unwrap().is_some());
    // The client stops reading. The upstream offers 1 GiB as fast as it is
    // taken: what it gets to send is the sockets' buffers and Cairn's 64
    // events in hand (13.8 MB when measured here; a socket's buffer may grow
    // to 32 MiB on this kernel), then it waits.
    let http = reqwest::Client::new();
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let before = flooded(&http, &up).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let held = flooded(&http, &up).await;
    assert!(
        held < 64 << 20,
        "{held} bytes left the upstream for a reader that reads nothing"
    );
    assert!(
        held - before < 1 << 20,
        "still flowing to nobody: {before} then {held} bytes"
    );
    // Reading again lets it flow again.
    let mut read = 0usize;
    while read < 64 << 20 {
        read += answer.chunk().await.unwrap().unwrap().len();
    }
    let flowing = flooded(&http, &up).await;
    assert!(flowing > held, "{held} then {flowing}");
    // And leaving cancels it.
    drop(answer);
    wait_cancelled(&http, &up).await;
}
