//! Error answers are JSON `{"error": {"code", "message"}}` wherever they come from.

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};

use crate::helpers::spawn_app;

#[tokio::test]
async fn errors_from_every_layer_share_one_shape() {
    let app = spawn_app().await;
    let id = app.put_id("error shapes\n").await;
    let cases = [
        (
            format!("/v1/memories/{}", &id[..5]),
            StatusCode::BAD_REQUEST,
            "invalid_id",
        ),
        (
            format!("/v1/memories/{}", crate::helpers::sha256_hex(b"none")),
            StatusCode::NOT_FOUND,
            "not_found",
        ),
        (
            format!("/v1/memories/{id}/lines?start=0"),
            StatusCode::BAD_REQUEST,
            "invalid_range",
        ),
        (
            format!("/v1/memories/{id}/lines?start=x"),
            StatusCode::BAD_REQUEST,
            "invalid_query",
        ),
        (
            format!("/v1/memories/{id}/chunks/x"),
            StatusCode::BAD_REQUEST,
            "invalid_path",
        ),
        (
            format!("/v1/memories/{id}/bytes?length=99999999"),
            StatusCode::BAD_REQUEST,
            "slice_too_large",
        ),
        (
            "/v1/fetch?uri=nope".to_owned(),
            StatusCode::BAD_REQUEST,
            "invalid_uri",
        ),
        (
            "/v1/memories?limit=0".to_owned(),
            StatusCode::BAD_REQUEST,
            "invalid_request",
        ),
    ];
    for (uri, status, code) in cases {
        let error = app.get(&uri).await.assert_error(status, code);
        let keys: Vec<&String> = error.as_object().unwrap().keys().collect();
        assert!(
            keys.contains(&&"code".to_owned()) && keys.contains(&&"message".to_owned()),
            "{uri}"
        );
    }
}

#[tokio::test]
async fn an_unknown_path_is_a_json_404() {
    let app = spawn_app().await;
    for path in ["/v1/nope", "/v2/memories", "/v1/memories/abc/unknown"] {
        app.get(path)
            .await
            .assert_error(StatusCode::NOT_FOUND, "not_found");
    }
}

#[tokio::test]
async fn a_wrong_method_is_a_json_405() {
    let app = spawn_app().await;
    let request = Request::builder()
        .method(Method::PUT)
        .uri("/v1/memories")
        .body(Body::from("x"))
        .unwrap();
    let resp = app.send(request).await;
    assert_eq!(resp.status, StatusCode::METHOD_NOT_ALLOWED);
    assert!(resp.json()["error"]["code"].is_string(), "{resp:?}");
}
