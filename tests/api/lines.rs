//! `GET /v1/memories/{id}/lines`: 1-based inclusive line slices with their guardrails,
//! checked against a model of the content, with default settings and with
//! multi-frame objects.

use axum::http::StatusCode;
use base64::Engine;
use serde_json::Value;

use crate::helpers::{TestApp, enc, in_both_layouts, noise_lines, spawn_app, split_lines};

const MAX_BYTES: usize = 64 * 1024;
const MAX_LINES: u64 = 2000;
const DEFAULT_LINES: u64 = 200;

/// What the server should answer for lines `start..=end` of `content` (default limits).
struct Expected {
    start: u64,
    end: u64,
    offset: u64,
    bytes: Vec<u8>,
    truncated: bool,
    next: Option<String>,
}

fn expected(id: &str, content: &[u8], start: Option<u64>, end: Option<u64>) -> Expected {
    let lines = split_lines(content);
    let total = lines.len() as u64;
    let start = start.unwrap_or(1);
    let end = end.unwrap_or(start + DEFAULT_LINES - 1);
    let requested = end - start + 1;
    let end = end.min(total.max(1));
    let offset: usize = lines[..(start - 1) as usize].iter().map(|l| l.len()).sum();
    let mut len = 0;
    let mut last = start - 1;
    for n in start..=end {
        let Some(line) = lines.get((n - 1) as usize) else {
            last = n; // only for empty content: an empty "line 1"
            continue;
        };
        if len + line.len() > MAX_BYTES {
            break;
        }
        len += line.len();
        last = n;
    }
    let follow = |last: u64| {
        (last < total)
            .then(|| format!("mem://{id}#L{}-{}", last + 1, (last + requested).min(total)))
    };
    if last < start {
        // One line longer than the cap: its head, cut on a character boundary.
        let mut cut = MAX_BYTES;
        let head = &content[offset..offset + MAX_BYTES];
        while std::str::from_utf8(&head[..cut]).is_err() && MAX_BYTES - cut < 3 {
            cut -= 1;
        }
        if std::str::from_utf8(&head[..cut]).is_err() {
            cut = MAX_BYTES; // not text: cut at the cap
        }
        return Expected {
            start,
            end: start,
            offset: offset as u64,
            bytes: head[..cut].to_vec(),
            truncated: true,
            next: Some(format!(
                "mem://{id}?offset={}&len={MAX_BYTES}",
                offset + cut
            )),
        };
    }
    Expected {
        start,
        end: last,
        offset: offset as u64,
        bytes: content[offset..offset + len].to_vec(),
        truncated: last < end,
        next: follow(last),
    }
}

fn query(start: Option<u64>, end: Option<u64>) -> String {
    match (start, end) {
        (None, None) => String::new(),
        (Some(s), None) => format!("?start={s}"),
        (None, Some(e)) => format!("?end={e}"),
        (Some(s), Some(e)) => format!("?start={s}&end={e}"),
    }
}

/// Asserts a JSON line slice against `want`.
#[track_caller]
fn assert_slice(body: &Value, id: &str, content: &[u8], want: &Expected) {
    let total_lines = split_lines(content).len() as u64;
    assert_eq!(body["id"], id);
    assert_eq!(body["start"], want.start, "start of {body}");
    assert_eq!(body["end"], want.end, "end");
    assert_eq!(
        body["uri"],
        format!("mem://{id}#L{}-{}", want.start, want.end)
    );
    assert_eq!(body["offset"], want.offset, "offset");
    assert_eq!(body["length"], want.bytes.len(), "length");
    assert_eq!(body["total_lines"], total_lines);
    assert_eq!(body["total_bytes"], content.len());
    assert_eq!(body["truncated"], want.truncated, "truncated");
    assert_eq!(body["next"].as_str(), want.next.as_deref(), "next");
    match std::str::from_utf8(&want.bytes) {
        Ok(text) => {
            assert_eq!(body["text"].as_str(), Some(text), "text");
            assert!(
                body.get("text_base64").is_none(),
                "no base64 for valid UTF-8"
            );
        }
        Err(_) => {
            assert_eq!(
                body["text"].as_str(),
                Some(String::from_utf8_lossy(&want.bytes).as_ref())
            );
            let exact = base64::engine::general_purpose::STANDARD
                .decode(
                    body["text_base64"]
                        .as_str()
                        .expect("text_base64 for invalid UTF-8"),
                )
                .unwrap();
            assert_eq!(exact, want.bytes, "text_base64 holds the exact bytes");
        }
    }
}

/// Requests lines `start..=end` and checks the answer against the model.
async fn check(
    app: &TestApp,
    id: &str,
    content: &[u8],
    start: Option<u64>,
    end: Option<u64>,
) -> Value {
    let resp = app
        .get(&format!("/v1/memories/{id}/lines{}", query(start, end)))
        .await;
    assert_eq!(
        resp.status,
        StatusCode::OK,
        "lines {start:?}..{end:?}: {}",
        String::from_utf8_lossy(&resp.body)
    );
    let body = resp.json();
    assert_slice(&body, id, content, &expected(id, content, start, end));
    body
}

/// Follows `next` pointers (through `/v1/fetch`) from the first slice and
/// returns the concatenated bytes.
async fn walk(app: &TestApp, id: &str, first: &str) -> Vec<u8> {
    let mut out = Vec::new();
    let mut uri = first.to_owned();
    for _ in 0..10_000 {
        let resp = app.get(&format!("/v1/fetch?uri={}", enc(&uri))).await;
        assert_eq!(
            resp.status,
            StatusCode::OK,
            "{uri}: {}",
            String::from_utf8_lossy(&resp.body)
        );
        let body = resp.json();
        assert_eq!(body["id"], id);
        match body["text_base64"].as_str() {
            Some(b64) => out.extend(
                base64::engine::general_purpose::STANDARD
                    .decode(b64)
                    .unwrap(),
            ),
            None => out.extend_from_slice(body["text"].as_str().unwrap().as_bytes()),
        }
        match body["next"].as_str() {
            Some(next) => uri = next.to_owned(),
            None => return out,
        }
    }
    panic!("next pointers never end");
}

// ----- checks run with both layouts ----------------------------------------------

in_both_layouts!(
    line_ranges_match_the_content_exactly,
    without_an_end_200_lines_are_served,
    next_names_the_following_range_of_the_same_size,
    walking_next_from_the_first_slice_yields_the_whole_content,
    an_end_past_the_last_line_is_clipped,
    a_last_line_without_a_newline_still_counts,
    crlf_lines_keep_their_carriage_return,
    invalid_utf8_is_answered_with_base64_of_the_exact_bytes,
    bad_ranges_are_a_400_invalid_range,
    more_lines_than_max_slice_lines_is_a_400_naming_the_limit,
    a_range_over_the_byte_cap_is_cut_at_the_last_whole_line,
    a_line_longer_than_the_byte_cap_is_served_in_part_with_a_byte_pointer,
    a_cut_long_line_never_splits_a_character,
    the_octet_stream_answer_is_the_exact_bytes_with_position_headers,
    an_empty_memory_has_one_empty_line_slice,
    a_range_of_exactly_64_kib_is_not_cut,
    a_line_of_exactly_64_kib_fits_and_one_byte_more_does_not,
);

async fn line_ranges_match_the_content_exactly(app: &TestApp) {
    let content = noise_lines(42, 20_000);
    let id = app.put_id(content.clone()).await;
    let total = split_lines(&content).len() as u64;
    assert!(total > 150, "the model content has many lines ({total})");
    let ranges = [
        (None, None),
        (Some(1), None),
        (Some(1), Some(1)),
        (Some(2), Some(2)),
        (Some(1), Some(10)),
        (Some(7), Some(31)),
        (Some(50), Some(50)),
        (Some(100), None),
        (None, Some(3)),
        (Some(1), Some(total)),
        (Some(total), Some(total)),
        (Some(total - 5), Some(total)),
        (Some(total - 5), None),
        (Some(3), Some(total + 1000)),
    ];
    for (start, end) in ranges {
        check(app, &id, &content, start, end).await;
    }
    for start in (1..=total).step_by(13) {
        check(app, &id, &content, Some(start), Some(start + start % 17)).await;
    }
}

async fn without_an_end_200_lines_are_served(app: &TestApp) {
    let content: String = (1..=500).map(|n| format!("line {n}\n")).collect();
    let id = app.put_id(content.clone()).await;
    let body = check(app, &id, content.as_bytes(), None, None).await;
    assert_eq!(body["start"], 1);
    assert_eq!(body["end"], 200);
    assert!(
        body["text"]
            .as_str()
            .unwrap()
            .starts_with("line 1\nline 2\n")
    );
    assert!(body["text"].as_str().unwrap().ends_with("line 200\n"));
    assert_eq!(body["next"], format!("mem://{id}#L201-400"));
    let body = check(app, &id, content.as_bytes(), Some(150), None).await;
    assert_eq!(body["end"], 349);
    let body = check(app, &id, content.as_bytes(), Some(450), None).await;
    assert_eq!(body["end"], 500);
    assert!(body["next"].is_null());
}

async fn next_names_the_following_range_of_the_same_size(app: &TestApp) {
    let content: String = (1..=100)
        .map(|n| format!("row {n:03} of the table\n"))
        .collect();
    let id = app.put_id(content.clone()).await;
    let body = check(app, &id, content.as_bytes(), Some(1), Some(10)).await;
    assert_eq!(body["next"], format!("mem://{id}#L11-20"));
    assert_eq!(
        body["text"],
        (1..=10)
            .map(|n| format!("row {n:03} of the table\n"))
            .collect::<String>()
    );
    let body = check(app, &id, content.as_bytes(), Some(91), Some(97)).await;
    assert_eq!(
        body["next"],
        format!("mem://{id}#L98-100"),
        "the last range is clipped"
    );
    let body = check(app, &id, content.as_bytes(), Some(98), Some(100)).await;
    assert!(body["next"].is_null(), "nothing follows the last line");
    let body = check(app, &id, content.as_bytes(), Some(42), Some(42)).await;
    assert_eq!(body["text"], "row 042 of the table\n");
    assert_eq!(body["next"], format!("mem://{id}#L43-43"));
}

async fn walking_next_from_the_first_slice_yields_the_whole_content(app: &TestApp) {
    let content = noise_lines(5, 30_000);
    let id = app.put_id(content.clone()).await;
    assert_eq!(walk(app, &id, &format!("mem://{id}#L1-37")).await, content);
    assert_eq!(walk(app, &id, &format!("mem://{id}")).await, content);
}

async fn an_end_past_the_last_line_is_clipped(app: &TestApp) {
    let content = "alpha line\nbeta line\ngamma line\n";
    let id = app.put_id(content).await;
    let body = check(app, &id, content.as_bytes(), Some(2), Some(50)).await;
    assert_eq!(body["end"], 3);
    assert_eq!(body["text"], "beta line\ngamma line\n");
    assert!(body["next"].is_null());
    assert_eq!(body["truncated"], false);
}

async fn a_last_line_without_a_newline_still_counts(app: &TestApp) {
    let content = "first line here\nsecond line here\nthird, unterminated";
    let id = app.put_id(content).await;
    let meta = app.get(&format!("/v1/memories/{id}")).await.json();
    assert_eq!(meta["lines"], 3);
    let body = check(app, &id, content.as_bytes(), Some(3), Some(3)).await;
    assert_eq!(body["text"], "third, unterminated");
    let body = check(app, &id, content.as_bytes(), Some(2), None).await;
    assert_eq!(body["text"], "second line here\nthird, unterminated");
    app.get(&format!("/v1/memories/{id}/lines?start=4"))
        .await
        .assert_error(StatusCode::BAD_REQUEST, "invalid_range");
}

async fn crlf_lines_keep_their_carriage_return(app: &TestApp) {
    let content = "windows line one\r\nwindows line two\r\n\r\nlast\r\n";
    let id = app.put_id(content).await;
    assert_eq!(
        app.get(&format!("/v1/memories/{id}")).await.json()["lines"],
        4
    );
    let body = check(app, &id, content.as_bytes(), Some(1), Some(1)).await;
    assert_eq!(body["text"], "windows line one\r\n");
    let body = check(app, &id, content.as_bytes(), Some(3), Some(4)).await;
    assert_eq!(body["text"], "\r\nlast\r\n");
}

async fn invalid_utf8_is_answered_with_base64_of_the_exact_bytes(app: &TestApp) {
    let mut content = b"valid first line\n".to_vec();
    content.extend_from_slice(b"bad \xff\xfe bytes and a split \xe2\x82\n");
    content.extend_from_slice(b"valid third line, long enough to span frames\n");
    let id = app.put_id(content.clone()).await;
    let body = check(app, &id, &content, Some(2), Some(2)).await;
    assert!(body["text"].as_str().unwrap().contains('\u{FFFD}'));
    let body = check(app, &id, &content, None, None).await;
    assert!(body["text_base64"].is_string());
    let body = check(app, &id, &content, Some(3), Some(3)).await;
    assert!(body.get("text_base64").is_none());
}

async fn bad_ranges_are_a_400_invalid_range(app: &TestApp) {
    let content: String = (1..=30).map(|n| format!("numbered line {n}\n")).collect();
    let id = app.put_id(content).await;
    for query in [
        "start=0",
        "start=0&end=5",
        "start=5&end=4",
        "start=31",
        "start=31&end=40",
        "start=1000",
    ] {
        app.get(&format!("/v1/memories/{id}/lines?{query}"))
            .await
            .assert_error(StatusCode::BAD_REQUEST, "invalid_range");
    }
    for query in ["start=abc", "start=-1", "end=x", "start=1.5"] {
        app.get(&format!("/v1/memories/{id}/lines?{query}"))
            .await
            .assert_error(StatusCode::BAD_REQUEST, "invalid_query");
    }
    assert_eq!(
        app.get(&format!("/v1/memories/{id}/lines?start=30&end=30"))
            .await
            .status,
        StatusCode::OK
    );
}

async fn more_lines_than_max_slice_lines_is_a_400_naming_the_limit(app: &TestApp) {
    let content: String = (1..=3000).map(|n| format!("{n}\n")).collect();
    let id = app.put_id(content.clone()).await;
    for (start, end) in [(1, 2001), (500, 2600), (1, 1_000_000)] {
        let error = app
            .get(&format!("/v1/memories/{id}/lines?start={start}&end={end}"))
            .await
            .assert_error(StatusCode::BAD_REQUEST, "slice_too_large");
        assert_eq!(error["limit"], "max_slice_lines");
        assert_eq!(error["max"], MAX_LINES);
        assert_eq!(error["requested"], end - start + 1);
    }
    let body = check(app, &id, content.as_bytes(), Some(1), Some(2000)).await;
    assert_eq!(body["end"], 2000);
    assert_eq!(body["next"], format!("mem://{id}#L2001-3000"));
}

async fn a_range_over_the_byte_cap_is_cut_at_the_last_whole_line(app: &TestApp) {
    // 1000 lines of 100 bytes: 655 whole lines fit in 64 KiB.
    let content: String = (1..=1000).map(|n| format!("{n:>99}\n")).collect();
    let id = app.put_id(content.clone()).await;
    let body = check(app, &id, content.as_bytes(), Some(1), Some(1000)).await;
    assert_eq!(body["truncated"], true);
    assert_eq!(body["end"], 655);
    assert_eq!(body["length"], 65_500);
    assert_eq!(body["next"], format!("mem://{id}#L656-1000"));
    let rest = app
        .get(&format!(
            "/v1/fetch?uri={}",
            enc(body["next"].as_str().unwrap())
        ))
        .await
        .json();
    assert_eq!(rest["start"], 656);
    assert_eq!(rest["end"], 1000);
    assert_eq!(rest["truncated"], false);
    assert!(rest["next"].is_null());
    let joined = format!(
        "{}{}",
        body["text"].as_str().unwrap(),
        rest["text"].as_str().unwrap()
    );
    assert_eq!(joined, content);
    // A range that just fits is not cut.
    let body = check(app, &id, content.as_bytes(), Some(11), Some(665)).await;
    assert_eq!(body["truncated"], false);
    // The cut is relative to the start.
    let body = check(app, &id, content.as_bytes(), Some(300), Some(1000)).await;
    assert_eq!(body["end"], 954);
    assert_eq!(body["next"], format!("mem://{id}#L955-1000"));
}

async fn a_line_longer_than_the_byte_cap_is_served_in_part_with_a_byte_pointer(app: &TestApp) {
    let mut content = b"short first line\n".to_vec();
    let long: Vec<u8> = (0..200_000u32)
        .map(|n| b"abcdefghijklmnopqrstuvwxyz"[(n % 26) as usize])
        .collect();
    content.extend_from_slice(&long);
    content.extend_from_slice(b"\nshort last line\n");
    let id = app.put_id(content.clone()).await;
    let body = check(app, &id, &content, Some(2), Some(2)).await;
    assert_eq!(body["truncated"], true);
    assert_eq!(body["length"], MAX_BYTES);
    assert_eq!(
        body["next"],
        format!("mem://{id}?offset={}&len={MAX_BYTES}", 17 + MAX_BYTES)
    );
    // Lines 1-3 stop after line 1: line 2 does not fit whole.
    let body = check(app, &id, &content, Some(1), Some(3)).await;
    assert_eq!(body["end"], 1);
    assert_eq!(body["truncated"], true);
    assert_eq!(body["next"], format!("mem://{id}#L2-3"));
    // Following the pointers from line 2 gives the rest of the content exactly.
    let rest = walk(app, &id, &format!("mem://{id}#L2-2")).await;
    assert_eq!(rest, &content[17..]);
}

async fn a_cut_long_line_never_splits_a_character(app: &TestApp) {
    let content = "€".repeat(30_000) + "\n"; // 3 bytes each: 65,536 is not a multiple of 3
    let id = app.put_id(content.clone()).await;
    let body = check(app, &id, content.as_bytes(), None, None).await;
    assert_eq!(body["length"], 65_535);
    assert!(body.get("text_base64").is_none());
    assert_eq!(body["text"].as_str().unwrap().chars().count(), 21_845);
    assert_eq!(body["next"], format!("mem://{id}?offset=65535&len=65536"));
    assert_eq!(
        walk(app, &id, &format!("mem://{id}")).await,
        content.as_bytes()
    );
}

async fn the_octet_stream_answer_is_the_exact_bytes_with_position_headers(app: &TestApp) {
    let content: String = (1..=1000).map(|n| format!("{n:>99}\n")).collect();
    let id = app.put_id(content.clone()).await;
    let resp = app
        .get_with(
            &format!("/v1/memories/{id}/lines?start=3&end=5"),
            &[("accept", "application/octet-stream")],
        )
        .await;
    assert_eq!(resp.status, StatusCode::OK);
    assert_eq!(
        resp.header("content-type"),
        Some("application/octet-stream")
    );
    assert_eq!(&resp.body[..], &content.as_bytes()[200..500]);
    assert_eq!(resp.header("x-cairn-start"), Some("3"));
    assert_eq!(resp.header("x-cairn-end"), Some("5"));
    assert_eq!(resp.header("x-cairn-offset"), Some("200"));
    assert_eq!(resp.header("x-cairn-total-lines"), Some("1000"));
    assert_eq!(resp.header("x-cairn-total-bytes"), Some("100000"));
    assert_eq!(resp.header("x-cairn-truncated"), Some("false"));
    assert_eq!(
        resp.header("x-cairn-next"),
        Some(format!("mem://{id}#L6-8").as_str())
    );
    // Truncated, and the end (no next).
    let cut = app
        .get_with(
            &format!("/v1/memories/{id}/lines?start=1&end=1000"),
            &[("accept", "application/octet-stream")],
        )
        .await;
    assert_eq!(cut.body.len(), 65_500);
    assert_eq!(cut.header("x-cairn-truncated"), Some("true"));
    assert_eq!(cut.header("x-cairn-end"), Some("655"));
    assert_eq!(
        cut.header("x-cairn-next"),
        Some(format!("mem://{id}#L656-1000").as_str())
    );
    let last = app
        .get_with(
            &format!("/v1/memories/{id}/lines?start=1000"),
            &[("accept", "application/octet-stream")],
        )
        .await;
    assert_eq!(&last.body[..], &content.as_bytes()[99_900..]);
    assert!(last.header("x-cairn-next").is_none());
    // Invalid UTF-8 comes back byte for byte.
    let binary = b"\x00\xff\xfe\n\x80\x81\n".to_vec();
    let bin_id = app.put_id(binary.clone()).await;
    let raw = app
        .get_with(
            &format!("/v1/memories/{bin_id}/lines?start=1&end=2"),
            &[("accept", "application/octet-stream")],
        )
        .await;
    assert_eq!(&raw.body[..], &binary[..]);
    // Errors stay JSON.
    app.get_with(
        &format!("/v1/memories/{id}/lines?start=0"),
        &[("accept", "application/octet-stream")],
    )
    .await
    .assert_error(StatusCode::BAD_REQUEST, "invalid_range");
}

async fn an_empty_memory_has_one_empty_line_slice(app: &TestApp) {
    let id = app.put_id("").await;
    let body = check(app, &id, b"", None, None).await;
    assert_eq!(body["text"], "");
    assert_eq!(body["total_lines"], 0);
    assert!(body["next"].is_null());
    app.get(&format!("/v1/memories/{id}/lines?start=2"))
        .await
        .assert_error(StatusCode::BAD_REQUEST, "invalid_range");
}

async fn a_range_of_exactly_64_kib_is_not_cut(app: &TestApp) {
    // 70 lines of 1 KiB: lines 1-64 are exactly the cap.
    let content: String = (1..=70).map(|n| format!("{n:>1023}\n")).collect();
    let id = app.put_id(content.clone()).await;
    let body = check(app, &id, content.as_bytes(), Some(1), Some(64)).await;
    assert_eq!(body["truncated"], false);
    assert_eq!(body["length"], 65_536);
    let body = check(app, &id, content.as_bytes(), Some(1), Some(65)).await;
    assert_eq!(body["truncated"], true);
    assert_eq!(body["end"], 64);
    assert_eq!(body["next"], format!("mem://{id}#L65-70"));
    let body = check(app, &id, content.as_bytes(), Some(7), Some(70)).await;
    assert_eq!(body["truncated"], false, "the last 64 lines fit exactly");
    assert!(body["next"].is_null());
}

async fn a_line_of_exactly_64_kib_fits_and_one_byte_more_does_not(app: &TestApp) {
    let fits = "f".repeat(65_535) + "\n";
    let fits_id = app.put_id(fits.clone()).await;
    let body = check(app, &fits_id, fits.as_bytes(), None, None).await;
    assert_eq!(body["truncated"], false);
    assert_eq!(body["length"], 65_536);
    // Without its newline, the last line also fits.
    let bare = "b".repeat(65_536);
    let bare_id = app.put_id(bare.clone()).await;
    let body = check(app, &bare_id, bare.as_bytes(), None, None).await;
    assert_eq!(body["truncated"], false);
    assert!(body["next"].is_null());
    // One byte more: the head, and a pointer to the rest.
    let over = "o".repeat(65_536) + "\nnext line\n";
    let over_id = app.put_id(over.clone()).await;
    let body = check(app, &over_id, over.as_bytes(), Some(1), Some(2)).await;
    assert_eq!(body["truncated"], true);
    assert_eq!(body["length"], 65_536);
    assert_eq!(
        body["next"],
        format!("mem://{over_id}?offset=65536&len=65536")
    );
    assert_eq!(
        walk(app, &over_id, &format!("mem://{over_id}#L1-2")).await,
        over.as_bytes()
    );
}

// ----- default settings only ----------------------------------------------------

#[tokio::test]
async fn a_five_megabyte_line_gives_at_most_64_kib_and_a_byte_pointer() {
    let app = spawn_app().await;
    let content: Vec<u8> = (0..5 * 1024 * 1024u32)
        .map(|n| b'a' + (n % 23) as u8)
        .collect();
    let id = app.put_id(content.clone()).await;
    let body = check(&app, &id, &content, None, None).await;
    assert_eq!(body["length"], MAX_BYTES);
    assert_eq!(body["truncated"], true);
    assert_eq!(body["total_lines"], 1);
    assert_eq!(body["next"], format!("mem://{id}?offset=65536&len=65536"));
    let next = app
        .get(&format!(
            "/v1/fetch?uri={}",
            enc(body["next"].as_str().unwrap())
        ))
        .await
        .json();
    assert_eq!(next["offset"], 65_536);
    assert_eq!(
        next["text"].as_str().unwrap().as_bytes(),
        &content[65_536..131_072]
    );
    assert_eq!(next["next"], format!("mem://{id}?offset=131072&len=65536"));
    // Far into the line, across the 1 MiB frames.
    let deep = app
        .get(&format!(
            "/v1/memories/{id}/bytes?offset=1048000&length=1000"
        ))
        .await
        .json();
    assert_eq!(
        deep["text"].as_str().unwrap().as_bytes(),
        &content[1_048_000..1_049_000]
    );
}

#[tokio::test]
async fn smaller_configured_limits_are_enforced_and_reported() {
    let app = spawn_app_with_limits().await;
    let content: String = (1..=100).map(|n| format!("{n:>9}\n")).collect();
    let id = app.put_id(content).await;
    let error = app
        .get(&format!("/v1/memories/{id}/lines?start=1&end=11"))
        .await
        .assert_error(StatusCode::BAD_REQUEST, "slice_too_large");
    assert_eq!(error["max"], 10);
    assert_eq!(error["requested"], 11);
    let body = app.get(&format!("/v1/memories/{id}/lines")).await.json();
    assert_eq!(body["end"], 5, "default_slice_lines");
    assert_eq!(body["truncated"], false);
    let body = app
        .get(&format!("/v1/memories/{id}/lines?start=1&end=10"))
        .await
        .json();
    assert_eq!(body["end"], 6, "60 of 64 bytes");
    assert_eq!(body["length"], 60);
    assert_eq!(body["truncated"], true);
    assert_eq!(body["next"], format!("mem://{id}#L7-16"));
    let error = app
        .get(&format!("/v1/memories/{id}/bytes?length=65"))
        .await
        .assert_error(StatusCode::BAD_REQUEST, "slice_too_large");
    assert_eq!(error["limit"], "max_slice_bytes");
    assert_eq!(error["max"], 64);
    let chunk = app.get(&format!("/v1/memories/{id}/chunks/0")).await.json();
    assert_eq!(chunk["chunks"], 1000_u64.div_ceil(32));
    assert_eq!(
        chunk["length"], 40,
        "32 bytes moved forward to the next line start"
    );
}

async fn spawn_app_with_limits() -> TestApp {
    crate::helpers::spawn_app_with(|c| {
        c.max_slice_lines = 10;
        c.default_slice_lines = 5;
        c.max_slice_bytes = 64;
        c.chunk_bytes = 32;
    })
    .await
}
