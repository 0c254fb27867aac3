//! `GET /v1/memories/{id}/content`: the whole content, ranges, ETag and If-None-Match.

use axum::http::StatusCode;
use serde_json::json;

use crate::helpers::{
    TestApp, in_both_layouts, noise_lines, sha256_hex, spawn_app, spawn_app_with, tiny_frames,
};

in_both_layouts!(
    the_whole_content_comes_back_byte_identical,
    the_etag_is_the_quoted_id_and_if_none_match_gives_304,
    a_byte_range_gives_206_with_content_range,
    an_open_ended_range_runs_to_the_end,
    a_suffix_range_gives_the_last_bytes,
    an_unsatisfiable_range_is_a_416_with_the_size,
    malformed_or_multiple_ranges_are_ignored,
    the_content_type_is_the_memorys_mime,
    empty_content_is_an_empty_200,
);

async fn the_whole_content_comes_back_byte_identical(app: &TestApp) {
    let mut content = noise_lines(21, 70_000);
    content.extend_from_slice(b"\x00\xff binary tail \r\n\xfe");
    let id = app.put_id(content.clone()).await;
    let resp = app.get(&format!("/v1/memories/{id}/content")).await;
    assert_eq!(resp.status, StatusCode::OK);
    assert_eq!(resp.body.len(), content.len());
    assert!(resp.body[..] == content[..], "content differs");
    assert_eq!(
        resp.header("content-length"),
        Some(content.len().to_string().as_str())
    );
    assert_eq!(resp.header("accept-ranges"), Some("bytes"));
    assert_eq!(sha256_hex(&resp.body), id);
    // By prefix, too.
    let by_prefix = app
        .get(&format!("/v1/memories/{}/content", &id[..12]))
        .await;
    assert!(by_prefix.body[..] == content[..]);
}

async fn the_etag_is_the_quoted_id_and_if_none_match_gives_304(app: &TestApp) {
    let content = noise_lines(22, 5_000);
    let id = app.put_id(content.clone()).await;
    let uri = format!("/v1/memories/{id}/content");
    let etag = format!("\"{id}\"");
    let first = app.get(&uri).await;
    assert_eq!(first.header("etag"), Some(etag.as_str()));
    for matching in [
        etag.clone(),
        format!("W/{etag}"),
        format!("\"other\", {etag}"),
        "*".to_owned(),
    ] {
        let resp = app.get_with(&uri, &[("if-none-match", &matching)]).await;
        assert_eq!(
            resp.status,
            StatusCode::NOT_MODIFIED,
            "If-None-Match: {matching}"
        );
        assert!(resp.body.is_empty());
        assert_eq!(resp.header("etag"), Some(etag.as_str()));
    }
    let other = format!("\"{}\"", sha256_hex(b"other"));
    let resp = app.get_with(&uri, &[("if-none-match", &other)]).await;
    assert_eq!(resp.status, StatusCode::OK);
    assert!(resp.body[..] == content[..]);
    // A bare id without quotes is not the ETag.
    let resp = app.get_with(&uri, &[("if-none-match", &id)]).await;
    assert_eq!(resp.status, StatusCode::OK);
}

async fn a_byte_range_gives_206_with_content_range(app: &TestApp) {
    let content = noise_lines(23, 10_000);
    let id = app.put_id(content.clone()).await;
    let uri = format!("/v1/memories/{id}/content");
    for (a, b) in [
        (0u64, 0u64),
        (0, 99),
        (63, 64),
        (100, 4999),
        (9_000, 9_999),
        (5, 5),
    ] {
        let resp = app
            .get_with(&uri, &[("range", &format!("bytes={a}-{b}"))])
            .await;
        assert_eq!(resp.status, StatusCode::PARTIAL_CONTENT, "bytes={a}-{b}");
        assert_eq!(
            &resp.body[..],
            &content[a as usize..=b as usize],
            "bytes={a}-{b}"
        );
        assert_eq!(
            resp.header("content-range"),
            Some(format!("bytes {a}-{b}/10000").as_str())
        );
        assert_eq!(
            resp.header("content-length"),
            Some((b - a + 1).to_string().as_str())
        );
        assert_eq!(resp.header("etag"), Some(format!("\"{id}\"").as_str()));
    }
    // An end past the content is clipped.
    let resp = app.get_with(&uri, &[("range", "bytes=9990-20000")]).await;
    assert_eq!(resp.status, StatusCode::PARTIAL_CONTENT);
    assert_eq!(&resp.body[..], &content[9990..]);
    assert_eq!(resp.header("content-range"), Some("bytes 9990-9999/10000"));
}

async fn an_open_ended_range_runs_to_the_end(app: &TestApp) {
    let content = noise_lines(24, 3_000);
    let id = app.put_id(content.clone()).await;
    let resp = app
        .get_with(
            &format!("/v1/memories/{id}/content"),
            &[("range", "bytes=2500-")],
        )
        .await;
    assert_eq!(resp.status, StatusCode::PARTIAL_CONTENT);
    assert_eq!(&resp.body[..], &content[2500..]);
    assert_eq!(resp.header("content-range"), Some("bytes 2500-2999/3000"));
}

async fn a_suffix_range_gives_the_last_bytes(app: &TestApp) {
    let content = noise_lines(25, 3_000);
    let id = app.put_id(content.clone()).await;
    let uri = format!("/v1/memories/{id}/content");
    let resp = app.get_with(&uri, &[("range", "bytes=-100")]).await;
    assert_eq!(resp.status, StatusCode::PARTIAL_CONTENT);
    assert_eq!(&resp.body[..], &content[2900..]);
    assert_eq!(resp.header("content-range"), Some("bytes 2900-2999/3000"));
    let resp = app.get_with(&uri, &[("range", "bytes=-5000")]).await;
    assert_eq!(resp.status, StatusCode::PARTIAL_CONTENT);
    assert!(
        resp.body[..] == content[..],
        "a suffix longer than the content is all of it"
    );
    assert_eq!(resp.header("content-range"), Some("bytes 0-2999/3000"));
}

async fn an_unsatisfiable_range_is_a_416_with_the_size(app: &TestApp) {
    let content = noise_lines(26, 3_000);
    let id = app.put_id(content).await;
    let uri = format!("/v1/memories/{id}/content");
    for range in [
        "bytes=3000-",
        "bytes=3000-3005",
        "bytes=99999-100000",
        "bytes=-0",
    ] {
        let resp = app.get_with(&uri, &[("range", range)]).await;
        resp.assert_error(StatusCode::RANGE_NOT_SATISFIABLE, "range_not_satisfiable");
        assert_eq!(
            resp.header("content-range"),
            Some("bytes */3000"),
            "{range}"
        );
    }
}

async fn malformed_or_multiple_ranges_are_ignored(app: &TestApp) {
    let content = noise_lines(27, 3_000);
    let id = app.put_id(content.clone()).await;
    let uri = format!("/v1/memories/{id}/content");
    for range in [
        "bytes=0-1,5-6",
        "items=0-10",
        "bytes=50-10",
        "bytes=abc",
        "bytes",
    ] {
        let resp = app.get_with(&uri, &[("range", range)]).await;
        assert_eq!(resp.status, StatusCode::OK, "{range}");
        assert!(resp.body[..] == content[..], "{range}");
        assert!(resp.header("content-range").is_none());
    }
}

async fn the_content_type_is_the_memorys_mime(app: &TestApp) {
    let put = app
        .put_text(
            "# Heading\n\nSome *markdown* long enough to be framed.\n",
            json!({"mime": "text/markdown"}),
        )
        .await;
    let resp = app
        .get(&format!(
            "/v1/memories/{}/content",
            put["id"].as_str().unwrap()
        ))
        .await;
    assert_eq!(resp.header("content-type"), Some("text/markdown"));
    let raw = app
        .post(
            "/v1/memories",
            Some("application/x-ndjson"),
            &[],
            "{\"a\":1}\n{\"a\":2}\n{\"a\":3}\n",
        )
        .await
        .json();
    let resp = app
        .get(&format!(
            "/v1/memories/{}/content",
            raw["id"].as_str().unwrap()
        ))
        .await;
    assert_eq!(resp.header("content-type"), Some("application/x-ndjson"));
    let plain = app.put_id("no mime given, plain text it is\n").await;
    let resp = app.get(&format!("/v1/memories/{plain}/content")).await;
    assert_eq!(
        resp.header("content-type"),
        Some("application/octet-stream"),
        "put_raw sends octet-stream"
    );
    let json = app
        .put_text("json default mime, plain text\n", json!({}))
        .await;
    let resp = app
        .get(&format!(
            "/v1/memories/{}/content",
            json["id"].as_str().unwrap()
        ))
        .await;
    assert_eq!(resp.header("content-type"), Some("text/plain"));
}

async fn empty_content_is_an_empty_200(app: &TestApp) {
    let id = app.put_id("").await;
    let resp = app.get(&format!("/v1/memories/{id}/content")).await;
    assert_eq!(resp.status, StatusCode::OK);
    assert!(resp.body.is_empty());
    assert_eq!(resp.header("content-length"), Some("0"));
    let resp = app
        .get_with(
            &format!("/v1/memories/{id}/content"),
            &[("range", "bytes=0-")],
        )
        .await;
    assert_eq!(resp.status, StatusCode::RANGE_NOT_SATISFIABLE);
    assert_eq!(resp.header("content-range"), Some("bytes */0"));
}

// ----- storage layouts -------------------------------------------------------------

#[tokio::test]
async fn a_three_megabyte_memory_becomes_a_blob_file_and_reads_back_whole() {
    let app = spawn_app().await;
    let content = noise_lines(28, 3 * 1024 * 1024);
    let resp = app.put_raw("", content.clone()).await;
    assert_eq!(resp.status, StatusCode::CREATED);
    let put = resp.json();
    let id = put["id"].as_str().unwrap();
    let on_disk = app
        .object_size(id)
        .await
        .unwrap_or_else(|| panic!("expected a blob object for {id}"));
    assert_eq!(
        put["stored_bytes"], on_disk,
        "stored_bytes is the blob's size"
    );
    let back = app.get(&format!("/v1/memories/{id}/content")).await;
    assert_eq!(back.status, StatusCode::OK);
    assert_eq!(back.body.len(), content.len());
    assert!(back.body[..] == content[..], "content differs");
    // A range across the 1 MiB frame boundary.
    let resp = app
        .get_with(
            &format!("/v1/memories/{id}/content"),
            &[("range", "bytes=1048000-1049999")],
        )
        .await;
    assert_eq!(resp.status, StatusCode::PARTIAL_CONTENT);
    assert_eq!(&resp.body[..], &content[1_048_000..1_050_000]);
}

#[tokio::test]
async fn small_content_with_default_settings_makes_no_blob_file() {
    let app = spawn_app().await;
    let id = app.put_id(noise_lines(29, 1_000)).await;
    assert!(!app.object_exists(&id).await);
    let back = app.get(&format!("/v1/memories/{id}/content")).await;
    assert_eq!(sha256_hex(&back.body), id);
}

#[tokio::test]
async fn with_tiny_frames_even_small_content_is_a_multi_frame_blob() {
    let app = spawn_app_with(tiny_frames).await;
    let content = noise_lines(30, 1_000);
    let id = app.put_id(content.clone()).await;
    assert!(
        app.object_exists(&id).await,
        "tiny frames put every object in a blob file"
    );
    let back = app.get(&format!("/v1/memories/{id}/content")).await;
    assert!(back.body[..] == content[..]);
}

#[tokio::test]
async fn a_multi_frame_memory_reads_back_through_every_endpoint_alike() {
    let app = spawn_app_with(tiny_frames).await;
    let content = noise_lines(31, 4_321);
    let id = app.put_id(content.clone()).await;
    let whole = app.get(&format!("/v1/memories/{id}/content")).await;
    assert!(whole.body[..] == content[..]);
    let bytes = app
        .get(&format!("/v1/memories/{id}/bytes?offset=0&length=4321"))
        .await
        .json();
    assert_eq!(bytes["text"].as_str().unwrap().as_bytes(), &content[..]);
    let lines = app
        .get(&format!("/v1/memories/{id}/lines?start=1&end=2000"))
        .await
        .json();
    assert_eq!(lines["text"].as_str().unwrap().as_bytes(), &content[..]);
    let chunk = app.get(&format!("/v1/memories/{id}/chunks/0")).await.json();
    assert_eq!(chunk["text"].as_str().unwrap().as_bytes(), &content[..]);
}
