//! Damaged storage: stored data that fails verification is never served as
//! content; it is a 500 `integrity_error` naming the memory. And readiness
//! reports a blob store that is gone.

use axum::http::StatusCode;

use crate::helpers::{TestApp, noise_lines, spawn_app, spawn_app_with, tiny_frames};

/// Every read of the memory's content.
fn content_reads(id: &str) -> [String; 4] {
    [
        format!("/v1/memories/{id}/content"),
        format!("/v1/memories/{id}/lines?start=1&end=3"),
        format!("/v1/memories/{id}/bytes?offset=0&length=100"),
        format!("/v1/memories/{id}/chunks/0"),
    ]
}

async fn assert_integrity_errors(app: &TestApp, id: &str) {
    for uri in content_reads(id) {
        let error = app
            .get(&uri)
            .await
            .assert_error(StatusCode::INTERNAL_SERVER_ERROR, "integrity_error");
        assert_eq!(error["id"], id, "{uri}");
    }
    // Metadata is still there.
    assert_eq!(
        app.get(&format!("/v1/memories/{id}")).await.status,
        StatusCode::OK
    );
}

#[tokio::test]
async fn a_missing_blob_file_is_a_500_integrity_error() {
    let app = spawn_app_with(tiny_frames).await;
    let id = app.put_id(noise_lines(50, 5_000)).await;
    if app.skip_without_object_files("a_missing_blob_file_is_a_500_integrity_error") {
        return;
    }
    std::fs::remove_file(app.blob_path(&id)).unwrap();
    assert_integrity_errors(&app, &id).await;
}

#[tokio::test]
async fn a_corrupted_blob_file_is_a_500_integrity_error() {
    let app = spawn_app_with(tiny_frames).await;
    let content = noise_lines(51, 5_000);
    let id = app.put_id(content).await;
    if app.skip_without_object_files("a_corrupted_blob_file_is_a_500_integrity_error") {
        return;
    }
    let path = app.blob_path(&id);
    let mut stored = std::fs::read(&path).unwrap();
    // Damage the first frame's compressed bytes.
    for byte in &mut stored[4..20] {
        *byte ^= 0x5a;
    }
    std::fs::write(&path, stored).unwrap();
    assert_integrity_errors(&app, &id).await;
}

#[tokio::test]
async fn a_truncated_blob_file_is_a_500_integrity_error() {
    let app = spawn_app().await;
    let content = noise_lines(52, 3 * 1024 * 1024);
    let id = app.put_id(content).await;
    if app.skip_without_object_files("a_truncated_blob_file_is_a_500_integrity_error") {
        return;
    }
    let path = app.blob_path(&id);
    let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    file.set_len(100).unwrap();
    drop(file);
    assert_integrity_errors(&app, &id).await;
}

#[tokio::test]
async fn readyz_is_a_503_when_the_blob_store_is_gone() {
    let app = spawn_app().await;
    if app.skip_without_object_files("readyz_is_a_503_when_the_blob_store_is_gone") {
        return;
    }
    std::fs::remove_dir_all(app.dir.path().join("blobs")).unwrap();
    let resp = app.get("/readyz").await;
    assert_eq!(resp.status, StatusCode::SERVICE_UNAVAILABLE);
    let body = resp.json();
    assert_eq!(body["status"], "unavailable");
    assert_eq!(body["metadata"], "ok");
    assert!(body["blobs"].as_str().is_some_and(|b| b != "ok"), "{body}");
    assert_eq!(
        app.get("/healthz").await.status,
        StatusCode::OK,
        "still alive"
    );
}
