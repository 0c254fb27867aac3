//! `GET /openapi.json` is the committed `openapi/openapi.json`.
//!
//! After changing the API, refresh the committed file with
//! `UPDATE_OPENAPI=1 cargo test --test api openapi` (the same bytes as
//! `cargo run -- openapi > openapi/openapi.json`).

use std::path::PathBuf;

use axum::http::StatusCode;
use serde_json::Value;

use crate::helpers::spawn_app;

fn committed_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("openapi")
        .join("openapi.json")
}

#[tokio::test]
async fn the_served_document_equals_the_committed_file() {
    let app = spawn_app().await;
    let resp = app.get("/openapi.json").await;
    assert_eq!(resp.status, StatusCode::OK);
    assert!(
        resp.header("content-type")
            .is_some_and(|t| t.starts_with("application/json"))
    );
    let served = resp.json();
    let generated = cairn::http::openapi_document().to_pretty_json().unwrap();
    assert_eq!(
        served,
        serde_json::from_str::<Value>(&generated).unwrap(),
        "the served document is the one `cairn openapi` prints"
    );
    let path = committed_path();
    if std::env::var("UPDATE_OPENAPI").is_ok_and(|v| v == "1") {
        std::fs::write(&path, format!("{generated}\n")).unwrap();
        eprintln!("wrote {}", path.display());
        return;
    }
    let committed: Value = serde_json::from_str(
        &std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display())),
    )
    .unwrap();
    assert!(
        served == committed,
        "openapi/openapi.json is stale: run `UPDATE_OPENAPI=1 cargo test --test api openapi` and commit the file"
    );
}

#[tokio::test]
async fn the_document_lists_every_endpoint() {
    let app = spawn_app().await;
    let doc = app.get("/openapi.json").await.json();
    assert!(
        doc["openapi"]
            .as_str()
            .is_some_and(|v| v.starts_with("3.1")),
        "OpenAPI 3.1"
    );
    let paths = doc["paths"].as_object().unwrap();
    for (path, methods) in [
        ("/v1/memories", &["post", "get"][..]),
        ("/v1/memories/{id}", &["get", "delete"]),
        ("/v1/memories/{id}/content", &["get"]),
        ("/v1/memories/{id}/lines", &["get"]),
        ("/v1/memories/{id}/bytes", &["get"]),
        ("/v1/memories/{id}/chunks/{n}", &["get"]),
        ("/v1/fetch", &["get"]),
        ("/healthz", &["get"]),
        ("/readyz", &["get"]),
    ] {
        let item = paths
            .get(path)
            .unwrap_or_else(|| panic!("{path} is not documented"));
        for method in methods {
            assert!(
                item.get(*method).is_some(),
                "{method} {path} is not documented"
            );
        }
    }
    // /v1 routes declare the bearer scheme; health does not.
    assert!(doc["components"]["securitySchemes"]["bearer"].is_object());
    assert!(paths["/v1/memories"]["get"]["security"].is_array());
    assert!(paths["/healthz"]["get"].get("security").is_none());
}
