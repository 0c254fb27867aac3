//! Per-namespace limits: a request rate and requests in flight, off by
//! default; over a limit, 429 with `Retry-After` (the provider's shape on
//! the proxy); a stream holds its place until it ends.

use serde_json::{Value, json};

use super::{metrics_of, serve, upstream};

const KEY: &str = "limits-key-000001";

#[tokio::test]
async fn over_the_rate_a_namespace_gets_429_with_retry_after() {
    let server = serve(|c| {
        c.api_keys = Some(format!("{KEY}:limited"));
        c.limit_rate = 1;
        c.limit_burst = 3;
    })
    .await;
    let http = reqwest::Client::new();
    let mut statuses = Vec::new();
    for _ in 0..5 {
        let answer = http
            .get(format!("{}/v1/stats", server.base))
            .bearer_auth(KEY)
            .send()
            .await
            .unwrap();
        statuses.push(answer.status().as_u16());
        if answer.status() == 429 {
            let retry: u64 = answer.headers()["retry-after"]
                .to_str()
                .unwrap()
                .parse()
                .unwrap();
            assert!((1..=2).contains(&retry), "{retry}");
            let body: Value = answer.json().await.unwrap();
            assert_eq!(body["error"]["code"], "rate_limited", "{body}");
        }
    }
    assert_eq!(statuses, [200, 200, 200, 429, 429]);
    // Health and metrics are not limited; the refusals are counted.
    let metrics = metrics_of(&server.base).await;
    assert!(
        metrics.contains("cairn_limit_rejections_total{limit=\"rate\",surface=\"api\"} 2"),
        "{metrics}"
    );
}

#[tokio::test]
async fn a_stream_holds_its_place_until_it_ends() {
    let up = upstream();
    let server = serve(|c| {
        c.upstream_openai_url = Some(format!("{}/v1", up.url));
        c.limit_concurrent = 1;
    })
    .await;
    let http = reqwest::Client::new();
    let chat = |stream: bool| json!({"model": "gpt-4o", "stream": stream, "messages": [{"role": "user", "content": "hi"}]});
    let post = |body: Value, scenario: &'static str| {
        http.post(format!("{}/v1/chat/completions", server.base))
            .header("authorization", "Bearer sk-test")
            .header("x-test-scenario", scenario)
            .json(&body)
            .send()
    };
    let mut slow = post(chat(true), "slow").await.unwrap();
    assert_eq!(slow.status(), 200);
    assert!(slow.chunk().await.unwrap().is_some());
    // While the stream runs, the namespace's one place is taken.
    let refused = post(chat(false), "").await.unwrap();
    assert_eq!(refused.status(), 429);
    assert!(refused.headers().contains_key("retry-after"));
    // A limit passes: the SDKs may retry it (a spent budget says they may not).
    assert!(!refused.headers().contains_key("x-should-retry"));
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["error"]["type"], "requests", "OpenAI's shape: {body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("CAIRN_LIMIT_CONCURRENT")
    );
    // The stream ends (the client reads it to its end): the place is free again.
    while slow.chunk().await.unwrap().is_some() {}
    let again = post(chat(false), "").await.unwrap();
    assert_eq!(again.status(), 200);
}
