//! One contract, every surface: the same memories selected by the same
//! filter through REST (list, search, grep across), MCP (`memory_search`)
//! and the CLI (`list`, `search`), against the real server binary. A surface
//! that names, reads or documents a filter field differently (the CLI once
//! said `--since` took milliseconds; MCP's search once took 3 of the 8
//! fields) fails here.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

#[path = "common/served.rs"]
mod served;

const BIN: &str = env!("CARGO_BIN_EXE_cairn");

/// A word every memory holds, for search and grep.
const WORD: &str = "zephyrquartz";

/// The JSON answer to a GET, which must succeed.
async fn get_json(http: &reqwest::Client, url: String) -> Value {
    let answer = http.get(&url).send().await.unwrap();
    assert!(answer.status().is_success(), "{url}: {}", answer.status());
    answer.json().await.unwrap()
}

/// The answer of MCP's `memory_search` to `arguments`.
async fn mcp_search(http: &reqwest::Client, base: &str, arguments: &Value) -> Value {
    http.post(format!("{base}/mcp"))
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-06-18")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "memory_search", "arguments": arguments}}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// The memories of the scenario: a name and the fields each is put with.
fn memories() -> Vec<(&'static str, Value)> {
    vec![
        (
            "pytest",
            json!({"type": "TOOL_OUTPUT", "subtype": "pytest", "tags": ["ci"], "thread": "t1", "checkpoint": "c1", "directory": "/repo"}),
        ),
        (
            "docs",
            json!({"type": "WEB_SCRAPE", "subtype": "html", "tags": ["docs"], "thread": "t2", "checkpoint": "c2", "directory": "/web"}),
        ),
        (
            "cargo",
            json!({"type": "TOOL_OUTPUT", "subtype": "cargo", "tags": ["ci", "rust"], "thread": "t2", "checkpoint": "c1", "directory": "/repo"}),
        ),
    ]
}

/// A filter as query-string pairs, and the names of the memories it selects.
type Case = (Vec<(&'static str, String)>, &'static [&'static str]);

/// The filter cases.
fn cases(before: u64, after: u64) -> Vec<Case> {
    let rfc3339 = |seconds: u64| {
        chrono::DateTime::from_timestamp(i64::try_from(seconds).unwrap(), 0)
            .unwrap()
            .to_rfc3339()
    };
    vec![
        (vec![("type", "TOOL_OUTPUT".into())], &["pytest", "cargo"]),
        (vec![("subtype", "html".into())], &["docs"]),
        (vec![("tag", "ci".into())], &["pytest", "cargo"]),
        (vec![("thread", "t2".into())], &["docs", "cargo"]),
        (vec![("checkpoint", "c1".into())], &["pytest", "cargo"]),
        (vec![("directory", "/web".into())], &["docs"]),
        (
            vec![("since", before.to_string())],
            &["pytest", "docs", "cargo"],
        ),
        (vec![("since", after.to_string())], &[]),
        (
            vec![("since", rfc3339(before))],
            &["pytest", "docs", "cargo"],
        ),
        (vec![("until", before.to_string())], &[]),
        (
            vec![("until", rfc3339(after))],
            &["pytest", "docs", "cargo"],
        ),
        (
            vec![("type", "TOOL_OUTPUT".into()), ("thread", "t2".into())],
            &["cargo"],
        ),
    ]
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// The ids under `key` of each object in `items`, as names.
fn names(items: &Value, key: &str, ids: &[(String, &'static str)]) -> BTreeSet<&'static str> {
    items
        .as_array()
        .unwrap_or_else(|| panic!("not a list: {items}"))
        .iter()
        .map(|item| {
            let id = item[key].as_str().unwrap();
            ids.iter()
                .find(|(full, _)| full == id || full.starts_with(id))
                .map(|(_, name)| *name)
                .unwrap_or_else(|| panic!("unknown id {id}"))
        })
        .collect()
}

/// The CLI's JSON answer to `args`.
fn cli(url: &str, args: &[String]) -> Value {
    let out = Command::new(BIN)
        .args(args)
        .args(["--url", url, "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "cairn {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[tokio::test]
async fn every_surface_selects_the_same_memories_for_the_same_filter() {
    let server = served::start();
    let http = reqwest::Client::new();
    let before = now() - 5;
    let mut ids = Vec::new();
    for (name, fields) in memories() {
        let mut body = fields.clone();
        body["content"] = json!(format!("{name} output\n{WORD} line of {name}\n"));
        let answer: Value = http
            .post(format!("{}/v1/memories", server.url))
            .json(&body)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        ids.push((answer["id"].as_str().unwrap().to_owned(), name));
    }
    let after = now() + 3600;
    // Everything stored is searchable before the cases run.
    let waited = get_json(
        &http,
        format!("{}/v1/search?q={WORD}&wait_ms=10000", server.url),
    )
    .await;
    assert_eq!(waited["indexed"], true, "{waited}");

    for (filter, expected) in cases(before, after) {
        let expected: BTreeSet<&str> = expected.iter().copied().collect();
        let query = serde_urlencoded::to_string(&filter).unwrap();
        let listed = get_json(&http, format!("{}/v1/memories?{query}", server.url)).await;
        assert_eq!(
            names(&listed["memories"], "id", &ids),
            expected,
            "REST list ?{query}"
        );

        let searched = get_json(&http, format!("{}/v1/search?q={WORD}&{query}", server.url)).await;
        assert_eq!(
            names(&searched["results"], "id", &ids),
            expected,
            "REST search ?{query}"
        );

        let grepped = get_json(
            &http,
            format!("{}/v1/grep?pattern={WORD}&{query}", server.url),
        )
        .await;
        assert_eq!(
            names(&grepped["results"], "id", &ids),
            expected,
            "REST grep ?{query}"
        );

        let mut arguments = json!({"query": WORD});
        for (field, value) in &filter {
            arguments[*field] = json!(value);
        }
        let called = mcp_search(&http, &server.url, &arguments).await;
        let result = &called["result"];
        assert_ne!(
            result["isError"], true,
            "MCP memory_search {arguments}: {called}"
        );
        assert_eq!(
            names(&result["structuredContent"]["results"], "id", &ids),
            expected,
            "MCP memory_search {arguments}"
        );

        let flags: Vec<String> = filter
            .iter()
            .flat_map(|(field, value)| [format!("--{field}"), value.clone()])
            .collect();
        let listed = cli(
            &server.url,
            &[["list".to_owned()].as_slice(), &flags].concat(),
        );
        assert_eq!(
            names(&listed["memories"], "id", &ids),
            expected,
            "cairn list {flags:?}"
        );
        let searched = cli(
            &server.url,
            &[["search".to_owned(), WORD.to_owned()].as_slice(), &flags].concat(),
        );
        assert_eq!(
            names(&searched["results"], "id", &ids),
            expected,
            "cairn search {flags:?}"
        );
    }
}

#[tokio::test]
async fn mcp_rejects_a_filter_field_no_surface_has() {
    let server = served::start();
    let arguments = json!({"query": WORD, "folder": "/repo"});
    let called = mcp_search(&reqwest::Client::new(), &server.url, &arguments).await;
    let text = called.to_string();
    assert!(
        called["result"]["isError"] == true || called["error"].is_object(),
        "{text}"
    );
    assert!(text.contains("folder"), "{text}");
}
