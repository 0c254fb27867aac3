//! `GET /v1/memories/{id}/bytes` and `GET /v1/memories/{id}/chunks/{n}`, with
//! default settings and with multi-frame objects.

use axum::http::StatusCode;
use base64::Engine;
use serde_json::Value;

use crate::helpers::{TestApp, in_both_layouts, noise_lines, split_lines};

const MAX_BYTES: u64 = 64 * 1024;
const CHUNK_BYTES: u64 = 32 * 1024;

/// The exact bytes of a JSON slice.
fn slice_bytes(body: &Value) -> Vec<u8> {
    match body["text_base64"].as_str() {
        Some(b64) => base64::engine::general_purpose::STANDARD
            .decode(b64)
            .unwrap(),
        None => body["text"]
            .as_str()
            .unwrap_or_else(|| panic!("no text: {body}"))
            .as_bytes()
            .to_vec(),
    }
}

/// Line (1-based) holding byte `offset` of `content`.
fn line_of(content: &[u8], offset: usize) -> u64 {
    let offset = offset.min(content.len().saturating_sub(1));
    1 + content[..offset].iter().filter(|b| **b == b'\n').count() as u64
}

async fn check_bytes(
    app: &TestApp,
    id: &str,
    content: &[u8],
    offset: u64,
    length: Option<u64>,
) -> Value {
    let uri = match length {
        Some(len) => format!("/v1/memories/{id}/bytes?offset={offset}&length={len}"),
        None => format!("/v1/memories/{id}/bytes?offset={offset}"),
    };
    let resp = app.get(&uri).await;
    assert_eq!(
        resp.status,
        StatusCode::OK,
        "{uri}: {}",
        String::from_utf8_lossy(&resp.body)
    );
    let body = resp.json();
    let len = length.unwrap_or(MAX_BYTES);
    let from = offset as usize;
    let to = (offset + len).min(content.len() as u64) as usize;
    let want = &content[from..to];
    assert_eq!(slice_bytes(&body), want, "{uri}");
    assert_eq!(body["id"], id);
    assert_eq!(body["offset"], offset);
    assert_eq!(body["length"], want.len());
    assert_eq!(
        body["uri"],
        format!("mem://{id}?offset={offset}&len={}", want.len())
    );
    assert_eq!(body["total_bytes"], content.len());
    assert_eq!(body["total_lines"], split_lines(content).len());
    assert_eq!(body["truncated"], false);
    assert_eq!(
        body["start"],
        line_of(content, from),
        "start: line of the first byte"
    );
    let end_line = if want.is_empty() {
        line_of(content, from)
    } else {
        line_of(content, to - 1)
    };
    assert_eq!(body["end"], end_line, "end: line of the last byte");
    let next = (to < content.len()).then(|| format!("mem://{id}?offset={to}&len={}", len.max(1)));
    assert_eq!(body["next"].as_str(), next.as_deref(), "{uri}");
    body
}

in_both_layouts!(
    byte_ranges_are_the_exact_bytes,
    the_default_length_is_64_kib,
    byte_next_pointers_walk_the_whole_content,
    a_length_over_65536_is_a_400_naming_the_limit,
    an_offset_past_the_end_is_a_400,
    bad_byte_parameters_are_a_400_invalid_query,
    the_octet_stream_byte_answer_has_position_headers,
    chunks_partition_the_content_exactly,
    chunks_of_content_without_newlines_are_cut_at_32_kib,
    a_chunk_index_past_the_last_is_a_400,
    a_non_numeric_chunk_index_is_a_400_invalid_path,
);

async fn byte_ranges_are_the_exact_bytes(app: &TestApp) {
    let mut content = noise_lines(9, 150_000);
    content[1000] = 0xff; // not UTF-8: answered with text_base64
    let id = app.put_id(content.clone()).await;
    for (offset, length) in [
        (0, Some(1)),
        (0, Some(100)),
        (63, Some(2)),
        (64, Some(64)),
        (999, Some(3)),
        (1234, Some(65_536)),
        (140_000, Some(65_536)),
        (149_999, Some(1)),
        (149_999, Some(10)),
        (150_000, Some(10)),
        (500, Some(0)),
        (70_000, None),
    ] {
        let body = check_bytes(app, &id, &content, offset, length).await;
        if (offset..offset + length.unwrap_or(MAX_BYTES)).contains(&1000) {
            assert!(body["text_base64"].is_string());
        }
    }
}

async fn the_default_length_is_64_kib(app: &TestApp) {
    let content = noise_lines(10, 100_000);
    let id = app.put_id(content.clone()).await;
    let resp = app.get(&format!("/v1/memories/{id}/bytes")).await;
    assert_eq!(resp.status, StatusCode::OK);
    let body = resp.json();
    assert_eq!(body["offset"], 0);
    assert_eq!(body["length"], MAX_BYTES);
    assert_eq!(slice_bytes(&body), &content[..MAX_BYTES as usize]);
    assert_eq!(body["next"], format!("mem://{id}?offset=65536&len=65536"));
    check_bytes(app, &id, &content, 0, None).await;
}

async fn byte_next_pointers_walk_the_whole_content(app: &TestApp) {
    let content = noise_lines(12, 100_000);
    let id = app.put_id(content.clone()).await;
    let mut out = Vec::new();
    let mut uri = format!("/v1/memories/{id}/bytes?offset=0&length=30000");
    let mut pages = 0;
    loop {
        let body = app.get(&uri).await.json();
        out.extend(slice_bytes(&body));
        pages += 1;
        let Some(next) = body["next"].as_str() else {
            break;
        };
        let rest = next
            .strip_prefix(&format!("mem://{id}?"))
            .expect("next is a byte pointer");
        uri = format!(
            "/v1/memories/{id}/bytes?{}",
            rest.replace("len=", "length=")
        );
        assert!(pages < 10);
    }
    assert_eq!(pages, 4);
    assert_eq!(out, content);
}

async fn a_length_over_65536_is_a_400_naming_the_limit(app: &TestApp) {
    let id = app.put_id(noise_lines(13, 1000)).await;
    let error = app
        .get(&format!("/v1/memories/{id}/bytes?offset=0&length=65537"))
        .await
        .assert_error(StatusCode::BAD_REQUEST, "slice_too_large");
    assert_eq!(error["limit"], "max_slice_bytes");
    assert_eq!(error["max"], MAX_BYTES);
    assert_eq!(error["requested"], 65_537);
    assert_eq!(
        app.get(&format!("/v1/memories/{id}/bytes?length=65536"))
            .await
            .status,
        StatusCode::OK
    );
}

async fn an_offset_past_the_end_is_a_400(app: &TestApp) {
    let content = noise_lines(14, 1000);
    let id = app.put_id(content.clone()).await;
    for offset in [1001, 5000, i64::MAX as u64] {
        app.get(&format!(
            "/v1/memories/{id}/bytes?offset={offset}&length=10"
        ))
        .await
        .assert_error(StatusCode::BAD_REQUEST, "invalid_range");
    }
    // Beyond int64, as the OpenAPI document states the parameter: refused as a bad query.
    let beyond = app
        .get(&format!(
            "/v1/memories/{id}/bytes?offset={}&length=10",
            u64::MAX
        ))
        .await;
    assert_eq!(beyond.status, StatusCode::BAD_REQUEST);
    assert!(beyond.text().contains("largest int64"), "{}", beyond.text());
    // Exactly at the end: an empty slice, nothing next.
    let body = check_bytes(app, &id, &content, 1000, Some(10)).await;
    assert_eq!(body["text"], "");
}

async fn bad_byte_parameters_are_a_400_invalid_query(app: &TestApp) {
    let id = app.put_id(noise_lines(15, 1000)).await;
    for query in ["offset=-1", "offset=x", "length=-5", "length=1e3"] {
        app.get(&format!("/v1/memories/{id}/bytes?{query}"))
            .await
            .assert_error(StatusCode::BAD_REQUEST, "invalid_query");
    }
}

async fn the_octet_stream_byte_answer_has_position_headers(app: &TestApp) {
    let content: String = (1..=100).map(|n| format!("{n:>9}\n")).collect();
    let id = app.put_id(content.clone()).await;
    let resp = app
        .get_with(
            &format!("/v1/memories/{id}/bytes?offset=25&length=30"),
            &[("accept", "application/octet-stream")],
        )
        .await;
    assert_eq!(resp.status, StatusCode::OK);
    assert_eq!(&resp.body[..], &content.as_bytes()[25..55]);
    assert_eq!(resp.header("x-cairn-offset"), Some("25"));
    assert_eq!(resp.header("x-cairn-start"), Some("3"));
    assert_eq!(resp.header("x-cairn-end"), Some("6"));
    assert_eq!(resp.header("x-cairn-total-lines"), Some("100"));
    assert_eq!(resp.header("x-cairn-total-bytes"), Some("1000"));
    assert_eq!(resp.header("x-cairn-truncated"), Some("false"));
    assert_eq!(
        resp.header("x-cairn-next"),
        Some(format!("mem://{id}?offset=55&len=30").as_str())
    );
}

async fn chunks_partition_the_content_exactly(app: &TestApp) {
    let content = noise_lines(16, 200_000);
    let id = app.put_id(content.clone()).await;
    let count = app.get(&format!("/v1/memories/{id}")).await.json()["chunks"]
        .as_u64()
        .unwrap();
    assert_eq!(count, 200_000_u64.div_ceil(CHUNK_BYTES));
    let mut joined = Vec::new();
    for n in 0..count {
        let resp = app.get(&format!("/v1/memories/{id}/chunks/{n}")).await;
        assert_eq!(
            resp.status,
            StatusCode::OK,
            "chunk {n}: {}",
            String::from_utf8_lossy(&resp.body)
        );
        let body = resp.json();
        let bytes = slice_bytes(&body);
        assert_eq!(body["chunk"], n);
        assert_eq!(body["chunks"], count);
        assert_eq!(
            body["offset"],
            joined.len(),
            "chunk {n} starts where the previous ended"
        );
        assert_eq!(body["length"], bytes.len());
        assert_eq!(body["start"], line_of(&content, joined.len()));
        assert_eq!(
            body["uri"],
            format!("mem://{id}?offset={}&len={}", joined.len(), bytes.len())
        );
        if n + 1 < count {
            // Boundaries move forward to a line start (lines here are short).
            assert_eq!(bytes.last(), Some(&b'\n'), "chunk {n} ends a line");
            let nominal = (n + 1) * CHUNK_BYTES;
            let stop = (joined.len() + bytes.len()) as u64;
            assert!(
                stop >= nominal && stop <= nominal + 8192,
                "chunk {n} ends at {stop}"
            );
            assert_eq!(
                body["next"],
                format!("mem://{id}?offset={stop}&len={CHUNK_BYTES}")
            );
        } else {
            assert!(body["next"].is_null(), "the last chunk has no next");
        }
        joined.extend(bytes);
    }
    assert_eq!(joined, content, "chunks concatenate to the content");
}

async fn chunks_of_content_without_newlines_are_cut_at_32_kib(app: &TestApp) {
    let content: Vec<u8> = (0..100_000u32).map(|n| b'A' + (n % 26) as u8).collect();
    let id = app.put_id(content.clone()).await;
    let mut joined = Vec::new();
    for n in 0..4u64 {
        let body = app
            .get(&format!("/v1/memories/{id}/chunks/{n}"))
            .await
            .json();
        let bytes = slice_bytes(&body);
        let want = (100_000 - n * CHUNK_BYTES).min(CHUNK_BYTES);
        assert_eq!(bytes.len() as u64, want, "chunk {n}");
        assert_eq!(body["offset"], n * CHUNK_BYTES);
        joined.extend(bytes);
    }
    assert_eq!(joined, content);
}

async fn a_chunk_index_past_the_last_is_a_400(app: &TestApp) {
    let id = app.put_id(noise_lines(17, 40_000)).await;
    assert_eq!(
        app.get(&format!("/v1/memories/{id}/chunks/1")).await.status,
        StatusCode::OK
    );
    for n in [2, 3, 1000] {
        app.get(&format!("/v1/memories/{id}/chunks/{n}"))
            .await
            .assert_error(StatusCode::BAD_REQUEST, "invalid_range");
    }
    let empty = app.put_id("").await;
    app.get(&format!("/v1/memories/{empty}/chunks/0"))
        .await
        .assert_error(StatusCode::BAD_REQUEST, "invalid_range");
}

async fn a_non_numeric_chunk_index_is_a_400_invalid_path(app: &TestApp) {
    let id = app.put_id(noise_lines(18, 1000)).await;
    for n in ["x", "-1", "1.5", "99999999999999999999999"] {
        app.get(&format!("/v1/memories/{id}/chunks/{n}"))
            .await
            .assert_error(StatusCode::BAD_REQUEST, "invalid_path");
    }
}
