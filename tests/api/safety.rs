//! Failure paths and browser-facing safety: a failing write never hangs a
//! put, stored content is never served as an active page, and a keyless
//! server refuses requests that only a web page would make.

use std::time::Duration;

use axum::http::StatusCode;

use crate::helpers::{noise_lines, spawn_app, spawn_app_with};

#[tokio::test]
async fn a_put_whose_object_cannot_be_written_fails_instead_of_hanging() {
    let app = spawn_app_with(|config| config.frame_bytes = 64 << 10).await;
    // Without its temp directory the blob store cannot create the object.
    std::fs::remove_dir_all(app.dir.path().join("tmp")).unwrap();
    let content = noise_lines(9, 4 << 20);
    let resp = tokio::time::timeout(Duration::from_secs(60), app.put_raw("", content))
        .await
        .expect("the put hung after its object write failed");
    assert!(resp.status.is_server_error(), "{resp:?}");
    assert!(resp.json()["error"]["code"].is_string());
    let after = app.put_raw("", "small content still works\n").await;
    assert_eq!(after.status, StatusCode::CREATED);
}

#[tokio::test]
async fn stored_html_is_served_as_inert_data() {
    let app = spawn_app().await;
    let resp = app
        .put_raw("mime=text/html", "<script>fetch('/v1/memories')</script>")
        .await;
    let id = resp.json()["id"].as_str().unwrap().to_owned();
    let content = app.get(&format!("/v1/memories/{id}/content")).await;
    assert_eq!(content.status, StatusCode::OK);
    assert_eq!(content.header("x-content-type-options"), Some("nosniff"));
    assert!(
        content
            .header("content-security-policy")
            .unwrap()
            .contains("sandbox")
    );
}

#[tokio::test]
async fn a_keyless_loopback_server_refuses_foreign_origins_and_hosts() {
    let app = spawn_app().await;
    for (name, value) in [
        ("origin", "https://evil.example"),
        ("host", "rebound.evil.example:8077"),
        ("origin", "null"),
    ] {
        let resp = app.get_with("/v1/memories", &[(name, value)]).await;
        assert_eq!(resp.status, StatusCode::FORBIDDEN, "{name}: {value}");
        assert_eq!(resp.error_code(), "forbidden");
    }
    for (name, value) in [
        ("origin", "http://localhost:3000"),
        ("host", "127.0.0.1:8077"),
        ("host", "localhost"),
    ] {
        let resp = app.get_with("/v1/memories", &[(name, value)]).await;
        assert_eq!(resp.status, StatusCode::OK, "{name}: {value}");
    }
}

#[tokio::test]
async fn a_server_with_keys_accepts_any_origin_with_a_valid_key() {
    let app = spawn_app_with(|config| config.api_keys = Some("key-alpha-0001:alpha".into())).await;
    let resp = app
        .get_with(
            "/v1/memories",
            &[
                ("origin", "https://app.example"),
                ("host", "cairn.internal:8077"),
                ("authorization", "Bearer key-alpha-0001"),
            ],
        )
        .await;
    assert_eq!(resp.status, StatusCode::OK);
}

#[tokio::test]
async fn a_full_page_of_200_still_points_to_the_next_page() {
    let app = spawn_app().await;
    for i in 0..201 {
        app.put_id(format!("memory number {i}\n")).await;
    }
    let first = app.get("/v1/memories?limit=200").await.json();
    assert_eq!(first["memories"].as_array().unwrap().len(), 200);
    let cursor = first["next_cursor"]
        .as_str()
        .expect("a next cursor after a full page of 200");
    let second = app
        .get(&format!("/v1/memories?limit=200&cursor={cursor}"))
        .await
        .json();
    assert_eq!(second["memories"].as_array().unwrap().len(), 1);
    assert!(second["next_cursor"].is_null());
}
