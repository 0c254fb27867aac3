//! The LLM proxy driven by the official `openai` and `anthropic` Python SDKs
//! (tests/proxy/client_check.py) against a stand-in upstream that records
//! every request (tests/proxy/upstream.py): offload, retrieval rounds,
//! streams, byte-stable prefixes, mixed turns, errors, budgets, both key
//! modes, and no key in the logs. Without python3 and the SDKs the SDK test
//! says it was skipped, except under CI (`CI` set), where it fails.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};

use cairn::config::Config;
use serde_json::Value;

#[path = "proxy/faults.rs"]
mod faults;
#[path = "common/in_process.rs"]
mod in_process;
#[path = "proxy/ledger.rs"]
mod ledger;
#[path = "proxy/limits.rs"]
mod limits;
#[path = "common/served.rs"]
mod served;
#[path = "proxy/shutdown.rs"]
mod shutdown;

const SDKS: &str =
    "import openai, anthropic; assert openai.__version__.startswith('3.'), openai.__version__";

/// The stand-in provider, stopped when dropped.
struct Upstream {
    child: Child,
    url: String,
}

impl Drop for Upstream {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn upstream() -> Upstream {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/proxy/upstream.py");
    let mut child = Command::new("python3")
        .arg(script)
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3 runs the stand-in upstream");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let port: u16 = line.trim().parse().expect("the stand-in prints its port");
    Upstream {
        child,
        url: format!("http://127.0.0.1:{port}"),
    }
}

/// A Cairn server on a random loopback port.
type Server = in_process::Listening;

async fn serve(configure: impl FnOnce(&mut Config)) -> Server {
    in_process::listen(configure).await
}

/// Everything this test binary logs, at debug level, kept for the key search.
fn captured_logs() -> Arc<Mutex<Vec<u8>>> {
    static LOGS: OnceLock<Arc<Mutex<Vec<u8>>>> = OnceLock::new();
    LOGS.get_or_init(|| {
        let logs = Arc::new(Mutex::new(Vec::new()));
        let sink = logs.clone();
        let writer = move || Capture(sink.clone());
        let _ = tracing_subscriber::fmt()
            .with_env_filter("debug")
            .with_writer(writer)
            .try_init();
        logs
    })
    .clone()
}

struct Capture(Arc<Mutex<Vec<u8>>>);

impl Write for Capture {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn have_sdks() -> bool {
    let found = Command::new("python3")
        .args(["-c", SDKS])
        .status()
        .is_ok_and(|s| s.success());
    if !found {
        assert!(
            std::env::var_os("CI").is_none(),
            "python3 with openai 3.x and anthropic is missing, and CI must run this test (pip install openai==3.57.0 anthropic==2.13.0)"
        );
        eprintln!("skipped: python3 with the openai and anthropic SDKs is not installed");
    }
    found
}

async fn client_check(mode: &str, cairn: &Server, upstream: &Upstream) -> Value {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/proxy/client_check.py");
    let output = tokio::process::Command::new("python3")
        .args([script, mode, &cairn.base, &upstream.url])
        .output()
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "client_check.py {mode} failed:\n{stderr}"
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    serde_json::from_str(stdout.lines().last().unwrap_or("")).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn official_sdks_get_offload_retrieval_streams_and_both_key_modes() {
    if !have_sdks() {
        return;
    }
    let logs = captured_logs();
    let up = upstream();
    let passthrough = serve(|c| {
        c.api_keys = Some("alpha-key-0001:alpha,tight-key-0002:tight".into());
        c.budgets = Some("tight:tokens=10".into());
        c.upstream_openai_url = Some(format!("{}/v1", up.url));
        c.upstream_anthropic_url = Some(up.url.clone());
    })
    .await;
    let summary = client_check("passthrough", &passthrough, &up).await;
    assert_eq!(summary["ok"], true);
    assert!(
        summary["chat_prefix_bytes"].as_u64().unwrap() > 500,
        "{summary}"
    );

    let sidecar = serve(|c| {
        c.api_keys = Some("side-key-0003:side".into());
        c.upstream_openai_url = Some(format!("{}/v1", up.url));
        c.upstream_anthropic_url = Some(up.url.clone());
        c.upstream_openai_key = Some("sk-sidecar-openai-secret-9".parse().unwrap());
        c.upstream_anthropic_key = Some("sk-ant-sidecar-secret-9".parse().unwrap());
    })
    .await;
    client_check("sidecar", &sidecar, &up).await;

    // What the proxy stored comes back byte for byte, and the savings show in stats.
    let http = reqwest::Client::new();
    let stats: Value = http
        .get(format!("{}/v1/stats", passthrough.base))
        .bearer_auth("alpha-key-0001")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(
        stats["tokens_saved"]["proxy"].as_u64().unwrap() > 10_000,
        "{stats}"
    );
    assert!(
        stats["prompt_cache"]["read_tokens"].as_u64().unwrap() > 0,
        "{stats}"
    );
    let metrics = metrics_of(&passthrough.base).await;
    for name in [
        "cairn_proxy_requests_total{endpoint=\"chat_completions\",provider=\"openai\",status=\"200\"}",
        "cairn_proxy_retrieval_rounds_total{provider=\"anthropic\"}",
        "cairn_proxy_cache_tokens_total{kind=\"write\",provider=\"anthropic\"}",
        "cairn_proxy_added_latency_seconds_bucket",
    ] {
        assert!(metrics.contains(name), "{name} missing from /metrics");
    }

    // No key, in either direction, in the logs or the metrics.
    let logged = String::from_utf8_lossy(&logs.lock().unwrap()).into_owned();
    assert!(
        logged.contains("http.request"),
        "the log capture saw nothing"
    );
    for key in [
        "sk-test-PASSTHROUGH-openai-0001",
        "sk-ant-test-PASSTHROUGH-0001",
        "sk-sidecar-openai-secret-9",
        "sk-ant-sidecar-secret-9",
        "alpha-key-0001",
        "side-key-0003",
    ] {
        assert!(!logged.contains(key), "{key} appears in the log");
        assert!(!metrics.contains(key), "{key} appears in the metrics");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn official_sdks_retry_a_namespace_over_its_rate_and_get_through() {
    if !have_sdks() {
        return;
    }
    let up = upstream();
    let limited = serve(|c| {
        c.api_keys = Some("alpha-key-0001:alpha".into());
        c.upstream_openai_url = Some(format!("{}/v1", up.url));
        c.upstream_anthropic_url = Some(up.url.clone());
        c.limit_rate = 1;
        c.limit_burst = 1;
    })
    .await;
    let summary = client_check("limited", &limited, &up).await;
    assert_eq!(summary["ok"], true);
}

#[tokio::test]
async fn a_provider_without_upstream_answers_404_naming_its_variable() {
    let server = serve(|_| {}).await;
    let http = reqwest::Client::new();
    let answer = http
        .post(format!("{}/v1/chat/completions", server.base))
        .json(&serde_json::json!({"model": "gpt-4o", "messages": []}))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 404);
    let body: Value = answer.json().await.unwrap();
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("CAIRN_UPSTREAM_OPENAI_URL"),
        "{body}"
    );
    let answer = http
        .post(format!("{}/v1/messages", server.base))
        .json(&serde_json::json!({"model": "claude", "max_tokens": 5, "messages": []}))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 404);
    let body: Value = answer.json().await.unwrap();
    assert_eq!(body["type"], "error");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("CAIRN_UPSTREAM_ANTHROPIC_URL")
    );
}

#[tokio::test]
async fn an_unreachable_upstream_is_a_502_in_the_providers_shape() {
    // A port that was free a moment ago: nothing listens there.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let server = serve(|c| {
        c.upstream_openai_url = Some(format!("http://127.0.0.1:{closed}/v1"));
        c.upstream_anthropic_url = Some(format!("http://127.0.0.1:{closed}"));
    })
    .await;
    let http = reqwest::Client::new();
    let answer = http
        .post(format!("{}/v1/chat/completions", server.base))
        .json(&serde_json::json!({"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 502);
    let body: Value = answer.json().await.unwrap();
    assert_eq!(body["error"]["code"], "upstream_unreachable", "{body}");
    let answer = http
        .post(format!("{}/v1/messages", server.base))
        .json(&serde_json::json!({"model": "claude", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 502);
    let body: Value = answer.json().await.unwrap();
    assert_eq!(body["error"]["type"], "api_error", "{body}");
    // A body that is not JSON is the client's 400, in the provider's shape.
    let answer = http
        .post(format!("{}/v1/messages", server.base))
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 400);
    let body: Value = answer.json().await.unwrap();
    assert_eq!(body["error"]["type"], "invalid_request_error", "{body}");
}

#[tokio::test]
async fn an_upstream_that_never_answers_is_a_504() {
    // Accepts connections (the kernel's backlog) and never answers.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    let server = serve(|c| {
        c.upstream_openai_url = Some(format!("http://127.0.0.1:{port}/v1"));
        c.proxy_timeout_secs = 1;
    })
    .await;
    let answer = reqwest::Client::new()
        .post(format!("{}/v1/chat/completions", server.base))
        .json(&serde_json::json!({"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 504);
    let body: Value = answer.json().await.unwrap();
    assert_eq!(body["error"]["code"], "upstream_timeout", "{body}");
    drop(silent);
}

#[tokio::test]
async fn x_cairn_thread_links_the_offloaded_pieces() {
    if Command::new("python3").arg("--version").status().is_err() {
        return;
    }
    let up = upstream();
    let server = serve(|c| c.upstream_openai_url = Some(format!("{}/v1", up.url))).await;
    let http = reqwest::Client::new();
    let big: String = (0..400)
        .map(|i| format!("thread test line {i}\n"))
        .collect();
    let answer = http
        .post(format!("{}/v1/chat/completions", server.base))
        .header("x-cairn-thread", "run-42")
        .json(&serde_json::json!({"model": "gpt-4o", "messages": [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": big}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);
    assert_eq!(answer.headers()["x-cairn-offloaded"], "1");
    let listed: Value = http
        .get(format!("{}/v1/memories?thread=run-42", server.base))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let memories = listed["memories"].as_array().unwrap();
    assert_eq!(memories.len(), 1, "{listed}");
    assert_eq!(memories[0]["subtype"], "ls");
    let content = content_of(&server, memories[0]["id"].as_str().unwrap()).await;
    assert_eq!(content, big, "the offloaded piece comes back byte for byte");
}

/// The server's `/metrics` text.
async fn metrics_of(base: &str) -> String {
    reqwest::get(format!("{base}/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}

/// A stored memory's whole content, as text.
async fn content_of(server: &Server, id: &str) -> String {
    reqwest::get(format!("{}/v1/memories/{id}/content", server.base))
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}

/// The stand-in's record of the requests it got since the last reset.
async fn recorded(http: &reqwest::Client, up: &Upstream) -> Vec<Value> {
    let all: Value = http
        .get(format!("{}/_requests", up.url))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    all.as_array().unwrap().clone()
}

/// Lines `seq 1 n` prints, with one line to find planted at `planted`.
fn seq_output(n: usize, planted: usize) -> String {
    (1..=n)
        .map(|i| {
            if i == planted {
                "PLANTED-LINE the needle\n".to_owned()
            } else {
                format!("{i}\n")
            }
        })
        .collect()
}

#[tokio::test]
async fn a_body_goes_upstream_with_the_clients_own_bytes() {
    if Command::new("python3").arg("--version").status().is_err() {
        return;
    }
    let up = upstream();
    let server = serve(|c| c.upstream_openai_url = Some(format!("{}/v1", up.url))).await;
    let http = reqwest::Client::new();
    // Unusual key order, spacing, escapes and number forms.
    let unchanged = "{ \"stream\" : false,\n \"model\":\"gpt-4o\", \"messages\": [ {\"content\":\"caf\\u00e9\",  \"role\":\"user\"} ],\n \"temperature\": 1e0 }";
    let answer = http
        .post(format!("{}/v1/chat/completions", server.base))
        .header("content-type", "application/json")
        .body(unchanged)
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);
    let seen = recorded(&http, &up).await;
    assert_eq!(seen.len(), 1);
    assert_eq!(
        seen[0]["body"], unchanged,
        "an unchanged body goes byte for byte"
    );

    let big = seq_output(3000, 1234);
    let changed = format!(
        "{{ \"stream\" : false,\n \"model\":\"gpt-4o\", \"messages\": [ {{\"content\":\"caf\\u00e9\",  \"role\":\"user\"}}, \
         {{\"tool_calls\": [ {{\"type\":\"function\", \"id\":\"c1\", \"function\": {{\"name\":\"sh\", \"arguments\":\"{{}}\"}}}} ], \"role\":\"assistant\", \"content\": null}}, \
         {{\"tool_call_id\":\"c1\", \"role\":\"tool\", \"content\": {}}} ],\n \"temperature\": 1e0 }}",
        serde_json::to_string(&big).unwrap()
    );
    let answer = http
        .post(format!("{}/v1/chat/completions", server.base))
        .header("content-type", "application/json")
        .body(changed)
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);
    assert_eq!(answer.headers()["x-cairn-offloaded"], "1");
    let seen = recorded(&http, &up).await;
    let first = seen[1]["body"].as_str().unwrap();
    assert!(
        first.starts_with(
            "{\"stream\":false,\"model\":\"gpt-4o\",\"messages\":[{\"content\":\"caf\\u00e9\",  \"role\":\"user\"},\
             {\"tool_calls\": [ {\"type\":\"function\", \"id\":\"c1\", \"function\": {\"name\":\"sh\", \"arguments\":\"{}\"}} ], \"role\":\"assistant\", \"content\": null},\
             {\"tool_call_id\":\"c1\",\"role\":\"tool\",\"content\":\"[cairn: offloaded"
        ),
        "the client's key order and untouched bytes stay: {}",
        &first[..first.len().min(600)]
    );
    assert!(
        first.contains("],\"temperature\":1e0,\"tools\":[{"),
        "{first}"
    );
    // The retrieval round appends to the bytes already sent.
    let second = seen[2]["body"].as_str().unwrap();
    let sent_messages = &first[..first.find("],\"temperature\"").unwrap()];
    assert!(
        second.starts_with(sent_messages),
        "round 2 keeps round 1's bytes"
    );
}

#[tokio::test]
async fn claude_codes_own_request_is_offloaded_and_its_thinking_stays_valid() {
    if Command::new("python3").arg("--version").status().is_err() {
        return;
    }
    let up = upstream();
    let server = serve(|c| c.upstream_anthropic_url = Some(up.url.clone())).await;
    let http = reqwest::Client::new();
    // A request Claude Code 2.1 sent on its default model (mid-conversation
    // system message, adaptive thinking, context management, betas), its
    // Bash result replaced by a large output with one planted line.
    let captured = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/clients/captured/claude-default-2.json"
    );
    let mut body: Value = serde_json::from_slice(&std::fs::read(captured).unwrap()).unwrap();
    assert_eq!(body["messages"][1]["role"], "system");
    body["messages"][3]["content"][0]["content"] = Value::String(seq_output(3000, 5));
    for stream in [false, true] {
        body["stream"] = Value::Bool(stream);
        let written = serde_json::to_string_pretty(&body).unwrap();
        let answer = http
            .post(format!("{}/v1/messages?beta=true", server.base))
            .header("content-type", "application/json")
            .header("x-api-key", "sk-ant-test")
            .header("anthropic-version", "2023-06-01")
            .header(
                "anthropic-beta",
                "mid-conversation-tool-changes-2026-07-01,context-management-2025-06-27",
            )
            .header("x-test-scenario", "reasoning")
            .body(written.clone())
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 200, "stream {stream}");
        assert!(
            answer.headers().get("x-cairn-skipped").is_none(),
            "{:?}",
            answer.headers().get("x-cairn-skipped")
        );
        assert_eq!(answer.headers()["x-cairn-offloaded"], "1");
        let text = answer.text().await.unwrap();
        // The stand-in fetched lines 3-7 through Cairn and quoted them.
        assert!(text.contains("PLANTED-LINE the needle"), "{text}");
        assert!(
            !text.contains("memory_fetch"),
            "Cairn's call stays hidden: {text}"
        );
        let seen = recorded(&http, &up).await;
        let first: Value =
            serde_json::from_str(seen[seen.len() - 2]["body"].as_str().unwrap()).unwrap();
        let sent = seen[seen.len() - 2]["body"].as_str().unwrap();
        let system_bytes = serde_json::to_string_pretty(&body["messages"][1]).unwrap();
        let system_bytes = system_bytes.replace('\n', "\n    ");
        assert!(
            sent.contains(&system_bytes),
            "the system message goes as written"
        );
        let tools: Vec<&str> = first["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            tools[tools.len() - 3..],
            ["memory_fetch", "memory_grep", "memory_search"]
        );
        // The client's history, with what it received, is accepted next turn:
        // thinking blocks keep the signatures the provider gave.
        let content: Vec<Value> = if stream {
            let mut blocks: Vec<Value> = Vec::new();
            for line in text.lines().filter_map(|l| l.strip_prefix("data: ")) {
                let event: Value = serde_json::from_str(line).unwrap();
                match event["type"].as_str().unwrap() {
                    "content_block_start" => blocks.push(event["content_block"].clone()),
                    "content_block_delta" => {
                        let i = event["index"].as_u64().unwrap() as usize;
                        let d = &event["delta"];
                        for (field, key) in [
                            ("thinking", "thinking"),
                            ("text", "text"),
                            ("signature", "signature"),
                        ] {
                            if let Some(piece) = d[key].as_str() {
                                let now = blocks[i][field].as_str().unwrap_or("").to_owned();
                                blocks[i][field] = Value::String(if key == "signature" {
                                    piece.to_owned()
                                } else {
                                    now + piece
                                });
                            }
                        }
                    }
                    _ => {}
                }
            }
            blocks
        } else {
            let answer: Value = serde_json::from_str(&text).unwrap();
            answer["content"].as_array().unwrap().clone()
        };
        assert_eq!(content[0]["type"], "thinking", "{content:?}");
        let mut next = body.clone();
        let messages = next["messages"].as_array_mut().unwrap();
        messages.push(serde_json::json!({"role": "assistant", "content": content}));
        messages.push(serde_json::json!({"role": "user", "content": "thanks"}));
        next["stream"] = Value::Bool(false);
        let follow_up = http
            .post(format!("{}/v1/messages", server.base))
            .header("x-api-key", "sk-ant-test")
            .json(&next)
            .send()
            .await
            .unwrap();
        assert_eq!(
            follow_up.status(),
            200,
            "{}",
            follow_up.text().await.unwrap()
        );
    }
}

#[tokio::test]
async fn a_reasoning_item_before_a_hidden_call_never_reaches_the_client() {
    if Command::new("python3").arg("--version").status().is_err() {
        return;
    }
    let up = upstream();
    let server = serve(|c| c.upstream_openai_url = Some(format!("{}/v1", up.url))).await;
    let http = reqwest::Client::new();
    let big = seq_output(3000, 5);
    for stream in [false, true] {
        let input = serde_json::json!([
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "run it"}]},
            {"type": "function_call", "call_id": "c1", "name": "exec_command", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": big}]);
        let request = serde_json::json!({"model": "gpt-5", "stream": stream, "store": false,
            "tools": [{"type": "function", "name": "exec_command", "parameters": {"type": "object"}}],
            "input": input});
        let answer = http
            .post(format!("{}/v1/responses", server.base))
            .header("authorization", "Bearer sk-test")
            .header("x-test-scenario", "reasoning")
            .json(&request)
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 200);
        let text = answer.text().await.unwrap();
        let output: Value = if stream {
            let done = text
                .lines()
                .filter_map(|l| l.strip_prefix("data: "))
                .map(|l| serde_json::from_str::<Value>(l).unwrap())
                .find(|e| e["type"] == "response.completed")
                .expect("the stream completes");
            assert!(
                !text.contains("memory_fetch"),
                "no echo of Cairn's tools: {text}"
            );
            done["response"]["output"].clone()
        } else {
            let answer: Value = serde_json::from_str(&text).unwrap();
            assert!(
                answer["tools"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .all(|t| t["name"] == "exec_command")
            );
            answer["output"].clone()
        };
        let kinds: Vec<&str> = output
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["type"].as_str().unwrap())
            .collect();
        assert_eq!(kinds, ["reasoning", "message"], "stream {stream}: {output}");
        assert!(
            output[1]["content"][0]["text"]
                .as_str()
                .unwrap()
                .contains("PLANTED-LINE")
        );
        // The next turn sends the history back: the provider accepts it.
        let mut history = input.as_array().unwrap().clone();
        history.extend(output.as_array().unwrap().iter().cloned());
        history.push(serde_json::json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "and now?"}]}));
        let mut next = request.clone();
        next["input"] = Value::Array(history);
        next["stream"] = Value::Bool(false);
        let follow_up = http
            .post(format!("{}/v1/responses", server.base))
            .header("authorization", "Bearer sk-test")
            .json(&next)
            .send()
            .await
            .unwrap();
        assert_eq!(
            follow_up.status(),
            200,
            "{}",
            follow_up.text().await.unwrap()
        );
    }
}

/// A subscription (OAuth) bearer token and its beta header, as Claude Code
/// sends them when logged in, pass through untouched in pass-through mode,
/// and the request is still offloaded.
#[tokio::test]
async fn an_oauth_bearer_token_passes_through_untouched() {
    if Command::new("python3").arg("--version").status().is_err() {
        return;
    }
    let up = upstream();
    let server = serve(|c| c.upstream_anthropic_url = Some(up.url.clone())).await;
    let http = reqwest::Client::new();
    let token = "Bearer sk-ant-oat01-abcdefghijklmnopqrstuvwxyz0123456789";
    let beta = "oauth-2025-04-20,claude-code-20250219,interleaved-thinking-2025-05-14";
    let answer = http
        .post(format!("{}/v1/messages?beta=true", server.base))
        .header("authorization", token)
        .header("anthropic-beta", beta)
        .header("anthropic-version", "2023-06-01")
        .json(&serde_json::json!({"model": "claude-sonnet-4-6", "max_tokens": 64, "messages": [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "seq 1 2000"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": seq_output(2000, 1234)}]}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);
    assert_eq!(answer.headers()["x-cairn-offloaded"], "1");
    let sent = recorded(&http, &up).await;
    let first = sent
        .iter()
        .find(|r| r["path"].as_str().unwrap().starts_with("/v1/messages"))
        .expect("the request went upstream");
    assert_eq!(first["path"], "/v1/messages?beta=true");
    assert_eq!(first["headers"]["authorization"], token);
    assert_eq!(first["headers"]["anthropic-beta"], beta);
    assert!(first["headers"].get("x-api-key").is_none(), "{first}");
}

/// A retrieval round the provider refuses ends the client's stream with the
/// API's own error event carrying the provider's message, not a cut stream
/// (which clients retry as a network fault).
#[tokio::test]
async fn a_refused_retrieval_round_ends_the_stream_with_the_apis_error_event() {
    if Command::new("python3").arg("--version").status().is_err() {
        return;
    }
    let up = upstream();
    let server = serve(|c| {
        c.upstream_openai_url = Some(format!("{}/v1", up.url));
        c.upstream_anthropic_url = Some(up.url.clone());
    })
    .await;
    let http = reqwest::Client::new();
    let big = seq_output(3000, 5);
    let tool = |shape: &str| match shape {
        "chat" => {
            serde_json::json!([{"type": "function", "function": {"name": "ls", "parameters": {"type": "object"}}}])
        }
        "responses" => {
            serde_json::json!([{"type": "function", "name": "ls", "parameters": {"type": "object"}}])
        }
        _ => serde_json::json!([{"name": "ls", "input_schema": {"type": "object"}}]),
    };
    let cases = [
        (
            "/v1/chat/completions",
            serde_json::json!({"model": "gpt-4o", "stream": true, "tools": tool("chat"), "messages": [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": big}]}),
        ),
        (
            "/v1/responses",
            serde_json::json!({"model": "gpt-5", "stream": true, "tools": tool("responses"), "input": [
            {"role": "user", "content": "go"},
            {"type": "function_call", "call_id": "c1", "name": "ls", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": big}]}),
        ),
        (
            "/v1/messages",
            serde_json::json!({"model": "claude-sonnet-4-6", "max_tokens": 64, "stream": true, "tools": tool("messages"), "messages": [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "ls", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": big}]}]}),
        ),
    ];
    for (path, body) in cases {
        let answer = http
            .post(format!("{}{path}", server.base))
            .header("authorization", "Bearer sk-test")
            .header("x-api-key", "sk-ant-test")
            .header("x-test-scenario", "refuse_round")
            .json(&body)
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 200, "{path}");
        // The stream ends (no cut: reading it whole succeeds) with the error.
        let text = answer.text().await.expect("a stream that ends cleanly");
        let last: Value = text
            .lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .filter_map(|l| serde_json::from_str(l).ok())
            .next_back()
            .expect("events");
        let message = match path {
            "/v1/chat/completions" => &last["error"]["message"],
            "/v1/responses" => {
                assert_eq!(last["type"], "error", "{text}");
                &last["message"]
            }
            _ => {
                assert_eq!(last["type"], "error", "{text}");
                assert!(text.contains("event: error"), "{text}");
                &last["error"]["message"]
            }
        };
        assert!(
            message.as_str().unwrap_or("").contains("stand-in says 400"),
            "{path}: {text}"
        );
        assert!(!text.contains("memory_fetch"), "{path}: {text}");
    }
}
