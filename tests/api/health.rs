//! `/healthz`, `/readyz` and `/docs`.

use axum::http::StatusCode;

use crate::helpers::spawn_app;

#[tokio::test]
async fn healthz_says_ok() {
    let app = spawn_app().await;
    let resp = app.get("/healthz").await;
    assert_eq!(resp.status, StatusCode::OK);
    let body = resp.json();
    assert_eq!(body["status"], "ok");
    assert_eq!(body["version"], env!("CARGO_PKG_VERSION"));
}

#[tokio::test]
async fn readyz_says_ready_when_both_stores_answer() {
    let app = spawn_app().await;
    let resp = app.get("/readyz").await;
    assert_eq!(resp.status, StatusCode::OK);
    let body = resp.json();
    assert_eq!(body["status"], "ready");
    assert_eq!(body["metadata"], "ok");
    assert_eq!(body["blobs"], "ok");
}

#[tokio::test]
async fn every_answer_carries_a_request_id() {
    let app = spawn_app().await;
    let resp = app.get("/healthz").await;
    assert!(resp.header("x-request-id").is_some_and(|id| !id.is_empty()));
    let given = app
        .get_with("/healthz", &[("x-request-id", "my-trace-123")])
        .await;
    assert_eq!(
        given.header("x-request-id"),
        Some("my-trace-123"),
        "a client's id is kept"
    );
    let error = app.get("/v1/memories/abc").await;
    assert!(
        error.header("x-request-id").is_some(),
        "errors carry one too"
    );
}

#[tokio::test]
async fn docs_serve_a_browsable_html_page() {
    let app = spawn_app().await;
    let mut resp = app.get("/docs").await;
    if resp.status.is_redirection() {
        let location = resp
            .header("location")
            .expect("a redirect names its target")
            .to_owned();
        assert_eq!(location, "/docs/");
        resp = app.get(&location).await;
    }
    assert_eq!(resp.status, StatusCode::OK);
    assert!(
        resp.header("content-type")
            .is_some_and(|t| t.starts_with("text/html"))
    );
    let page = resp.text().to_ascii_lowercase();
    assert!(
        page.contains("<html") && page.contains("swagger"),
        "not the Swagger UI page"
    );
    // The page's configuration points at the served document.
    let config = app.get("/docs/swagger-initializer.js").await;
    assert_eq!(config.status, StatusCode::OK);
    assert!(config.text().contains("/openapi.json"));
}
