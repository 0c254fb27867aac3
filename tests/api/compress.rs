//! `POST /v1/compress` on realistic agent transcripts (tests/fixtures, made by
//! generate.py): for every strategy and both formats, valid pairing,
//! idempotency, byte-identical restoration, the cached prefix untouched,
//! fewer tokens, existing pointers left alone.

use axum::http::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{Resp, TestApp, spawn_app};

/// The pointer the fixtures already hold (an earlier offload).
const OLD_POINTER: &str = "[cairn: offloaded tool_output grep · mem://5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e5e · 120 lines, 950 tokens]";

pub fn fixture(name: &str) -> Value {
    let text = match name {
        "openai" => include_str!("../fixtures/openai.json"),
        "anthropic" => include_str!("../fixtures/anthropic.json"),
        other => panic!("no fixture {other}"),
    };
    serde_json::from_str(text).unwrap()
}

pub async fn post(app: &TestApp, uri: &str, body: &Value) -> Resp {
    app.post(uri, Some("application/json"), &[], body.to_string())
        .await
}

/// A compress request for a fixture: its messages (and system), plus `params`.
fn request(doc: &Value, strategy: &str, params: Value) -> Value {
    let mut body =
        json!({"messages": doc["messages"], "model": doc["model"], "strategy": strategy});
    if let Some(system) = doc.get("system") {
        body["system"] = system.clone();
    }
    body.as_object_mut()
        .unwrap()
        .extend(params.as_object().unwrap().clone());
    body
}

/// Pairing as each provider states it, checked without Cairn's code.
pub fn assert_pairs(format: &str, messages: &[Value]) {
    for (i, m) in messages.iter().enumerate() {
        if format == "openai" {
            let calls: Vec<&str> = m["tool_calls"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|c| c["id"].as_str().unwrap())
                .collect();
            let answers: Vec<&str> = messages[i + 1..]
                .iter()
                .take_while(|n| n["role"] == "tool")
                .map(|n| n["tool_call_id"].as_str().unwrap())
                .collect();
            if !calls.is_empty() {
                let mut want = calls.clone();
                want.sort_unstable();
                let mut got = answers.clone();
                got.sort_unstable();
                assert_eq!(want, got, "messages[{i}]: calls without results");
            }
            if m["role"] == "tool" {
                let caller = messages[..i]
                    .iter()
                    .rev()
                    .find(|p| p["role"] != "tool")
                    .unwrap();
                let ids: Vec<&str> = caller["tool_calls"]
                    .as_array()
                    .map(|a| a.iter().map(|c| c["id"].as_str().unwrap()).collect())
                    .unwrap_or_default();
                assert!(
                    ids.contains(&m["tool_call_id"].as_str().unwrap()),
                    "orphan result at {i}"
                );
            }
        } else {
            assert!(m["role"] == "user" || m["role"] == "assistant");
            if i > 0 {
                assert_ne!(m["role"], messages[i - 1]["role"], "turns alternate at {i}");
            }
            let blocks = |v: &Value, kind: &str, key: &str| -> Vec<String> {
                v["content"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|b| b["type"] == kind)
                    .map(|b| b[key].as_str().unwrap().to_owned())
                    .collect()
            };
            let uses = blocks(m, "tool_use", "id");
            if !uses.is_empty() {
                let next = &messages[i + 1];
                assert_eq!(uses, blocks(next, "tool_result", "tool_use_id"), "at {i}");
            }
            let results = blocks(m, "tool_result", "tool_use_id");
            if !results.is_empty() {
                assert_eq!(
                    results,
                    blocks(&messages[i - 1], "tool_use", "id"),
                    "at {i}"
                );
            }
        }
    }
}

/// Every text of `value`, in order.
fn strings(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::String(s) => out.push(s.clone()),
        Value::Array(a) => a.iter().for_each(|v| strings(v, out)),
        Value::Object(o) => o.values().for_each(|v| strings(v, out)),
        _ => {}
    }
}

fn pointer_of(text: &str) -> Option<&str> {
    let first = text.lines().next()?;
    if !first.starts_with("[cairn: ") {
        return None;
    }
    let at = first.find("mem://")? + "mem://".len();
    Some(&first[at..at + 64])
}

async fn content(app: &TestApp, id: &str) -> String {
    let resp = app.get(&format!("/v1/memories/{id}/content")).await;
    assert_eq!(resp.status, StatusCode::OK, "{id} is stored");
    resp.text().to_owned()
}

/// Rebuilds the original list from the compressed one and the stored pieces.
pub async fn restore(app: &TestApp, output: &[Value], refs: &[String]) -> Vec<Value> {
    let mut restored = Vec::new();
    for message in output {
        let text = message["content"].as_str().unwrap_or("");
        match pointer_of(text) {
            Some(id) if text.starts_with("[cairn: end of folded run") => {
                assert!(refs.iter().any(|r| r == id));
            }
            Some(id)
                if text.starts_with("[cairn: folded") || text.starts_with("[cairn: dropped") =>
            {
                assert!(refs.iter().any(|r| r == id), "{id} is in memory_refs");
                for line in content(app, id).await.lines() {
                    restored.push(serde_json::from_str(line).unwrap());
                }
            }
            _ => {
                let mut message = message.clone();
                restore_texts(app, &mut message, refs).await;
                restored.push(message);
            }
        }
    }
    restored
}

async fn restore_texts(app: &TestApp, value: &mut Value, refs: &[String]) {
    let mut stack = vec![value];
    while let Some(v) = stack.pop() {
        match v {
            Value::String(s) => {
                let id = pointer_of(s)
                    .filter(|id| refs.iter().any(|r| r == id))
                    .map(str::to_owned);
                if let Some(id) = id {
                    *s = content(app, &id).await;
                }
            }
            Value::Array(a) => stack.extend(a.iter_mut()),
            Value::Object(o) => stack.extend(o.values_mut()),
            _ => {}
        }
    }
}

/// Compresses a fixture and checks every rule; returns (input messages, answer).
async fn check(app: &TestApp, name: &str, strategy: &str, params: Value) -> (Vec<Value>, Value) {
    let doc = fixture(name);
    let input: Vec<Value> = doc["messages"].as_array().unwrap().clone();
    let body = request(&doc, strategy, params.clone());
    let resp = post(app, "/v1/compress", &body).await;
    assert_eq!(
        resp.status,
        StatusCode::OK,
        "{}",
        String::from_utf8_lossy(&resp.body)
    );
    let answer = resp.json();
    let output: Vec<Value> = answer["messages"].as_array().unwrap().clone();
    let report = &answer["report"];
    assert_eq!(answer["format"], name);
    assert_eq!(report["strategy"], strategy);

    // Something was done, and it saved tokens.
    assert!(
        !report["offloaded"].as_array().unwrap().is_empty(),
        "{strategy} on {name} did nothing"
    );
    let (before, after) = (
        report["tokens_before"].as_u64().unwrap(),
        report["tokens_after"].as_u64().unwrap(),
    );
    assert!(after < before, "{before} -> {after}");
    assert_eq!(report["tokens_saved"].as_u64().unwrap(), before - after);
    assert!(
        report["method"]
            .as_str()
            .unwrap()
            .starts_with(if name == "openai" {
                "exact:o200k_base"
            } else {
                "estimate:anthropic"
            })
    );

    // Pairing, by the test's own reading and by Cairn's validator.
    assert_pairs(name, &output);
    let format = cairn::domain::compress::format::Format::parse(name).unwrap();
    cairn::domain::compress::pairs::check(format, &output, true).unwrap();

    // The cached prefix: Anthropic's cache_control sits on messages[0].
    let preserve = params["preserve_prefix"].as_u64().unwrap_or(0) as usize;
    let frozen = preserve.max(if name == "anthropic" { 1 } else { 0 });
    assert_eq!(
        output[..frozen],
        input[..frozen],
        "the cached prefix is untouched"
    );
    if let Some(system) = doc.get("system") {
        assert_eq!(&answer["system"], system);
    }

    // Restorable byte for byte, and every new pointer is in memory_refs.
    let refs: Vec<String> = answer["memory_refs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_owned())
        .collect();
    for offloaded in report["offloaded"].as_array().unwrap() {
        assert!(refs.iter().any(|r| r == &offloaded["id"]));
    }
    assert_eq!(
        restore(app, &output, &refs).await,
        input,
        "the original comes back"
    );

    // The old pointer is neither re-hydrated nor re-offloaded.
    let mut texts = Vec::new();
    strings(&Value::Array(output.clone()), &mut texts);
    let kept = texts.iter().any(|t| t.starts_with(OLD_POINTER));
    let archived = texts
        .iter()
        .filter_map(|t| pointer_of(t))
        .filter(|id| refs.iter().any(|r| r == id))
        .count()
        > 0;
    assert!(kept || archived);
    assert!(
        !texts
            .iter()
            .any(|t| t.contains("def refund(order") && !t.starts_with("[cairn:"))
    );

    // Idempotent: compressing the answer again changes nothing.
    let mut again = body.clone();
    again["messages"] = Value::Array(output.clone());
    let second = post(app, "/v1/compress", &again).await.json();
    assert_eq!(second["messages"], answer["messages"], "idempotent");
    assert_eq!(second["report"]["offloaded"], json!([]));
    assert_eq!(second["report"]["tokens_saved"], 0);
    (input, answer)
}

fn texts_of(messages: &[Value]) -> Vec<String> {
    let mut out = Vec::new();
    strings(&Value::Array(messages.to_vec()), &mut out);
    out
}

async fn pointer_offloads_big_contents(name: &str) {
    let app = spawn_app().await;
    let (input, answer) = check(&app, name, "pointer", json!({"preserve_prefix": 2})).await;
    let output = answer["messages"].as_array().unwrap();
    assert_eq!(output.len(), input.len());
    let texts = texts_of(output);
    assert!(
        texts
            .iter()
            .all(|t| t.chars().count() <= 6000 || t.starts_with("[cairn:"))
    );
    assert!(
        texts.iter().any(|t| t == "912 passed in 40.22s\n"),
        "small results stay"
    );
    let tool_refs: Vec<&Value> = answer["memory_refs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["type"] == "TOOL_OUTPUT")
        .collect();
    let subtypes: Vec<&str> = tool_refs
        .iter()
        .map(|r| r["subtype"].as_str().unwrap())
        .collect();
    for tool in [
        "list_files",
        "run_tests",
        "http_get",
        "fetch_url",
        "cargo_build",
    ] {
        assert!(subtypes.contains(&tool), "{tool} in {subtypes:?}");
    }
    let mimes: Vec<&str> = tool_refs
        .iter()
        .map(|r| r["mime"].as_str().unwrap())
        .collect();
    assert!(mimes.contains(&"application/json") && mimes.contains(&"text/html"));
    // The marker says what it is and carries the stored summary.
    let marker = texts
        .iter()
        .find(|t| t.starts_with("[cairn: offloaded tool_output run_tests"))
        .unwrap();
    assert!(marker.contains("kind: test-output"), "{marker}");
    assert!(
        marker.contains("2 failed")
            && marker.contains("FAILED tests/unit/test_refunds.py::test_case_311")
            && marker.contains("FAILED tests/unit/test_api.py::test_case_644"),
        "{marker}"
    );
    assert!(marker.chars().count() < 1200);
    // One count: the first line's is the summary's, which names its method.
    let first = marker.lines().next().unwrap();
    let stated = first
        .rsplit(", ")
        .next()
        .unwrap()
        .trim_end_matches(" tokens]");
    assert!(
        marker.contains(&format!("{stated} tokens (")),
        "the first line's {stated} tokens are not the summary's: {marker}"
    );
    app.shutdown().await;
}

#[tokio::test]
async fn pointer_offloads_big_contents_openai() {
    pointer_offloads_big_contents("openai").await;
}

#[tokio::test]
async fn pointer_offloads_big_contents_anthropic() {
    pointer_offloads_big_contents("anthropic").await;
}

async fn masking_keeps_the_last_results(name: &str) {
    let app = spawn_app().await;
    let (input, answer) = check(&app, name, "observation_masking", json!({"keep_recent": 2})).await;
    let output = answer["messages"].as_array().unwrap();
    // The last two tool results (cargo build log, final test run) are verbatim.
    let (kept_in, kept_out) = (texts_of(&input), texts_of(output));
    assert!(
        kept_out
            .iter()
            .any(|t| t.contains("error[E0308]: mismatched types") && !t.starts_with("[cairn:"))
    );
    assert!(
        kept_in
            .iter()
            .filter(|t| t.contains("2 failed, 878 passed"))
            .count()
            == 1
    );
    assert!(
        !kept_out
            .iter()
            .any(|t| t.contains("2 failed, 878 passed") && !t.starts_with("[cairn:"))
    );
    app.shutdown().await;
}

#[tokio::test]
async fn masking_keeps_the_last_results_openai() {
    masking_keeps_the_last_results("openai").await;
}

#[tokio::test]
async fn masking_keeps_the_last_results_anthropic() {
    masking_keeps_the_last_results("anthropic").await;
}

async fn sliding_window_folds_into_one_summary(name: &str) {
    let app = spawn_app().await;
    let (input, answer) = check(&app, name, "sliding_window", json!({"keep_recent": 5})).await;
    let output = answer["messages"].as_array().unwrap();
    let folds = output
        .iter()
        .filter(|m| {
            m["content"]
                .as_str()
                .is_some_and(|t| t.starts_with("[cairn: folded"))
        })
        .count();
    assert_eq!(folds, 1, "one summary message");
    // The window: at least the last 5 messages, verbatim.
    assert_eq!(output[output.len() - 5..], input[input.len() - 5..]);
    if name == "openai" {
        assert_eq!(output[0], input[0], "the system prompt stays");
    }
    let transcript = answer["memory_refs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["type"] == "TRANSCRIPT")
        .unwrap();
    assert_eq!(transcript["mime"], "application/x-ndjson");
    app.shutdown().await;
}

#[tokio::test]
async fn sliding_window_folds_into_one_summary_openai() {
    sliding_window_folds_into_one_summary("openai").await;
}

#[tokio::test]
async fn sliding_window_folds_into_one_summary_anthropic() {
    sliding_window_folds_into_one_summary("anthropic").await;
}

async fn selective_keeps_tools_errors_and_important(name: &str) {
    let app = spawn_app().await;
    let (input, answer) = check(
        &app,
        name,
        "selective",
        json!({"keep_recent": 2, "preserve_prefix": 1}),
    )
    .await;
    let output = answer["messages"].as_array().unwrap();
    let texts = texts_of(output);
    assert!(
        texts
            .iter()
            .any(|t| t.starts_with("[important] The fix must ship"))
    );
    // Every tool call of the input is still there.
    let calls = |ms: &[Value]| {
        serde_json::to_string(ms)
            .unwrap()
            .matches("\"call_0")
            .count()
            + serde_json::to_string(ms)
                .unwrap()
                .matches("\"toolu_0")
                .count()
    };
    assert_eq!(calls(output), calls(&input));
    assert!(texts.iter().any(|t| t.starts_with("[cairn: folded")));
    app.shutdown().await;
}

#[tokio::test]
async fn selective_keeps_tools_errors_and_important_openai() {
    selective_keeps_tools_errors_and_important("openai").await;
}

#[tokio::test]
async fn selective_keeps_tools_errors_and_important_anthropic() {
    selective_keeps_tools_errors_and_important("anthropic").await;
}

async fn deletion_leaves_a_notice(name: &str) {
    let app = spawn_app().await;
    let (input, answer) = check(
        &app,
        name,
        "deletion",
        json!({"keep_recent": 4, "preserve_prefix": 1}),
    )
    .await;
    let output = answer["messages"].as_array().unwrap();
    let notice = output
        .iter()
        .filter_map(|m| m["content"].as_str())
        .find(|t| t.starts_with("[cairn: dropped"))
        .unwrap();
    assert!(notice.len() < 400, "a short notice: {notice}");
    assert!(
        output.len() <= 1 + 2 + 4 + 2,
        "old messages are gone: {}",
        output.len()
    );
    assert_eq!(output[0], input[0]);
    app.shutdown().await;
}

#[tokio::test]
async fn deletion_leaves_a_notice_openai() {
    deletion_leaves_a_notice("openai").await;
}

#[tokio::test]
async fn deletion_leaves_a_notice_anthropic() {
    deletion_leaves_a_notice("anthropic").await;
}

#[tokio::test]
async fn the_same_transcript_again_stores_nothing_new() {
    let app = spawn_app().await;
    let doc = fixture("openai");
    let body = request(&doc, "pointer", json!({"thread": "run-7"}));
    let first = post(&app, "/v1/compress", &body).await.json();
    let second = post(&app, "/v1/compress", &body).await.json();
    assert_eq!(first, second);
    let listed = app.get("/v1/memories?thread=run-7").await.json();
    assert_eq!(
        listed["memories"].as_array().unwrap().len(),
        first["memory_refs"].as_array().unwrap().len()
    );
    app.shutdown().await;
}

#[tokio::test]
async fn leave_tools_and_roles_are_left_alone() {
    let app = spawn_app().await;
    let doc = fixture("openai");
    let body = request(
        &doc,
        "pointer",
        json!({"leave_tools": ["http_get"], "leave_roles": ["user"]}),
    );
    let answer = post(&app, "/v1/compress", &body).await.json();
    let subtypes: Vec<&str> = answer["memory_refs"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["subtype"].as_str())
        .collect();
    assert!(!subtypes.contains(&"http_get") && subtypes.contains(&"fetch_url"));
    let out = answer["messages"].as_array().unwrap();
    let input = doc["messages"].as_array().unwrap();
    for (i, m) in input.iter().enumerate() {
        if m["role"] == "user" {
            assert_eq!(&out[i], m);
        }
    }
    app.shutdown().await;
}

#[tokio::test]
async fn bad_requests_name_what_is_wrong() {
    let app = spawn_app().await;
    let call = |messages: Value, extra: Value| {
        let mut body = json!({"messages": messages, "strategy": "pointer"});
        body.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        body
    };
    let resp = post(&app, "/v1/compress", &call(json!([{"role": "system", "content": "x"}, {"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}, {"role": "user", "content": 7}]), json!({}))).await;
    let error = resp.assert_error(StatusCode::BAD_REQUEST, "invalid_messages");
    assert_eq!(error["path"], "messages[3].content");

    let resp = post(
        &app,
        "/v1/compress",
        &call(
            json!([{"role": "system", "content": "x"}]),
            json!({"strategy": "zip"}),
        ),
    )
    .await;
    let error = resp.assert_error(StatusCode::BAD_REQUEST, "invalid_field");
    assert_eq!(error["field"], "strategy");
    for name in [
        "pointer",
        "observation_masking",
        "sliding_window",
        "selective",
        "deletion",
    ] {
        assert!(error["message"].as_str().unwrap().contains(name));
    }

    let resp = post(
        &app,
        "/v1/compress",
        &call(json!([{"role": "user", "content": "hi"}]), json!({})),
    )
    .await;
    assert_eq!(
        resp.assert_error(StatusCode::BAD_REQUEST, "invalid_field")["field"],
        "format"
    );
    let resp = post(
        &app,
        "/v1/compress",
        &call(
            json!([{"role": "user", "content": "hi"}]),
            json!({"format": "gemini"}),
        ),
    )
    .await;
    assert_eq!(
        resp.assert_error(StatusCode::BAD_REQUEST, "invalid_field")["field"],
        "format"
    );

    let mixed = json!([{"role": "tool", "tool_call_id": "a", "content": "x"}, {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "b", "content": "y"}]}]);
    post(&app, "/v1/compress", &call(mixed, json!({})))
        .await
        .assert_error(StatusCode::BAD_REQUEST, "invalid_messages");

    let orphan = json!([{"role": "system", "content": "x"}, {"role": "tool", "tool_call_id": "nope", "content": "y"}]);
    let error = post(&app, "/v1/compress", &call(orphan, json!({})))
        .await
        .assert_error(StatusCode::BAD_REQUEST, "invalid_messages");
    assert_eq!(error["path"], "messages[1]");

    // (`system` is accepted between turns, as Anthropic's mid-conversation beta sends it.)
    let bad_anthropic = json!([{"role": "narrator", "content": "x"}]);
    let error = post(
        &app,
        "/v1/compress",
        &call(bad_anthropic, json!({"format": "anthropic"})),
    )
    .await
    .assert_error(StatusCode::BAD_REQUEST, "invalid_messages");
    assert_eq!(error["path"], "messages[0].role");

    let resp = post(
        &app,
        "/v1/compress",
        &json!({"messages": "nope", "strategy": "pointer"}),
    )
    .await;
    resp.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "invalid_json");
    let resp = post(
        &app,
        "/v1/compress",
        &call(json!([]), json!({"format": "openai", "summary_chars": 1})),
    )
    .await;
    assert_eq!(
        resp.assert_error(StatusCode::BAD_REQUEST, "invalid_field")["field"],
        "summary_chars"
    );
    app.shutdown().await;
}

#[tokio::test]
async fn nothing_to_do_changes_nothing() {
    let app = spawn_app().await;
    let messages =
        json!([{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]);
    for strategy in [
        "pointer",
        "observation_masking",
        "sliding_window",
        "selective",
        "deletion",
    ] {
        let answer = post(
            &app,
            "/v1/compress",
            &json!({"messages": messages, "strategy": strategy}),
        )
        .await
        .json();
        assert_eq!(answer["messages"], messages);
        assert_eq!(
            answer["report"]["tokens_before"],
            answer["report"]["tokens_after"]
        );
        assert_eq!(answer["memory_refs"], json!([]));
    }
    app.shutdown().await;
}

/// Tokens saved as a share of the tokens before.
fn saved_share(answer: &Value) -> f64 {
    let report = &answer["report"];
    report["tokens_saved"].as_f64().unwrap() / report["tokens_before"].as_f64().unwrap()
}

async fn selective_saves_40_percent_on_the_fixture(name: &str) {
    let app = spawn_app().await;
    let (_, answer) = check(&app, name, "selective", json!({})).await;
    let share = saved_share(&answer);
    assert!(
        share >= 0.40,
        "selective saved {:.1} % on {name}",
        share * 100.0
    );
    app.shutdown().await;
}

#[tokio::test]
async fn selective_saves_40_percent_on_the_openai_fixture() {
    selective_saves_40_percent_on_the_fixture("openai").await;
}

#[tokio::test]
async fn selective_saves_40_percent_on_the_anthropic_fixture() {
    selective_saves_40_percent_on_the_fixture("anthropic").await;
}

/// A 40-turn Anthropic agent run where every turn is a tool call and its
/// result: test runs, logs, listings; every seventh result holds a failure.
fn tool_run() -> Vec<Value> {
    let mut messages = vec![
        json!({"role": "user", "content": "The nightly build is red: find out why and fix it."}),
    ];
    for turn in 0..40 {
        let id = format!("toolu_{turn:02}");
        let (tool, output) = match turn % 3 {
            0 => (
                "run_tests",
                (0..120)
                    .map(|i| format!("tests/test_mod{turn}.py::test_case_{i} PASSED [{:>3}%]\n", i * 100 / 120))
                    .collect::<String>()
                    + "==== 120 passed in 12.40s ====\n",
            ),
            1 => (
                "read_log",
                (0..150)
                    .map(|i| format!("2026-11-24T10:{:02}:{:02}Z INFO worker-{turn} processed batch {i} in 41ms\n", i / 60, i % 60))
                    .collect(),
            ),
            _ => (
                "list_files",
                (0..180)
                    .map(|i| format!("-rw-r--r-- 1 dev dev {:>6} Nov 24 10:00 src/module_{turn}/file_{i}.rs\n", 1000 + i * 37))
                    .collect(),
            ),
        };
        let output = if turn % 7 == 3 {
            format!(
                "{output}FAILED tests/test_mod{turn}.py::test_refund - AssertionError: 3 != 4\n"
            )
        } else {
            output
        };
        messages.push(json!({"role": "assistant", "content": [
            {"type": "text", "text": format!("Step {turn}: calling {tool}.")},
            {"type": "tool_use", "id": id, "name": tool, "input": {"turn": turn}}]}));
        messages.push(json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": id, "content": output}]}));
    }
    messages
}

#[tokio::test]
async fn selective_saves_40_percent_on_a_40_turn_tool_run_and_keeps_failures_inline() {
    let app = spawn_app().await;
    let input = tool_run();
    let body = json!({"messages": input, "model": "claude-sonnet-4-5", "strategy": "selective"});
    let answer = post(&app, "/v1/compress", &body).await.json();
    let output = answer["messages"].as_array().unwrap().clone();
    let share = saved_share(&answer);
    assert!(share >= 0.40, "selective saved {:.1} %", share * 100.0);
    // Every call keeps its result message; a failure line stays inline, whole.
    assert_pairs("anthropic", &output);
    assert_eq!(output.len(), input.len(), "calls and results all stay");
    let mut failing = 0;
    for (before, after) in input.iter().zip(&output) {
        let before = texts_of(std::slice::from_ref(before)).concat();
        if let Some(line) = before.lines().find(|l| l.starts_with("FAILED tests/")) {
            failing += 1;
            let after = texts_of(std::slice::from_ref(after)).concat();
            assert!(after.contains(line), "{line} is not inline in {after}");
        }
    }
    assert_eq!(failing, 6);
    // The last 6 messages are untouched.
    assert_eq!(output[output.len() - 6..], input[input.len() - 6..]);
    // Every offloaded piece comes back byte for byte.
    let refs: Vec<String> = answer["memory_refs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_owned())
        .collect();
    assert!(refs.len() >= 20, "{} pieces offloaded", refs.len());
    assert_eq!(restore(&app, &output, &refs).await, input);
    // Compressing twice changes nothing.
    let mut again = body.clone();
    again["messages"] = Value::Array(output.clone());
    let second = post(&app, "/v1/compress", &again).await.json();
    assert_eq!(second["messages"], answer["messages"]);
    assert_eq!(second["report"]["tokens_saved"], 0);
    app.shutdown().await;
}

#[tokio::test]
async fn a_clients_reminders_in_a_user_turn_stay_for_the_model() {
    let app = spawn_app().await;
    let skills: String = (0..200)
        .map(|i| format!("- skill-{i}: what the skill does and when to use it\n"))
        .collect();
    let reminder = format!(
        "<system-reminder>\nThe following skills are available:\n{skills}</system-reminder>"
    );
    let output = "x ".repeat(5000);
    let messages = json!([
        {"role": "user", "content": [{"type": "text", "text": reminder}, {"type": "text", "text": "Fix the build."}]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "make"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": output}]},
    ]);
    for strategy in ["pointer", "sliding_window", "deletion"] {
        let body = json!({"messages": messages, "format": "anthropic", "strategy": strategy, "keep_recent": 1});
        let resp = post(&app, "/v1/compress", &body).await;
        assert_eq!(resp.status, StatusCode::OK, "{strategy}: {}", resp.json());
        let texts = texts_of(resp.json()["messages"].as_array().unwrap());
        assert!(
            texts.contains(&reminder),
            "{strategy} took the reminder away"
        );
    }
    app.shutdown().await;
}
