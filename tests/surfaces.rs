//! One contract, every surface, against the real server binary: the same
//! memories selected by the same filter through REST (list, search, grep
//! across), MCP (`memory_search`) and the CLI (`list`, `search`); the same
//! fields stored by every put (REST's JSON body and query string, MCP's
//! `memory_put`, `cairn put`); the same lines found by every grep. The
//! server runs on the backends `CAIRN_TEST_BACKEND` names (`.ci/run` runs
//! this suite on SQLite and on PostgreSQL). A surface
//! that names, reads or documents a field differently (the CLI once said
//! `--since` took milliseconds; MCP's search once took 3 of the 8 filter
//! fields, its put no `mime`) fails here.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

#[path = "common/backends.rs"]
mod backends;
#[path = "common/served.rs"]
mod served;

const BIN: &str = env!("CARGO_BIN_EXE_cairn");

/// `cairn serve` on the backends `CAIRN_TEST_BACKEND` names (SQLite and
/// files when unset), with the services it uses: drop them after the server.
async fn start() -> (served::Served, backends::Backends) {
    let backends = backends::Backends::provision(backends::Selection::from_env()).await;
    (served::start_with(&backends.env()), backends)
}

/// A word every memory holds, for search and grep.
const WORD: &str = "zephyrquartz";

/// The JSON answer to a GET, which must succeed.
async fn get_json(http: &reqwest::Client, url: String) -> Value {
    let answer = http.get(&url).send().await.unwrap();
    assert!(answer.status().is_success(), "{url}: {}", answer.status());
    answer.json().await.unwrap()
}

/// The whole answer of MCP's `tool` to `arguments`, an error or not.
async fn mcp(http: &reqwest::Client, base: &str, tool: &str, arguments: &Value) -> Value {
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": tool, "arguments": arguments}});
    post_json(
        http.post(format!("{base}/mcp"))
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-06-18"),
        &call,
    )
    .await
}

/// The answer of MCP's `memory_search` to `arguments`.
async fn mcp_search(http: &reqwest::Client, base: &str, arguments: &Value) -> Value {
    mcp(http, base, "memory_search", arguments).await
}

/// The JSON answer to `request` with `body`.
async fn post_json(request: reqwest::RequestBuilder, body: &Value) -> Value {
    request
        .json(body)
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
    let (server, _backends) = start().await;
    let http = reqwest::Client::new();
    let before = now() - 5;
    let mut ids = Vec::new();
    for (name, fields) in memories() {
        let mut body = fields.clone();
        body["content"] = json!(format!("{name} output\n{WORD} line of {name}\n"));
        let answer = post_json(http.post(format!("{}/v1/memories", server.url)), &body).await;
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
    let (server, _backends) = start().await;
    let arguments = json!({"query": WORD, "folder": "/repo"});
    let called = mcp_search(&reqwest::Client::new(), &server.url, &arguments).await;
    let text = called.to_string();
    assert!(
        called["result"]["isError"] == true || called["error"].is_object(),
        "{text}"
    );
    assert!(text.contains("folder"), "{text}");
}

/// The answer of an MCP tool call, which must not be an error.
async fn mcp_call(http: &reqwest::Client, base: &str, tool: &str, arguments: &Value) -> Value {
    let called = mcp(http, base, tool, arguments).await;
    assert_ne!(
        called["result"]["isError"], true,
        "{tool} {arguments}: {called}"
    );
    called["result"]["structuredContent"].clone()
}

/// What a stored memory says of the fields it was put with.
fn stored_fields(memory: &Value) -> Value {
    json!({
        "type": memory["type"], "subtype": memory["subtype"], "mime": memory["mime"],
        "title": memory["title"], "tags": memory["tags"], "thread": memory["thread"],
        "checkpoint": memory["checkpoint"], "directory": memory["directory"],
        "pinned": memory["pinned"], "expires": memory["expires_at"].is_string(),
    })
}

#[tokio::test]
async fn every_surface_stores_the_same_fields_and_greps_alike() {
    let (server, _backends) = start().await;
    let base = &server.url;
    let http = reqwest::Client::new();
    let fields = json!({"type": "test_run", "subtype": "pytest", "mime": "text/x-log",
        "title": "nightly", "tags": ["ci", "rust"], "thread": "t9", "checkpoint": "c9",
        "directory": "/repo", "ttl_seconds": 3600, "pinned": true});
    let expected = json!({"type": "TEST_RUN", "subtype": "pytest", "mime": "text/x-log",
        "title": "nightly", "tags": ["ci", "rust"], "thread": "t9", "checkpoint": "c9",
        "directory": "/repo", "pinned": true, "expires": true});
    let content = |surface: &str| {
        format!("{surface} run\nok one\nFAILED test_{surface}\nok two\nfailed again\nend\n")
    };

    let mut body = fields.clone();
    body["content"] = json!(content("json"));
    let json_put = post_json(http.post(format!("{base}/v1/memories")), &body).await;

    let mut query: Vec<(String, String)> = fields
        .as_object()
        .unwrap()
        .iter()
        .filter(|(key, _)| *key != "tags")
        .map(|(key, value)| (key.clone(), value.to_string().trim_matches('"').to_owned()))
        .collect();
    query.push(("tags".into(), "ci,rust".into()));
    let raw_put: Value = http
        .post(format!("{base}/v1/memories"))
        .query(&query)
        .header("content-type", "application/octet-stream")
        .body(content("raw"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();

    let mut arguments = fields.clone();
    arguments["content"] = json!(content("mcp"));
    let mcp_put = mcp_call(&http, base, "memory_put", &arguments).await;

    let file = std::env::temp_dir().join(format!("cairn-surfaces-{}.log", std::process::id()));
    std::fs::write(&file, content("cli")).unwrap();
    let cli_put = cli(
        base,
        &[
            "put",
            "--file",
            file.to_str().unwrap(),
            "--type",
            "test_run",
            "--subtype",
            "pytest",
            "--mime",
            "text/x-log",
            "--title",
            "nightly",
            "--tag",
            "ci",
            "--tag",
            "rust",
            "--thread",
            "t9",
            "--checkpoint",
            "c9",
            "--directory",
            "/repo",
            "--ttl-seconds",
            "3600",
            "--pinned",
            "true",
        ]
        .map(str::to_owned),
    );
    std::fs::remove_file(&file).unwrap();

    for (surface, put) in [
        ("REST JSON", &json_put),
        ("REST raw", &raw_put),
        ("MCP", &mcp_put),
        ("CLI", &cli_put),
    ] {
        let id = put["id"]
            .as_str()
            .unwrap_or_else(|| panic!("{surface}: {put}"));
        let memory = get_json(&http, format!("{base}/v1/memories/{id}")).await;
        assert_eq!(stored_fields(&memory), expected, "{surface}: {memory}");

        // The same grep through each surface finds the same lines.
        let rest = get_json(
            &http,
            format!("{base}/v1/memories/{id}/grep?pattern=failed&ignore_case=true&context=1"),
        )
        .await;
        let mcp = mcp_call(
            &http,
            base,
            "memory_grep",
            &json!({"memory_id": id, "pattern": "failed", "ignore_case": true, "context": 1}),
        )
        .await;
        let cli = cli(
            base,
            &["grep", "-i", "-C", "1", "failed", id].map(str::to_owned),
        );
        let lines = |answer: &Value| -> Vec<(u64, Vec<Value>)> {
            answer["matches"]
                .as_array()
                .unwrap_or_else(|| panic!("{surface}: {answer}"))
                .iter()
                .map(|m| {
                    (
                        m["line"].as_u64().unwrap(),
                        m["before"].as_array().unwrap().clone(),
                    )
                })
                .collect()
        };
        assert_eq!(
            lines(&rest).iter().map(|(n, _)| *n).collect::<Vec<_>>(),
            [3, 5],
            "{surface}: {rest}"
        );
        assert_eq!(lines(&rest)[0].1, [json!("ok one")], "{surface}: {rest}");
        assert_eq!(lines(&mcp), lines(&rest), "{surface}: MCP {mcp}");
        assert_eq!(lines(&cli), lines(&rest), "{surface}: CLI {cli}");
    }
}
