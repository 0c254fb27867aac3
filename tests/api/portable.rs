//! Export of a namespace and import into a fresh data directory: same ids,
//! contents and metadata; idempotent; corruption named; namespaces kept apart.

use axum::http::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{TestApp, noise_lines, spawn_app, spawn_app_with, tiny_frames};

/// Puts a small, a medium and a multi-frame memory with metadata; returns their ids.
async fn fill(app: &TestApp) -> Vec<String> {
    let small = app
        .put_text(
            "hello export\n",
            json!({"type": "NOTE", "title": "tiny", "tags": ["a", "b"], "thread": "t1", "pinned": true}),
        )
        .await;
    let medium = app
        .put_raw(
            "type=TOOL_OUTPUT&subtype=pytest&checkpoint=c1&directory=%2Fsrc&tags=x&ttl_seconds=86400",
            noise_lines(7, 40_000),
        )
        .await;
    assert!(medium.status.is_success(), "{medium:?}");
    let big = app
        .put_raw("type=DOCUMENT", noise_lines(8, 3_000_000))
        .await;
    assert!(big.status.is_success(), "{big:?}");
    vec![
        small["id"].as_str().unwrap().to_owned(),
        medium.json()["id"].as_str().unwrap().to_owned(),
        big.json()["id"].as_str().unwrap().to_owned(),
    ]
}

async fn export(app: &TestApp) -> Vec<u8> {
    let resp = app.get("/v1/export").await;
    assert_eq!(resp.status, StatusCode::OK, "{resp:?}");
    assert_eq!(resp.header("content-type"), Some("application/x-tar"));
    resp.body.to_vec()
}

async fn import(app: &TestApp, archive: Vec<u8>) -> crate::helpers::Resp {
    app.post("/v1/import", Some("application/x-tar"), &[], archive)
        .await
}

/// Metadata of a memory without what depends on the storage layout.
fn portable_meta(mut v: Value) -> Value {
    let o = v.as_object_mut().unwrap();
    o.remove("stored_bytes");
    v
}

#[tokio::test]
async fn import_into_a_fresh_data_dir_restores_ids_contents_and_metadata() {
    let source = spawn_app().await;
    let ids = fill(&source).await;
    // Reads change access statistics: those must travel too.
    source
        .get(&format!("/v1/memories/{}/lines?start=1&end=2", ids[0]))
        .await;
    tokio::time::sleep(std::time::Duration::from_millis(1200)).await; // access flush
    let archive = export(&source).await;

    // Another layout than the source's. On S3 every frame read is one ranged
    // GET: 64-byte frames would make each read of the 3 MB memory 47,000 GETs
    // (a quarter of an hour against moto), so frames there are 4 KiB.
    let target = spawn_app_with(|c| {
        tiny_frames(c);
        if crate::helpers::s3_selected() {
            c.frame_bytes = 4096;
        }
    })
    .await;
    let resp = import(&target, archive).await;
    assert_eq!(resp.status, StatusCode::OK, "{resp:?}");
    assert_eq!(resp.json()["memories"], 3);
    assert_eq!(resp.json()["imported"], 3);
    assert_eq!(resp.json()["skipped"], 0);
    for id in &ids {
        let a = source.get(&format!("/v1/memories/{id}")).await.json();
        let b = target.get(&format!("/v1/memories/{id}")).await.json();
        assert_eq!(
            portable_meta(a.clone()),
            portable_meta(b),
            "metadata of {id}"
        );
        if *id == ids[0] {
            assert_eq!(a["pinned"], true, "the fixture must carry a pin");
        }
        if *id == ids[1] {
            assert!(a["expires_at"].is_string(), "the fixture must carry a TTL");
        }
        let a = source.get(&format!("/v1/memories/{id}/content")).await;
        let b = target.get(&format!("/v1/memories/{id}/content")).await;
        assert_eq!(b.status, StatusCode::OK);
        assert_eq!(a.body, b.body, "content of {id}");
    }
    // Restored objects are full citizens: slices work on the new layout.
    let lines = target
        .get(&format!("/v1/memories/{}/lines?start=100&end=102", ids[2]))
        .await;
    assert_eq!(lines.status, StatusCode::OK, "{lines:?}");
}

#[tokio::test]
async fn importing_twice_changes_nothing() {
    let source = spawn_app().await;
    let ids = fill(&source).await;
    let archive = export(&source).await;
    let target = spawn_app().await;
    assert_eq!(import(&target, archive.clone()).await.json()["imported"], 3);
    let before = target.get("/v1/memories").await.json();
    let again = import(&target, archive).await;
    assert_eq!(again.status, StatusCode::OK);
    assert_eq!(again.json()["imported"], 0);
    assert_eq!(again.json()["skipped"], 3);
    assert_eq!(target.get("/v1/memories").await.json(), before);
    assert_eq!(before["memories"].as_array().unwrap().len(), ids.len());
}

#[tokio::test]
async fn import_keeps_archived_bytes_without_redacting_them_again() {
    // Content that redaction would change if it ran at import: stored with
    // redaction off, the id is the hash of the secret-looking bytes.
    let source = spawn_app_with(|c| c.redact = false).await;
    let text = "token=ghp_0123456789abcdefghijklmnopqrstuvwxyzAB\n";
    let id = source.put_text(text, json!({})).await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let target = spawn_app().await;
    let resp = import(&target, export(&source).await).await;
    assert_eq!(resp.json()["imported"], 1, "{resp:?}");
    let content = target.get(&format!("/v1/memories/{id}/content")).await;
    assert_eq!(content.text(), text);
}

/// Offset of the data of entry `path` in a tar archive written by export.
fn entry_data(archive: &[u8], path: &str) -> (usize, usize) {
    let mut at = 0;
    while at + 512 <= archive.len() {
        let name_end = archive[at..at + 100]
            .iter()
            .position(|&b| b == 0)
            .unwrap_or(100);
        let name = std::str::from_utf8(&archive[at..at + name_end]).unwrap();
        let size_field = std::str::from_utf8(&archive[at + 124..at + 136]).unwrap();
        let size =
            usize::from_str_radix(size_field.trim_matches(|c: char| c == '\0' || c == ' '), 8)
                .unwrap();
        if name == path {
            return (at + 512, size);
        }
        at += 512 + size.div_ceil(512) * 512;
    }
    panic!("no entry {path}");
}

#[tokio::test]
async fn a_flipped_content_byte_is_named_and_that_memory_is_not_restored() {
    let source = spawn_app().await;
    let ids = fill(&source).await;
    let mut archive = export(&source).await;
    let (offset, size) = entry_data(&archive, &format!("objects/{}", ids[1]));
    archive[offset + size / 2] ^= 0x20;
    let target = spawn_app().await;
    let resp = import(&target, archive).await;
    let err = resp.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "invalid_archive");
    assert_eq!(err["item"], format!("objects/{}", ids[1]));
    let got = target.get(&format!("/v1/memories/{}", ids[1])).await;
    assert_eq!(got.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn bad_json_and_missing_objects_are_named() {
    let source = spawn_app().await;
    let ids = fill(&source).await;
    let archive = export(&source).await;
    let target = spawn_app().await;

    let mut bad = archive.clone();
    let (offset, _) = entry_data(&bad, "memories.jsonl");
    bad[offset] = b'[';
    let resp = import(&target, bad).await;
    let err = resp.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "invalid_archive");
    assert_eq!(err["item"], "memories.jsonl line 1");

    // Cut the archive right after the first object: the others are missing.
    let (offset, size) = entry_data(
        &archive,
        &format!("objects/{}", first_object(&archive, &ids)),
    );
    let mut cut = archive[..offset + size.div_ceil(512) * 512].to_vec();
    cut.extend_from_slice(&[0u8; 1024]);
    let resp = import(&target, cut).await;
    let err = resp.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "invalid_archive");
    assert!(err["item"].as_str().unwrap().starts_with("objects/"));
    assert!(
        err["message"].as_str().unwrap().contains("missing"),
        "{err}"
    );

    let resp = import(&target, b"not a tar archive at all".repeat(40)).await;
    resp.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "invalid_archive");
}

/// The id whose object comes first in the archive.
fn first_object(archive: &[u8], ids: &[String]) -> String {
    ids.iter()
        .min_by_key(|id| entry_data(archive, &format!("objects/{id}")).0)
        .unwrap()
        .clone()
}

#[tokio::test]
async fn export_and_import_stay_inside_the_callers_namespace() {
    let app =
        spawn_app_with(|c| c.api_keys = Some("alpha-key-1:alpha,beta-key-22:beta".into())).await;
    let put = app
        .put_json_as("alpha-key-1", json!({"content": "alpha only\n"}))
        .await;
    let id = put.json()["id"].as_str().unwrap().to_owned();
    app.put_json_as("beta-key-22", json!({"content": "beta only\n"}))
        .await;

    let beta = app.get_as("/v1/export", "beta-key-22").await;
    assert_eq!(beta.status, StatusCode::OK);
    let text = String::from_utf8_lossy(&beta.body);
    assert!(
        !text.contains(&id) && !text.contains("alpha"),
        "beta's export shows alpha"
    );

    let alpha = app.get_as("/v1/export", "alpha-key-1").await.body.to_vec();
    let resp = app
        .post(
            "/v1/import",
            Some("application/x-tar"),
            &[("authorization", "Bearer beta-key-22")],
            alpha,
        )
        .await;
    assert_eq!(resp.json()["imported"], 1, "{resp:?}");
    assert_eq!(
        app.get_as(&format!("/v1/memories/{id}"), "beta-key-22")
            .await
            .status,
        StatusCode::OK
    );
}
