//! `GET /v1/memories/{id}/query?jq=`: jq over JSON memories, checked against
//! the real `jq` on real-shaped fixtures, and its bounds.

use std::process::Command;

use axum::http::StatusCode;
use serde_json::Value;

use crate::helpers::{TestApp, enc, spawn_app, spawn_app_with};

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");

async fn query(app: &TestApp, id: &str, program: &str) -> Value {
    let resp = app
        .get(&format!("/v1/memories/{id}/query?jq={}", enc(program)))
        .await;
    assert_eq!(
        resp.status,
        StatusCode::OK,
        "{program}: {}",
        String::from_utf8_lossy(&resp.body)
    );
    resp.json()
}

/// `jq -c` on `content`: one output value per line, or None without jq.
fn reference(content: &[u8], program: &str) -> Option<Vec<Value>> {
    let mut child = Command::new("jq")
        .args(["-c", program])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .ok()?;
    use std::io::Write;
    child.stdin.take().unwrap().write_all(content).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "jq failed on {program}");
    Some(
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect(),
    )
}

#[tokio::test]
async fn results_equal_jq_on_real_json_documents_and_json_lines() {
    let app = spawn_app().await;
    let cases: [(&str, &[&str]); 4] = [
        (
            "openai.json",
            &[
                ".model",
                "[.messages[] | .role] | unique",
                ".messages[] | select(.role == \"tool\") | .tool_call_id",
                "[.. | numbers] | add",
                "[paths | length] | max",
                ".messages | map(.content | strings | length) | add",
            ],
        ),
        (
            "anthropic.json",
            &[
                "keys",
                ".messages | length",
                "[.messages[].content | arrays | .[].type] | group_by(.) | map([.[0], length])",
                "first(.. | objects | select(has(\"tool_use_id\"))) | .tool_use_id",
            ],
        ),
        (
            "summaries/json-api-response.txt",
            &[
                ".data[] | select(.status == \"failed\") | {id, error}",
                ".data | map(.status) | unique",
                ".",
                "to_entries | map(.key)",
            ],
        ),
        (
            "summaries/json-lines-log.txt",
            &[
                "select(.level == \"error\") | .msg",
                ".errors",
                "{level, job} | tostring",
                "select(.errors > 0) | [.ts, .errors]",
            ],
        ),
    ];
    let mut compared = 0;
    for (file, programs) in cases {
        let content = std::fs::read(format!("{FIXTURES}/{file}")).unwrap();
        let id = app.put_id(content.clone()).await;
        for program in programs {
            let answer = query(&app, &id, program).await;
            assert_eq!(answer["truncated"], false, "{file}: {program}");
            let ours: Vec<Value> = answer["results"].as_array().unwrap().clone();
            let Some(theirs) = reference(&content, program) else {
                eprintln!("jq is not installed: results are not compared");
                return;
            };
            assert!(
                !theirs.is_empty() || program.starts_with("select"),
                "{file}: {program}"
            );
            assert_eq!(ours, theirs, "{file}: {program}");
            compared += 1;
        }
        let lines = content.iter().filter(|&&b| b == b'\n').count() as u64;
        let inputs = query(&app, &id, "1").await["inputs"].as_u64().unwrap();
        assert!(inputs == 1 || inputs == lines, "{file}: {inputs} inputs");
    }
    assert_eq!(compared, 18);
}

#[tokio::test]
async fn objects_keep_their_key_order() {
    let app = spawn_app().await;
    let id = app
        .put_id(r#"{"zeta": 1, "alpha": {"y": 2, "b": 3}}"#)
        .await;
    let resp = app
        .get(&format!("/v1/memories/{id}/query?jq={}", enc(".")))
        .await;
    let body = String::from_utf8(resp.body.to_vec()).unwrap();
    assert!(
        body.contains(r#"[{"zeta":1,"alpha":{"y":2,"b":3}}]"#),
        "{body}"
    );
}

#[tokio::test]
async fn bad_programs_and_contents_are_clear_errors() {
    let app = spawn_app().await;
    let json = app.put_id("{\"a\": [1, 2]}\n").await;
    let text = app.put_id("hello\nworld\n").await;
    let resp = app
        .get(&format!(
            "/v1/memories/{json}/query?jq={}",
            enc(".a | map(")
        ))
        .await;
    let error = resp.assert_error(StatusCode::BAD_REQUEST, "invalid_field");
    assert_eq!(error["field"], "jq");
    assert!(error["message"].as_str().unwrap().contains(".a | map("));
    let long = ".".repeat(5000);
    app.get(&format!("/v1/memories/{json}/query?jq={long}"))
        .await
        .assert_error(StatusCode::BAD_REQUEST, "invalid_field");
    let error = app
        .get(&format!("/v1/memories/{text}/query?jq=."))
        .await
        .assert_error(StatusCode::UNPROCESSABLE_ENTITY, "not_json");
    assert!(
        error["message"].as_str().unwrap().contains("line 1"),
        "{error}"
    );
    let error = app
        .get(&format!("/v1/memories/{json}/query?jq={}", enc(".a.b")))
        .await
        .assert_error(StatusCode::UNPROCESSABLE_ENTITY, "jq_error");
    assert!(!error["message"].as_str().unwrap().is_empty());
    app.get(&format!("/v1/memories/{json}/query"))
        .await
        .assert_error(StatusCode::BAD_REQUEST, "invalid_query");
}

#[tokio::test]
async fn runaway_programs_stop_at_their_limits_and_the_server_goes_on() {
    let app = spawn_app_with(|c| {
        c.query_timeout_ms = 1500;
        c.query_memory_bytes = 512 << 20;
    })
    .await;
    let id = app.put_id("[1, 2, 3]").await;
    for program in [
        "def f: f; f",
        "last(range(1e15))",
        "[range(1e10)] | length",
        "[limit(1000000000; repeat(\"xxxxxxxxxxxxxxxx\"))] | add",
    ] {
        let started = std::time::Instant::now();
        app.get(&format!("/v1/memories/{id}/query?jq={}", enc(program)))
            .await
            .assert_error(StatusCode::UNPROCESSABLE_ENTITY, "query_limit");
        assert!(
            started.elapsed() < std::time::Duration::from_secs(10),
            "{program} ran {:?}",
            started.elapsed()
        );
    }
    // Endless output is cut by the output caps, not an error.
    let endless = query(&app, &id, "repeat(.)").await;
    assert_eq!(endless["truncated"], true);
    assert_eq!(endless["results"].as_array().unwrap().len(), 1000);
    assert_eq!(
        query(&app, &id, "add").await["results"],
        serde_json::json!([6])
    );
}

#[tokio::test]
async fn memories_over_the_query_cap_point_to_grep_and_slices() {
    let app = spawn_app_with(|c| c.query_max_bytes = 1000).await;
    let big: String = format!("[{}0]", "1,".repeat(1000));
    let id = app.put_id(big).await;
    let error = app
        .get(&format!("/v1/memories/{id}/query?jq=length"))
        .await
        .assert_error(StatusCode::UNPROCESSABLE_ENTITY, "query_too_large");
    assert!(error["message"].as_str().unwrap().contains("grep"));
}

#[tokio::test]
async fn another_namespaces_memory_is_not_found() {
    const ALPHA: &str = "key-alpha-0001";
    const BETA: &str = "key-beta-00002";
    let app = spawn_app_with(|c| c.api_keys = Some(format!("{ALPHA}:alpha,{BETA}:beta"))).await;
    let put = app
        .put_json_as(
            ALPHA,
            serde_json::json!({"content": "{\"plan\": \"alpha plan\"}"}),
        )
        .await
        .json();
    let id = put["id"].as_str().unwrap();
    app.get_as(&format!("/v1/memories/{id}/query?jq=.plan"), BETA)
        .await
        .assert_error(StatusCode::NOT_FOUND, "not_found");
    let mine = app
        .get_as(&format!("/v1/memories/{id}/query?jq=.plan"), ALPHA)
        .await
        .json();
    assert_eq!(mine["results"], serde_json::json!(["alpha plan"]));
}
