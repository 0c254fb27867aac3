//! The exchange ledger through the real router: each proxied request is
//! recorded with its rounds, retrievals, pieces and costs; the body the model
//! saw comes back byte for byte from the stored deltas; pages, filters and
//! namespaces hold.

use serde_json::{Value, json};

use super::{metrics_of, recorded, seq_output, serve, upstream};

const ALPHA: &str = "alpha-ledger-key-01";
const BETA: &str = "beta-ledger-key-002";

/// Turn `n` of a Claude-style conversation whose first tool result is big.
fn turn(n: usize, big: &str, stream: bool) -> Value {
    let mut messages = vec![
        json!({"role": "user", "content": "run the listing"}),
        json!({"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "seq"}}]}),
        json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": big}]}),
    ];
    for i in 1..n {
        messages.push(json!({"role": "assistant", "content": format!("answer {i}")}));
        messages.push(json!({"role": "user", "content": [{"type": "text", "text": format!("question {i}"), "cache_control": {"type": "ephemeral"}}]}));
    }
    json!({"model": "claude-sonnet-4-5", "max_tokens": 64, "stream": stream,
        "system": "You are terse.",
        "tools": [{"name": "Bash", "description": "run", "input_schema": {"type": "object"}}],
        "messages": messages})
}

async fn get(http: &reqwest::Client, url: &str, key: &str) -> (u16, Value) {
    let mut request = http.get(url);
    if !key.is_empty() {
        request = request.bearer_auth(key);
    }
    let answer = request.send().await.unwrap();
    let status = answer.status().as_u16();
    (status, answer.json().await.unwrap())
}

#[tokio::test]
async fn every_exchange_is_recorded_with_its_rounds_costs_and_the_body_the_model_saw() {
    let up = upstream();
    let server = serve(|c| {
        c.api_keys = Some(format!("{ALPHA}:alpha,{BETA}:beta"));
        c.upstream_anthropic_url = Some(up.url.clone());
        c.upstream_openai_url = Some(format!("{}/v1", up.url));
    })
    .await;
    let http = reqwest::Client::new();
    let big = seq_output(3_000, 1_234);
    for (n, stream) in [(1, false), (2, true), (3, false)] {
        let answer = http
            .post(format!("{}/v1/messages", server.base))
            .header("x-api-key", "sk-ant-test")
            .header("x-cairn-key", ALPHA)
            .header("x-claude-code-session-id", "session-7")
            .json(&turn(n, &big, stream))
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 200);
        let text = answer.text().await.unwrap();
        assert!(text.contains("FETCHED"), "turn {n}: {text}");
    }
    // One more in another thread, through the OpenAI API, with nothing to offload.
    let small = http
        .post(format!("{}/v1/chat/completions", server.base))
        .header("authorization", "Bearer sk-test")
        .header("x-cairn-key", ALPHA)
        .json(&json!({"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(small.status(), 200);

    let base = format!("{}/v1/exchanges", server.base);
    let (status, page) = get(&http, &format!("{base}?thread=session-7"), ALPHA).await;
    assert_eq!(status, 200, "{page}");
    let exchanges = page["exchanges"].as_array().unwrap();
    assert_eq!(exchanges.len(), 3, "{page}");
    assert!(
        exchanges[0]["id"].as_str() > exchanges[1]["id"].as_str(),
        "newest first"
    );
    let first = &exchanges[2];
    for (x, streamed) in exchanges.iter().zip([false, true, false]) {
        assert_eq!(x["status"], 200, "{x}");
        assert_eq!(x["outcome"], "answered", "{x}");
        assert_eq!(x["api"], "messages");
        assert_eq!(x["streamed"], streamed, "{x}");
        assert_eq!(x["tools_added"][0], "memory_fetch", "{x}");
        // The big result was taken out (listed by the first exchange, counted
        // as carried by the later ones), and the model fetched part of it back.
        let piece = &first["pieces"][0];
        assert!(piece["tokens"].as_u64().unwrap() > 1_000, "{first}");
        assert_eq!(piece["governed"], false);
        if x["id"] == first["id"] {
            assert_eq!(x["pieces_carried"], 0, "{x}");
        } else {
            assert!(x["pieces"].as_array().unwrap().is_empty(), "{x}");
            assert_eq!(x["pieces_carried"], 1, "{x}");
            assert_eq!(x["tokens_carried"], piece["tokens"]);
        }
        let rounds = x["rounds"].as_array().unwrap();
        assert_eq!(rounds.len(), 2, "{x}");
        let retrieval = &rounds[0]["retrievals"][0];
        assert_eq!(retrieval["tool"], "memory_fetch");
        let pointer = format!("mem://{}#L3-7", piece["memory_id"].as_str().unwrap());
        assert_eq!(retrieval["target"], pointer.as_str(), "{x}");
        assert!(retrieval["bytes"].as_u64().unwrap() > 0 && retrieval["error"] == false);
        assert_eq!(x["fetched_tokens"], retrieval["tokens"]);
        // Billed: the stand-in's usage (10 input + 50 read + 20 written, 5 out) at Sonnet's prices.
        let round_usd = (10.0 * 3.0 + 50.0 * 0.3 + 20.0 * 3.75 + 5.0 * 15.0) / 1e6;
        assert_eq!(rounds[0]["input"], 80);
        assert!(
            (rounds[0]["usd"].as_f64().unwrap() - round_usd).abs() < 1e-12,
            "{x}"
        );
        assert!((x["billed_usd"].as_f64().unwrap() - 2.0 * round_usd).abs() < 1e-12);
        // Untouched, the request held what was taken out, in one round (its
        // input is checked against the bytes below).
        let removed = x["tokens_client"].as_u64().unwrap() - x["tokens_upstream"].as_u64().unwrap();
        assert!(removed > 1_000, "{x}");
        let counterfactual = &x["counterfactual"];
        assert_eq!(counterfactual["output"], 5);
        assert!(counterfactual["usd"].as_f64().unwrap() > x["billed_usd"].as_f64().unwrap());
    }
    // Turn 3 shares turn 2's whole history, but this stand-in counts every
    // request as 80 tokens: untouched, it stays under what Anthropic caches
    // (the cached case is the replay check's, in .ci/run, and cost.rs's).
    let third = &exchanges[0]["counterfactual"];
    assert_eq!(third["cache_read"], 0, "{third}");
    assert!(
        third["method"]
            .as_str()
            .unwrap()
            .contains("under 1,024 tokens"),
        "{third}"
    );

    // What the model saw, byte for byte: each exchange's first upstream request.
    let raw: Vec<String> = recorded(&http, &up)
        .await
        .into_iter()
        .filter(|r| r["path"] == "/v1/messages")
        .map(|r| r["body"].as_str().unwrap().to_owned())
        .collect();
    let sent: Vec<Value> = raw
        .iter()
        .map(|b| serde_json::from_str(b).unwrap())
        .collect();
    assert_eq!(sent.len(), 6, "two rounds per turn");
    for (i, x) in exchanges.iter().rev().enumerate() {
        let url = format!("{base}/{}", x["id"].as_str().unwrap());
        let (status, detail) = get(&http, &url, ALPHA).await;
        assert_eq!(status, 200, "{detail}");
        assert_eq!(detail["upstream_body"], sent[2 * i], "exchange {i}");
        assert_eq!(detail["id"], x["id"]);
        // The untouched input: the upstream's count of round 1 (80) scaled by
        // the bytes the client sent over the bytes sent up.
        let client = serde_json::to_vec(&turn(i + 1, &big, i == 1))
            .unwrap()
            .len();
        let untouched = (80.0 * client as f64 / raw[2 * i].len() as f64).round() as u64;
        assert_eq!(x["counterfactual"]["input"], untouched, "exchange {i}: {x}");
        assert!(untouched > 80 * 2, "{x}");
    }

    // Pages, filters, the other thread.
    let (_, all) = get(&http, &format!("{base}?limit=2"), ALPHA).await;
    assert_eq!(all["exchanges"].as_array().unwrap().len(), 2);
    assert_eq!(all["exchanges"][0]["api"], "chat_completions");
    let method = all["exchanges"][0]["counterfactual"]["method"]
        .as_str()
        .unwrap();
    assert!(method.starts_with("as billed"), "{all}");
    let cursor = all["next_cursor"].as_str().unwrap();
    let (_, rest) = get(&http, &format!("{base}?limit=2&cursor={cursor}"), ALPHA).await;
    assert_eq!(rest["exchanges"].as_array().unwrap().len(), 2);
    assert!(rest["next_cursor"].is_null(), "{rest}");
    let (_, by_model) = get(&http, &format!("{base}?model=gpt-4o"), ALPHA).await;
    assert_eq!(by_model["exchanges"].as_array().unwrap().len(), 1);
    let (_, later) = get(&http, &format!("{base}?since=2999-01-01T00:00:00Z"), ALPHA).await;
    assert!(later["exchanges"].as_array().unwrap().is_empty());

    // Another namespace sees nothing of these; bad input is a 4xx that says why.
    let (_, theirs) = get(&http, &base, BETA).await;
    assert!(
        theirs["exchanges"].as_array().unwrap().is_empty(),
        "{theirs}"
    );
    let id = exchanges[0]["id"].as_str().unwrap();
    let (status, _) = get(&http, &format!("{base}/{id}"), BETA).await;
    assert_eq!(status, 404);
    let (status, error) = get(&http, &format!("{base}?cursor=nope"), ALPHA).await;
    assert_eq!(status, 400, "{error}");
    let (status, _) = get(&http, &format!("{base}/not-an-id"), ALPHA).await;
    assert_eq!(status, 404);
    let (status, _) = get(&http, &format!("{base}?since=yesterday"), ALPHA).await;
    assert_eq!(status, 400);
    // A query string that does not parse is a JSON error too (get parses the body).
    let (status, error) = get(&http, &format!("{base}?limit=-1e99"), ALPHA).await;
    assert_eq!(
        (status, error["error"]["code"].is_string()),
        (400, true),
        "{error}"
    );
    let unauthenticated = http.get(&base).send().await.unwrap();
    assert_eq!(unauthenticated.status(), 401);

    // The metrics carry billed against counterfactual cost and the fetch-back tokens.
    let metrics = metrics_of(&server.base).await;
    for needle in [
        "cairn_proxy_cost_usd_total{kind=\"billed\",provider=\"anthropic\"}",
        "cairn_proxy_cost_usd_total{kind=\"counterfactual\",provider=\"anthropic\"}",
        "cairn_proxy_fetched_tokens_total{provider=\"anthropic\"}",
        "cairn_proxy_offloaded_tokens_total{provider=\"anthropic\"}",
    ] {
        assert!(metrics.contains(needle), "{needle} missing");
    }
}

/// A conversation at the `pointer_only` tier whose one governable text sits
/// early, before a long tail of small texts: `parts` text parts of 900
/// characters follow it (none the governor may take).
fn governable(api: &str, parts: usize) -> Value {
    let early: String = (0..50)
        .map(|i| format!("early output line {i:02} ....\n"))
        .collect();
    let tail: Vec<Value> = (0..parts)
        .map(|i| json!({"type": "text", "text": format!("{i:03} {}", "small text ".repeat(81))}))
        .collect();
    match api {
        "chat" => json!({"model": "gpt-4o", "messages": [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": early},
            {"role": "user", "content": tail}]}),
        _ => json!({"model": "claude-sonnet-4-5", "max_tokens": 64, "messages": [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "ls", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": early}]},
            {"role": "assistant", "content": "next"},
            {"role": "user", "content": tail}]}),
    }
}

#[tokio::test]
async fn the_governor_rewrites_only_when_it_pays_under_the_providers_caching() {
    let up = upstream();
    let server = serve(|c| {
        c.upstream_anthropic_url = Some(up.url.clone());
        c.upstream_openai_url = Some(format!("{}/v1", up.url));
        c.governor_warn_tokens = 500;
        c.governor_pointer_only_tokens = 1_000;
    })
    .await;
    let http = reqwest::Client::new();
    // OpenAI caches the prefix by itself: taking ~500 tokens out of the
    // third message would write ~7,000 tokens to the cache again.
    let answer = http
        .post(format!("{}/v1/chat/completions", server.base))
        .header("authorization", "Bearer sk-test")
        .json(&governable("chat", 30))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);
    assert_eq!(answer.headers()["x-cairn-tier"], "pointer_only");
    assert_eq!(answer.headers()["x-cairn-offloaded"], "0");
    // Anthropic without a cache_control breakpoint caches nothing: the rewrite is free.
    let answer = http
        .post(format!("{}/v1/messages", server.base))
        .header("x-api-key", "sk-ant-test")
        .json(&governable("messages", 30))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);
    assert_eq!(answer.headers()["x-cairn-offloaded"], "1");

    let (_, page) = get(&http, &format!("{}/v1/exchanges", server.base), "").await;
    let by_api = |api: &str| {
        page["exchanges"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["api"] == api)
            .cloned()
            .unwrap()
    };
    let kept = by_api("chat_completions");
    let decision = &kept["governor"];
    assert_eq!(decision["governed"], false, "{kept}");
    assert_eq!(decision["reason"], "does_not_pay");
    assert!(decision["cost_usd"].as_f64().unwrap() > decision["saving_usd"].as_f64().unwrap());
    assert!(
        decision["tail_tokens"].as_u64().unwrap()
            > 5 * decision["removed_tokens"].as_u64().unwrap()
    );
    assert!(kept["pieces"].as_array().unwrap().is_empty(), "{kept}");
    let taken = by_api("messages");
    assert_eq!(taken["governor"]["reason"], "pays", "{taken}");
    assert_eq!(taken["governor"]["governed"], true);
    assert_eq!(taken["governor"]["cost_usd"], 0.0);
    assert_eq!(taken["pieces"][0]["governed"], true, "{taken}");
}

#[tokio::test]
async fn a_secret_in_what_went_upstream_is_not_kept_in_the_ledger() {
    let up = upstream();
    let server = serve(|c| c.upstream_openai_url = Some(format!("{}/v1", up.url))).await;
    let http = reqwest::Client::new();
    // A GitHub token, built so that no scanner takes this file for a leak.
    let token = ["gh", "p_", "Zq8x2Lr5Tk9Vw3Ny7Bm1Hc4Jd6Fg0Sa2Pe5Q"].concat();
    let body = json!({"model": "gpt-4o", "messages": [
        {"role": "user", "content": format!("export GITHUB_TOKEN={token} then run it")}]});
    let answer = http
        .post(format!("{}/v1/chat/completions", server.base))
        .header("authorization", "Bearer sk-test")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);
    // The provider gets what the client sent; the ledger keeps it redacted.
    let sent = recorded(&http, &up).await;
    assert!(sent[0]["body"].as_str().unwrap().contains(&token));
    let (_, page) = get(&http, &format!("{}/v1/exchanges", server.base), "").await;
    let id = page["exchanges"][0]["id"].as_str().unwrap().to_owned();
    let (_, detail) = get(&http, &format!("{}/v1/exchanges/{id}", server.base), "").await;
    let kept = detail["upstream_body"].to_string();
    assert!(!kept.contains(&token), "{kept}");
    assert!(kept.contains("[REDACTED:"), "{kept}");
}

/// The exchanges Cairn at `base` recorded (its first page), oldest first.
async fn exchanges_in_order(http: &reqwest::Client, base: &str) -> Vec<Value> {
    let (_, page) = get(http, &format!("{base}/v1/exchanges"), "").await;
    let mut xs = page["exchanges"].as_array().unwrap().clone();
    xs.sort_by_key(|x| x["id"].as_str().unwrap().to_owned());
    xs
}

/// POSTs `body` to `path` of Cairn at `base` with the `key` header; asserts
/// a 200 and answers how many pieces the request went up without
/// (`x-cairn-offloaded`).
async fn offloaded(
    http: &reqwest::Client,
    base: &str,
    path: &str,
    key: (&str, &str),
    body: Value,
) -> String {
    let answer = http
        .post(format!("{base}{path}"))
        .header(key.0, key.1)
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);
    answer.headers()["x-cairn-offloaded"]
        .to_str()
        .unwrap()
        .to_owned()
}

/// A Claude Code-sized request (an ~88 KB envelope, cached) whose tool
/// results are `outputs`, the last one new.
fn behind_a_big_envelope(outputs: &[String]) -> Value {
    let mut messages = vec![json!({"role": "user", "content": "look around"})];
    for (i, out) in outputs.iter().enumerate() {
        messages.push(json!({"role": "assistant", "content": [
            {"type": "tool_use", "id": format!("t{i}"), "name": "Bash", "input": {"command": "ls"}}]}));
        messages.push(json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": format!("t{i}"), "content": out,
             "cache_control": {"type": "ephemeral"}}]}));
    }
    json!({"model": "claude-sonnet-4-5", "max_tokens": 64,
        "system": [{"type": "text", "text": "You are an agent. ".repeat(4_400)}],
        "tools": [{"name": "Bash", "description": "run", "input_schema": {"type": "object"}}],
        "messages": messages})
}

#[tokio::test]
async fn a_first_offload_is_made_only_when_it_pays_for_the_cache_its_tools_break() {
    let up = upstream();
    let server = serve(|c| c.upstream_anthropic_url = Some(up.url.clone())).await;
    let http = reqwest::Client::new();
    let send = |body: Value| {
        offloaded(
            &http,
            &server.base,
            "/v1/messages",
            ("x-api-key", "sk-ant-test"),
            body,
        )
    };
    // 9 KB early, behind ~22,000 tokens of envelope: offloading it (and
    // adding Cairn's tools, which come first in the cache order) would write
    // the whole prefix again for ~2,000 tokens saved. It goes up untouched.
    let small = seq_output(2_100, 1_000);
    assert!(
        small.len() > 9_000 && small.len() < 10_000,
        "{}",
        small.len()
    );
    assert_eq!(
        send(behind_a_big_envelope(std::slice::from_ref(&small))).await,
        "0"
    );
    // A 150 KB output next pays: it is offloaded with the tools, and the
    // 9 KB one before it goes too (the tools break the whole prefix anyway).
    let big = seq_output(28_000, 20_000);
    assert!(big.len() > 140_000, "{}", big.len());
    assert_eq!(
        send(behind_a_big_envelope(&[small.clone(), big.clone()])).await,
        "2"
    );
    // And so on every later turn (a third output rides on the tools).
    let third = seq_output(2_000, 1_500);
    assert_eq!(
        send(behind_a_big_envelope(&[small.clone(), big.clone(), third])).await,
        "3"
    );

    let sent = recorded(&http, &up).await;
    let bodies: Vec<Value> = sent
        .iter()
        .map(|r| serde_json::from_str(r["body"].as_str().unwrap()).unwrap())
        .collect();
    let tools = |b: &Value| b["tools"].as_array().unwrap().len();
    // The first request went up as the client sent it: one tool, the 9 KB inline.
    assert_eq!(tools(&bodies[0]), 1);
    assert_eq!(bodies[0]["messages"][2]["content"][0]["content"], small);
    // Then Cairn's tools, and both outputs replaced by markers.
    assert!(tools(&bodies[1]) > 1, "{}", bodies[1]["tools"]);
    for at in [2, 4] {
        let marker = bodies[1]["messages"][at]["content"][0]["content"].to_string();
        assert!(
            marker.starts_with("\"[cairn: ") && marker.contains("mem://") && marker.len() < 3_000,
            "{marker}"
        );
    }
    // The later turn carries the earlier ones byte for byte.
    let messages = |b: &Value| b["messages"].as_array().unwrap().clone();
    assert_eq!(messages(&bodies[2])[..5], messages(&bodies[1])[..5]);
    assert_eq!(bodies[2]["tools"], bodies[1]["tools"]);

    // The ledger says why, with the figures.
    let xs = exchanges_in_order(&http, &server.base).await;
    let kept = &xs[0]["first_offload"];
    assert_eq!(kept["from_message"], Value::Null, "{kept}");
    assert_eq!(kept["kept_messages"], 1);
    assert!(kept["cost_usd"].as_f64().unwrap() > kept["saving_usd"].as_f64().unwrap());
    assert!(kept["prefix_tokens"].as_u64().unwrap() > 19_000, "{kept}");
    let made = &xs[1]["first_offload"];
    assert_eq!(made["from_message"], 4, "{made}");
    assert!(made["saving_usd"].as_f64().unwrap() > made["cost_usd"].as_f64().unwrap());
    // The client never sees a pointer, so every turn weighs again, over the
    // same history, to the same message.
    assert_eq!(xs[2]["first_offload"], *made, "{}", xs[2]);
}

/// A Codex-shaped Responses request: long instructions, one shell call
/// whose output is `output`, then `later` turns of ~4,900 characters each
/// (under the offload threshold).
fn codex_request(output: &str, later: usize) -> Value {
    let mut input = vec![
        json!({"type": "message", "role": "user",
            "content": [{"type": "input_text", "text": "look around"}]}),
        json!({"type": "function_call", "call_id": "c1", "name": "shell",
            "arguments": "{\"command\":[\"seq\"]}"}),
        json!({"type": "function_call_output", "call_id": "c1", "output": output}),
    ];
    for i in 0..later {
        input.push(json!({"type": "message", "role": "assistant",
            "content": [{"type": "output_text", "text": format!("{i} {}", "noted. ".repeat(700))}]}));
        input.push(json!({"type": "message", "role": "user",
            "content": [{"type": "input_text", "text": format!("go on {i}")}]}));
    }
    json!({"model": "gpt-4.1", "instructions": "You are Codex. ".repeat(1_000),
        "tools": [{"type": "function", "name": "shell", "description": "run",
            "parameters": {"type": "object"}}],
        "input": input})
}

#[tokio::test]
async fn a_responses_conversation_keeps_its_first_offload_as_it_grows() {
    let up = upstream();
    let server = serve(|c| {
        c.upstream_openai_url = Some(format!("{}/v1", up.url));
        // The governor out of the way: only the first offload is looked at.
        c.governor_warn_tokens = 100_000_000;
        c.governor_pointer_only_tokens = 200_000_000;
    })
    .await;
    let http = reqwest::Client::new();
    let send = |body: Value| {
        offloaded(
            &http,
            &server.base,
            "/v1/responses",
            ("authorization", "Bearer sk-test"),
            body,
        )
    };
    // A 40 KB output pays for the tools it brings, on the first turn and on
    // every later one: the weighing reads only what comes before it. (The
    // `input` items stay in a Responses body; counted as its envelope, the
    // growing conversation once outweighed the same output 80 turns on.)
    let output = seq_output(8_000, 4_000);
    assert!(output.len() > 38_000, "{}", output.len());
    assert_eq!(send(codex_request(&output, 0)).await, "1");
    assert_eq!(send(codex_request(&output, 80)).await, "1");

    let sent = recorded(&http, &up).await;
    let bodies: Vec<Value> = sent
        .iter()
        .map(|r| serde_json::from_str(r["body"].as_str().unwrap()).unwrap())
        .filter(|b: &Value| b["input"].as_array().is_some_and(|i| i.len() >= 3))
        .collect();
    let marker = |b: &Value| b["input"][2]["output"].as_str().unwrap().to_owned();
    let first = marker(&bodies[0]);
    assert!(
        first.starts_with("[cairn: ") && first.contains("mem://"),
        "{first}"
    );
    let later = bodies
        .iter()
        .rfind(|b| b["input"].as_array().unwrap().len() > 100)
        .expect("the later turn went up");
    assert_eq!(marker(later), first, "the same marker on the later turn");

    let xs = exchanges_in_order(&http, &server.base).await;
    assert_eq!(xs[0]["first_offload"]["from_message"], 3, "{}", xs[0]);
    assert_eq!(xs[1]["first_offload"], xs[0]["first_offload"], "{}", xs[1]);
}

#[tokio::test]
async fn a_governor_rewrite_that_would_bring_cairns_tools_counts_the_whole_request() {
    let up = upstream();
    let server = serve(|c| {
        c.upstream_openai_url = Some(format!("{}/v1", up.url));
        c.governor_warn_tokens = 500;
        c.governor_pointer_only_tokens = 1_000;
    })
    .await;
    let http = reqwest::Client::new();
    // Nothing over the offload threshold; a 2,000-character text in the last
    // message is all the governor's tier would take out. Editing only the
    // tail would be cheap, but the pointer brings Cairn's tools, which come
    // first in the cache order: the whole request would be written again.
    let body = json!({"model": "gpt-4o", "messages": [
        {"role": "system", "content": "You are careful. ".repeat(1_200)},
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": "new text ".repeat(230)}]});
    let answer = http
        .post(format!("{}/v1/chat/completions", server.base))
        .header("authorization", "Bearer sk-test")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);
    assert_eq!(answer.headers()["x-cairn-tier"], "pointer_only");
    assert_eq!(answer.headers()["x-cairn-offloaded"], "0");
    let sent = recorded(&http, &up).await;
    let upstream: Value = serde_json::from_str(sent[0]["body"].as_str().unwrap()).unwrap();
    assert!(upstream.get("tools").is_none(), "{upstream}");
    let (_, page) = get(&http, &format!("{}/v1/exchanges", server.base), "").await;
    let decision = &page["exchanges"][0]["governor"];
    assert_eq!(decision["reason"], "does_not_pay", "{decision}");
    // The tail weighed is the whole request and the tools, not the last message.
    assert!(
        decision["tail_tokens"].as_u64().unwrap() > 5_000,
        "{decision}"
    );
}
