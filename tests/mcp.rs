//! `POST /mcp`: the official MCP Python SDK client end to end, plus raw
//! JSON-RPC for authentication, tool errors and namespace isolation.
//!
//! The SDK test needs `python3` with the `mcp` package (`.ci/run` installs
//! it from PyPI); without it the test says it was skipped, except under CI
//! (`CI` set), where it fails.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

use serde_json::{Value, json};

#[path = "common/in_process.rs"]
mod in_process;

const ALPHA: &str = "alpha-key-0001";
const BETA: &str = "beta-key-0002";

/// A Cairn server with two namespaces on a random loopback port.
type Server = in_process::Listening;

async fn start_server() -> Server {
    in_process::listen(|config| {
        config.api_keys = Some(format!("{ALPHA}:alpha,{BETA}:beta"));
        config.jq_worker = Some(env!("CARGO_BIN_EXE_cairn").into());
    })
    .await
}

/// Whether python3 can import the MCP SDK; if not, panics under CI and
/// otherwise says the test is skipped.
fn have_python_sdk() -> bool {
    let found = Command::new("python3")
        .args([
            "-c",
            "from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client",
        ])
        .status()
        .is_ok_and(|s| s.success());
    if !found {
        assert!(
            std::env::var_os("CI").is_none(),
            "python3 with the `mcp` package (2.x) is missing, and CI must run this test (pip install mcp==2.3.0)"
        );
        eprintln!(
            "skipped: python3 with the `mcp` package (2.x) is not installed (pip install mcp==2.3.0)"
        );
    }
    found
}

/// One JSON-RPC request to `/mcp`; answers the HTTP status and the JSON body.
async fn rpc(server: &Server, key: Option<&str>, method: &str, params: Value) -> (u16, Value) {
    let mut request = reqwest::Client::new()
        .post(format!("{}/mcp", server.base))
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-06-18")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}));
    if let Some(key) = key {
        request = request.bearer_auth(key);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    let body = serde_json::from_str(&text).unwrap_or(Value::String(text));
    (status, body)
}

/// Calls a tool; answers its result object (`content`, `structuredContent`, `isError`).
async fn call(server: &Server, key: &str, tool: &str, arguments: Value) -> Value {
    let (status, body) = rpc(
        server,
        Some(key),
        "tools/call",
        json!({"name": tool, "arguments": arguments}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    body["result"].clone()
}

#[tokio::test]
async fn official_python_client_initializes_lists_puts_fetches_and_searches() {
    if !have_python_sdk() {
        return;
    }
    let server = start_server().await;
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/mcp/client_check.py");
    let url = format!("{}/mcp", server.base);
    let output = tokio::process::Command::new("python3")
        .args([script, &url, ALPHA])
        .output()
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "client_check.py failed:\n{stderr}");
    let seen: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        seen["fetched"],
        "line 349: build step 349 finished\nline 350: ERROR zanzibarquux failed to link\nline 351: build step 351 finished\n"
    );
    assert_eq!(seen["search_lines"], json!([350]));
    assert_eq!(seen["grep_lines"], json!([350]));

    // What the SDK stored is the REST API's memory too, in the key's namespace only.
    let id = seen["id"].as_str().unwrap();
    let client = reqwest::Client::new();
    let get = |key: &'static str| {
        client
            .get(format!("{}/v1/memories/{id}", server.base))
            .bearer_auth(key)
            .send()
    };
    let mine = get(ALPHA).await.unwrap();
    assert_eq!(mine.status(), 200);
    let mine: Value = mine.json().await.unwrap();
    assert_eq!(mine["type"], "TOOL_OUTPUT");
    assert_eq!(mine["subtype"], "make");
    assert_eq!(mine["lines"], 500);
    assert_eq!(get(BETA).await.unwrap().status(), 404);
}

#[tokio::test]
async fn mcp_takes_the_same_bearer_keys_as_rest() {
    let server = start_server().await;
    let init = json!({
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"}
    });
    let (status, body) = rpc(&server, None, "initialize", init.clone()).await;
    assert_eq!(status, 401, "{body}");
    assert_eq!(body["error"]["code"], "unauthorized", "{body}");
    let (status, _) = rpc(
        &server,
        Some("not-a-configured-key"),
        "initialize",
        init.clone(),
    )
    .await;
    assert_eq!(status, 401);

    let (status, body) = rpc(&server, Some(ALPHA), "initialize", init).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["result"]["serverInfo"]["name"], "cairn", "{body}");
    assert!(
        body["result"]["instructions"]
            .as_str()
            .unwrap()
            .contains("memory_fetch")
    );
    let (_, tools) = rpc(&server, Some(ALPHA), "tools/list", json!({})).await;
    let fetch = tools["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "memory_fetch")
        .unwrap()
        .clone();
    let description = fetch["description"].as_str().unwrap();
    assert!(description.contains("next"), "{description}");
    assert!(description.contains("2,000 lines"), "{description}");
    let properties = &fetch["inputSchema"]["properties"];
    for name in [
        "memory_id",
        "uri",
        "line_start",
        "line_end",
        "byte_offset",
        "byte_length",
        "max_tokens",
    ] {
        assert!(properties.get(name).is_some(), "{name} missing: {fetch}");
    }
}

#[tokio::test]
async fn tool_errors_carry_the_rest_error_and_its_guardrails() {
    let server = start_server().await;
    let content: String = (1..=3000).map(|n| format!("row {n}\n")).collect();
    let put = call(&server, ALPHA, "memory_put", json!({"content": content})).await;
    assert_eq!(put["isError"], false, "{put}");
    let id = put["structuredContent"]["id"].as_str().unwrap().to_owned();

    let too_long = call(
        &server,
        ALPHA,
        "memory_fetch",
        json!({"memory_id": id, "line_start": 1, "line_end": 2500}),
    )
    .await;
    assert_eq!(too_long["isError"], true, "{too_long}");
    assert_eq!(
        too_long["structuredContent"]["error"]["code"],
        "slice_too_large"
    );
    assert_eq!(too_long["structuredContent"]["error"]["max"], 2000);

    let bytes = call(
        &server,
        ALPHA,
        "memory_fetch",
        json!({"memory_id": id, "byte_offset": 4, "byte_length": 7}),
    )
    .await;
    assert_eq!(bytes["structuredContent"]["text"], "1\nrow 2");

    let both = call(
        &server,
        ALPHA,
        "memory_fetch",
        json!({"memory_id": id, "line_start": 1, "byte_offset": 0}),
    )
    .await;
    assert_eq!(both["isError"], true);
    assert_eq!(
        both["structuredContent"]["error"]["code"],
        "invalid_request"
    );

    let neither = call(&server, ALPHA, "memory_fetch", json!({})).await;
    assert_eq!(neither["isError"], true);

    let bad_id = call(&server, ALPHA, "memory_fetch", json!({"memory_id": "xyz"})).await;
    assert_eq!(bad_id["structuredContent"]["error"]["code"], "invalid_id");

    let bad_query = call(
        &server,
        ALPHA,
        "memory_search",
        json!({"query": "\"unclosed"}),
    )
    .await;
    assert_eq!(bad_query["isError"], true, "{bad_query}");

    // A misspelt argument is refused, not ignored.
    let (status, body) = rpc(
        &server,
        Some(ALPHA),
        "tools/call",
        json!({"name": "memory_fetch", "arguments": {"memory_id": id, "line_from": 3}}),
    )
    .await;
    assert_eq!(status, 200);
    assert!(
        body["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("line_from"))
            || body["result"]["isError"] == true,
        "{body}"
    );
}

#[tokio::test]
async fn one_namespace_never_sees_another_through_mcp() {
    let server = start_server().await;
    let put = call(
        &server,
        ALPHA,
        "memory_put",
        json!({"content": "alpha secret plan marmalade\n", "title": "plan"}),
    )
    .await;
    let id = put["structuredContent"]["id"].as_str().unwrap().to_owned();

    let fetched = call(&server, BETA, "memory_fetch", json!({"memory_id": id})).await;
    assert_eq!(fetched["isError"], true);
    assert_eq!(fetched["structuredContent"]["error"]["code"], "not_found");
    let by_uri = call(
        &server,
        BETA,
        "memory_fetch",
        json!({"uri": format!("mem://{id}")}),
    )
    .await;
    assert_eq!(by_uri["structuredContent"]["error"]["code"], "not_found");

    // Same content put by beta: a new memory to beta, never "deduplicated".
    let again = call(
        &server,
        BETA,
        "memory_put",
        json!({"content": "alpha secret plan marmalade\n"}),
    )
    .await;
    assert_eq!(again["structuredContent"]["deduplicated"], false);

    let mut alpha_hits = Value::Null;
    for _ in 0..100 {
        let found = call(
            &server,
            ALPHA,
            "memory_search",
            json!({"query": "marmalade"}),
        )
        .await;
        alpha_hits = found["structuredContent"]["results"].clone();
        if alpha_hits.as_array().is_some_and(|r| !r.is_empty()) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(alpha_hits.as_array().unwrap().len(), 1, "{alpha_hits}");
    assert_eq!(alpha_hits[0]["id"], id.as_str());

    let stats = call(&server, BETA, "memory_stats", json!({})).await;
    assert_eq!(stats["structuredContent"]["namespace"], "beta", "{stats}");
}
