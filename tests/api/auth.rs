//! API keys and namespaces: every `/v1` route needs a key; a key sees only its namespace.

use axum::body::Body;
use axum::http::{Request, StatusCode};
use serde_json::json;

use crate::helpers::{TestApp, enc, sha256_hex, spawn_app, spawn_app_with, tiny_frames};

const ALPHA: &str = "key-alpha-0001";
const BETA: &str = "key-beta-00002";

async fn spawn_with_keys() -> TestApp {
    spawn_app_with(|c| c.api_keys = Some(format!("{ALPHA}:alpha,{BETA}:beta"))).await
}

/// Puts `content` as `key` and returns the answer's id (asserting 201).
async fn put_as(app: &TestApp, key: &str, content: &str) -> String {
    let resp = app.put_json_as(key, json!({"content": content})).await;
    assert_eq!(
        resp.status,
        StatusCode::CREATED,
        "{}",
        String::from_utf8_lossy(&resp.body)
    );
    assert_eq!(resp.json()["deduplicated"], false);
    resp.json()["id"].as_str().unwrap().to_owned()
}

/// Every `/v1` read of one memory.
fn reads(id: &str) -> Vec<String> {
    vec![
        format!("/v1/memories/{id}"),
        format!("/v1/memories/{}", &id[..12]),
        format!("/v1/memories/{id}/lines"),
        format!("/v1/memories/{id}/bytes"),
        format!("/v1/memories/{id}/chunks/0"),
        format!("/v1/memories/{id}/content"),
        format!("/v1/memories/{id}/grep?pattern=alpha"),
        format!("/v1/memories/{}/grep?pattern=line", &id[..12]),
        format!("/v1/fetch?uri={}", enc(&format!("mem://{id}"))),
        format!(
            "/v1/fetch?uri={}",
            enc(&format!("mem://{}#L1-1", &id[..12]))
        ),
    ]
}

#[tokio::test]
async fn without_a_key_every_v1_route_is_a_401_with_www_authenticate() {
    let app = spawn_with_keys().await;
    let id = put_as(&app, ALPHA, "secret alpha content\n").await;
    let mut paths = reads(&id);
    paths.push("/v1/memories".to_owned());
    for path in &paths {
        let resp = app.get(path).await;
        resp.assert_error(StatusCode::UNAUTHORIZED, "unauthorized");
        assert_eq!(resp.header("www-authenticate"), Some("Bearer"), "{path}");
    }
    let put = app.put_json(json!({"content": "anonymous"})).await;
    put.assert_error(StatusCode::UNAUTHORIZED, "unauthorized");
    assert_eq!(put.header("www-authenticate"), Some("Bearer"));
    let raw = app.put_raw("", "anonymous raw").await;
    raw.assert_error(StatusCode::UNAUTHORIZED, "unauthorized");
    let delete = app.delete(&format!("/v1/memories/{id}")).await;
    delete.assert_error(StatusCode::UNAUTHORIZED, "unauthorized");
    // Nothing was stored or deleted without a key.
    assert_eq!(
        app.get_as(&format!("/v1/memories/{id}"), ALPHA)
            .await
            .status,
        StatusCode::OK
    );
    let list = app.get_as("/v1/memories", ALPHA).await.json();
    assert_eq!(list["memories"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn a_wrong_or_malformed_key_is_a_401() {
    let app = spawn_with_keys().await;
    for authorization in [
        "Bearer key-gamma-0003",
        "Bearer key-alpha-000",
        "Bearer ",
        "Basic a2V5LWFscGhhLTAwMDE=",
        ALPHA,
        "Token key-alpha-0001",
    ] {
        let resp = app
            .get_with("/v1/memories", &[("authorization", authorization)])
            .await;
        assert_eq!(resp.error_code(), "unauthorized");
        resp.assert_error(StatusCode::UNAUTHORIZED, "unauthorized");
        assert_eq!(
            resp.header("www-authenticate"),
            Some("Bearer"),
            "{authorization}"
        );
    }
}

#[tokio::test]
async fn a_right_key_is_accepted_with_either_case_of_bearer() {
    let app = spawn_with_keys().await;
    for authorization in [format!("Bearer {ALPHA}"), format!("bearer {ALPHA}")] {
        let resp = app
            .get_with("/v1/memories", &[("authorization", &authorization)])
            .await;
        assert_eq!(resp.status, StatusCode::OK, "{authorization}");
    }
}

#[tokio::test]
async fn memories_of_one_namespace_are_invisible_to_another() {
    let app = spawn_with_keys().await;
    let id = put_as(&app, ALPHA, "only alpha may read this\nsecond line\n").await;
    for path in reads(&id) {
        assert_eq!(
            app.get_as(&path, ALPHA).await.status,
            StatusCode::OK,
            "alpha reads {path}"
        );
        app.get_as(&path, BETA)
            .await
            .assert_error(StatusCode::NOT_FOUND, "not_found");
    }
    let list = app.get_as("/v1/memories", BETA).await.json();
    assert_eq!(list["memories"], json!([]));
    app.delete_as(&format!("/v1/memories/{id}"), BETA)
        .await
        .assert_error(StatusCode::NOT_FOUND, "not_found");
    assert_eq!(
        app.get_as(&format!("/v1/memories/{id}"), ALPHA)
            .await
            .status,
        StatusCode::OK,
        "beta's delete did not touch alpha's memory"
    );
}

#[tokio::test]
async fn the_same_content_is_new_in_each_namespace() {
    let app = spawn_with_keys().await;
    let content = "shared tool output\n";
    let a = app
        .put_json_as(
            ALPHA,
            json!({"content": content, "title": "alpha's", "tags": ["a"]}),
        )
        .await;
    assert_eq!(a.status, StatusCode::CREATED);
    let b = app
        .put_json_as(BETA, json!({"content": content, "tags": ["b"]}))
        .await;
    assert_eq!(
        b.status,
        StatusCode::CREATED,
        "never reveals that another namespace has it"
    );
    let b = b.json();
    assert_eq!(b["deduplicated"], false);
    assert_eq!(b["id"], sha256_hex(content.as_bytes()));
    assert!(
        b["title"].is_null(),
        "no field leaks from the other namespace"
    );
    assert_eq!(b["tags"], json!(["b"]));
    let again = app.put_json_as(BETA, json!({"content": content})).await;
    assert_eq!(again.status, StatusCode::OK);
    assert_eq!(again.json()["tags"], json!(["b"]));
    let alpha_view = app
        .get_as(
            &format!("/v1/memories/{}", b["id"].as_str().unwrap()),
            ALPHA,
        )
        .await
        .json();
    assert_eq!(alpha_view["tags"], json!(["a"]));
    assert_eq!(alpha_view["title"], "alpha's");
}

#[tokio::test]
async fn deleting_in_one_namespace_leaves_the_other_readable() {
    // Tiny frames: both namespaces share one multi-frame blob file.
    let app = spawn_app_with(|c| {
        tiny_frames(c);
        c.api_keys = Some(format!("{ALPHA}:alpha,{BETA}:beta"));
    })
    .await;
    let content = "kept by beta, dropped by alpha\n".repeat(200);
    let id = put_as(&app, ALPHA, &content).await;
    assert_eq!(put_as(&app, BETA, &content).await, id);
    let resp = app.delete_as(&format!("/v1/memories/{id}"), ALPHA).await;
    assert_eq!(resp.status, StatusCode::NO_CONTENT);
    app.get_as(&format!("/v1/memories/{id}"), ALPHA)
        .await
        .assert_error(StatusCode::NOT_FOUND, "not_found");
    for path in reads(&id) {
        assert_eq!(
            app.get_as(&path, BETA).await.status,
            StatusCode::OK,
            "beta still reads {path}"
        );
    }
    let whole = app
        .get_as(&format!("/v1/memories/{id}/content"), BETA)
        .await;
    assert_eq!(whole.text(), content);
}

#[tokio::test]
async fn listings_and_filters_stay_within_the_namespace() {
    let app = spawn_with_keys().await;
    for n in 0..3 {
        app.put_json_as(
            ALPHA,
            json!({"content": format!("alpha {n}"), "thread": "shared"}),
        )
        .await;
    }
    app.put_json_as(BETA, json!({"content": "beta 0", "thread": "shared"}))
        .await;
    let alpha = app
        .get_as("/v1/memories?thread=shared&limit=2", ALPHA)
        .await
        .json();
    assert_eq!(alpha["memories"].as_array().unwrap().len(), 2);
    let cursor = alpha["next_cursor"].as_str().unwrap();
    let rest = app
        .get_as(
            &format!("/v1/memories?thread=shared&limit=2&cursor={}", enc(cursor)),
            ALPHA,
        )
        .await
        .json();
    assert_eq!(rest["memories"].as_array().unwrap().len(), 1);
    let beta = app.get_as("/v1/memories?thread=shared", BETA).await.json();
    assert_eq!(beta["memories"].as_array().unwrap().len(), 1);
    assert_eq!(beta["memories"][0]["id"], sha256_hex(b"beta 0"));
}

#[tokio::test]
async fn a_raw_put_with_a_key_lands_in_its_namespace() {
    let app = spawn_with_keys().await;
    let resp = app
        .post(
            "/v1/memories?title=raw",
            Some("text/plain"),
            &[("authorization", &format!("Bearer {BETA}"))],
            "raw beta body\n",
        )
        .await;
    assert_eq!(resp.status, StatusCode::CREATED);
    let id = resp.json()["id"].as_str().unwrap().to_owned();
    assert_eq!(
        app.get_as(&format!("/v1/memories/{id}"), BETA).await.status,
        StatusCode::OK
    );
    app.get_as(&format!("/v1/memories/{id}"), ALPHA)
        .await
        .assert_error(StatusCode::NOT_FOUND, "not_found");
}

#[tokio::test]
async fn health_readiness_openapi_and_docs_need_no_key() {
    let app = spawn_with_keys().await;
    for path in ["/healthz", "/readyz", "/openapi.json"] {
        let resp = app.get(path).await;
        assert_eq!(resp.status, StatusCode::OK, "{path}");
        assert!(resp.header("www-authenticate").is_none());
    }
    let docs = app.get("/docs/").await;
    assert_eq!(docs.status, StatusCode::OK);
}

#[tokio::test]
async fn without_configured_keys_a_key_is_not_needed_and_any_is_ignored() {
    let app = spawn_app().await;
    let id = app.put_id("open access").await;
    assert_eq!(
        app.get(&format!("/v1/memories/{id}")).await.status,
        StatusCode::OK
    );
    let resp = app
        .get_as(&format!("/v1/memories/{id}"), "whatever-key")
        .await;
    assert_eq!(
        resp.status,
        StatusCode::OK,
        "one default namespace for everyone"
    );
}

#[tokio::test]
async fn an_auth_failure_is_answered_before_the_body_is_read() {
    let app = spawn_app_with(|c| {
        c.api_keys = Some(format!("{ALPHA}:alpha"));
        c.max_json_bytes = 10;
    })
    .await;
    let request = Request::post("/v1/memories")
        .header("content-type", "application/json")
        .body(Body::from(json!({"content": "x".repeat(100)}).to_string()))
        .unwrap();
    app.send(request)
        .await
        .assert_error(StatusCode::UNAUTHORIZED, "unauthorized");
}
