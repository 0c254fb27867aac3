//! Secret redaction at put: nothing secret reaches the stored content, the
//! summary or the files under the data directory; the answer counts what went.

use std::path::Path;

use axum::http::StatusCode;
use serde_json::json;

use crate::helpers::{TestApp, sha256_hex, spawn_app, spawn_app_with, tiny_frames};

#[path = "../common/fakes.rs"]
mod fakes;

use fakes::{Fake, fakes, ordinary};

/// Ordinary lines around one line (or block) per fake secret.
fn document(fakes: &[Fake]) -> String {
    let mut text = ordinary();
    for fake in fakes {
        text.push_str(&fake.line);
        text.push('\n');
    }
    text + &ordinary()
}

/// Every byte under `dir`, each zstd file also decompressed.
fn data_files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
                continue;
            }
            let bytes = std::fs::read(&path).unwrap();
            if path.extension().is_some_and(|e| e == "zst") {
                let plain = zstd::decode_all(&bytes[..]).unwrap();
                found.push((format!("{} (decompressed)", path.display()), plain));
            }
            found.push((path.display().to_string(), bytes));
        }
    }
    found
}

fn holds(haystack: &[u8], needle: &str) -> bool {
    memchr::memmem::find(haystack, needle.as_bytes()).is_some()
}

/// Asserts that no fake secret is anywhere: content, every line slice, summary, data files.
async fn assert_no_secret_anywhere(app: &TestApp, id: &str, fakes: &[Fake]) {
    let content = app.get(&format!("/v1/memories/{id}/content")).await;
    assert_eq!(content.status, StatusCode::OK);
    let lines = app
        .get(&format!("/v1/memories/{id}/lines?start=1&end=2000"))
        .await
        .json();
    let memory = app.get(&format!("/v1/memories/{id}")).await.json();
    let summary = memory["summary"].as_str().unwrap();
    assert!(
        summary.contains("[REDACTED"),
        "the summary shows no redacted line: {summary}"
    );
    let files = data_files(app.dir.path());
    for fake in fakes {
        assert!(
            !holds(&content.body, &fake.secret),
            "{} in the content",
            fake.kind
        );
        assert!(
            !lines["text"].as_str().unwrap().contains(&fake.secret),
            "{} in /lines",
            fake.kind
        );
        assert!(
            !summary.contains(&fake.secret),
            "{} in the summary",
            fake.kind
        );
        for (name, bytes) in &files {
            assert!(!holds(bytes, &fake.secret), "{} in {name}", fake.kind);
        }
    }
}

async fn redacts_every_kind_and_counts_it(app: &TestApp, seed: u64) {
    let fakes = fakes(seed);
    let text = document(&fakes);
    let resp = app
        .put_json(json!({ "content": text, "title": "deploy log" }))
        .await;
    assert_eq!(resp.status, StatusCode::CREATED, "{}", resp.text());
    let body = resp.json();
    let redacted = &body["redacted"];
    assert_eq!(redacted["scanned"], true);
    assert_eq!(redacted["total"], fakes.len() as u64, "{redacted}");
    for fake in &fakes {
        let expected = fakes.iter().filter(|f| f.kind == fake.kind).count() as u64;
        assert_eq!(
            redacted["kinds"][fake.kind], expected,
            "{}: {redacted}",
            fake.kind
        );
    }
    let id = body["id"].as_str().unwrap();
    let stored = app.get(&format!("/v1/memories/{id}/content")).await;
    assert_eq!(
        id,
        sha256_hex(&stored.body),
        "the id is the hash of the redacted content"
    );
    let stored = stored.text();
    assert!(
        stored.starts_with(&ordinary()) && stored.ends_with(&ordinary()),
        "ordinary lines changed:\n{stored}"
    );
    for fake in &fakes {
        assert!(
            stored.contains(&format!("[REDACTED:{}]", fake.kind)),
            "no {} marker:\n{stored}",
            fake.kind
        );
    }
    assert!(stored.contains("mysql://root:[REDACTED:url_password]@10.1.2.3:3306/prod"));
    assert_no_secret_anywhere(app, id, &fakes).await;
}

/// Content kept uncompressed in the metadata store, where a file scan sees it.
fn raw_in_database(config: &mut cairn::config::Config) {
    config.inline_max_bytes = 1 << 20;
}

#[tokio::test]
async fn secrets_are_redacted_from_content_kept_in_the_database() {
    let app = spawn_app_with(raw_in_database).await;
    redacts_every_kind_and_counts_it(&app, 1).await;
}

#[tokio::test]
async fn secrets_are_redacted_from_multi_frame_blobs() {
    let app = spawn_app_with(tiny_frames).await;
    redacts_every_kind_and_counts_it(&app, 2).await;
}

#[tokio::test]
async fn a_streamed_raw_upload_is_redacted_across_its_pieces() {
    let app = spawn_app_with(|c| {
        c.frame_bytes = 4096;
        c.inline_object_max_bytes = 0;
    })
    .await;
    let fakes = fakes(3);
    let mut text = String::new();
    for round in 0..200 {
        text.push_str(&format!("round {round}\n"));
        text.push_str(&document(&fakes));
    }
    // Pieces of 7 bytes: every secret is split between pieces.
    let pieces: Vec<Result<bytes::Bytes, std::io::Error>> = text
        .as_bytes()
        .chunks(7)
        .map(|c| Ok(bytes::Bytes::copy_from_slice(c)))
        .collect();
    let body = axum::body::Body::from_stream(futures::stream::iter(pieces));
    let request = axum::http::Request::post("/v1/memories?type=TOOL_OUTPUT&subtype=deploy")
        .header("content-type", "text/plain")
        .body(body)
        .unwrap();
    let resp = app.send(request).await;
    assert_eq!(resp.status, StatusCode::CREATED, "{}", resp.text());
    let body = resp.json();
    assert_eq!(body["redacted"]["total"], 200 * fakes.len() as u64);
    assert_eq!(body["redacted"]["kinds"]["private_key"], 200);
    let id = body["id"].as_str().unwrap();
    let (expected, _) = cairn::domain::redact::redact_text(&text);
    let stored = app.get(&format!("/v1/memories/{id}/content")).await;
    assert!(
        stored.body == expected.as_bytes(),
        "streamed redaction differs from whole-text redaction"
    );
    assert_no_secret_anywhere(&app, id, &fakes).await;
}

#[tokio::test]
async fn ordinary_content_is_stored_byte_for_byte() {
    let app = spawn_app().await;
    let text = ordinary().repeat(3);
    let body = app.put_text(&text, json!({})).await;
    assert_eq!(
        body["redacted"],
        json!({"total": 0, "kinds": {}, "scanned": true})
    );
    assert_eq!(body["id"], sha256_hex(text.as_bytes()));
    let id = body["id"].as_str().unwrap();
    let stored = app.get(&format!("/v1/memories/{id}/content")).await;
    assert_eq!(stored.text(), text);
}

#[tokio::test]
async fn with_redaction_off_content_is_stored_as_sent() {
    let layouts: [fn(&mut cairn::config::Config); 2] = [raw_in_database, tiny_frames];
    for layout in layouts {
        let app = spawn_app_with(|c| {
            layout(c);
            c.redact = false;
        })
        .await;
        let fakes = fakes(4);
        let text = document(&fakes);
        let body = app.put_text(&text, json!({})).await;
        assert_eq!(
            body["redacted"],
            json!({"total": 0, "kinds": {}, "scanned": false})
        );
        assert_eq!(body["id"], sha256_hex(text.as_bytes()));
        let id = body["id"].as_str().unwrap();
        let stored = app.get(&format!("/v1/memories/{id}/content")).await;
        assert_eq!(stored.text(), text);
        // The data-file scan of the other tests does see a secret that is stored.
        if !(app.objects_on_local_files() && app.metadata_in_local_file()) {
            eprintln!(
                "skipped (data not all under the data directory on {}): the data-file scan's self-check",
                app.backends.describe()
            );
            continue;
        }
        let files = data_files(app.dir.path());
        for fake in &fakes {
            assert!(
                files.iter().any(|(_, bytes)| holds(bytes, &fake.secret)),
                "{} not found",
                fake.kind
            );
        }
    }
}

#[tokio::test]
async fn binary_media_types_are_not_scanned() {
    let app = spawn_app().await;
    let fakes = fakes(5);
    let mut content = vec![0x89, b'P', b'N', b'G', 0, 0xff];
    content.extend_from_slice(document(&fakes).as_bytes());
    for mime in ["application/octet-stream", "image/png"] {
        let resp = app
            .post(
                &format!("/v1/memories?mime={}", crate::helpers::enc(mime)),
                Some("application/octet-stream"),
                &[],
                content.clone(),
            )
            .await;
        assert!(resp.status.is_success(), "{}", resp.text());
        let body = resp.json();
        assert_eq!(body["redacted"]["scanned"], false, "{mime}");
        assert_eq!(body["id"], sha256_hex(&content), "{mime}");
    }
}

#[tokio::test]
async fn the_config_flag_reads_cairn_redact() {
    use clap::Parser;
    let cli = cairn::config::Cli::try_parse_from(["cairn", "--redact", "false"]).unwrap();
    assert!(!cli.serve.redact);
    let cli = cairn::config::Cli::try_parse_from(["cairn"]).unwrap();
    assert!(cli.serve.redact, "redaction is on by default");
}
