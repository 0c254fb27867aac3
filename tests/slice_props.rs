//! Property tests: for random content and random ranges, line, byte and chunk
//! slices served through the router equal the same slices of the original bytes.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use base64::Engine;
use cairn::app::App;
use cairn::config::Config;
use http_body_util::BodyExt;
use proptest::prelude::*;
use proptest::test_runner::{Config as RunnerConfig, TestRunner};
use serde_json::Value;
use tower::ServiceExt;

const MAX_BYTES: u64 = 256;
const MAX_LINES: u64 = 50;

struct Harness {
    router: axum::Router,
    _app: App,
    _dir: tempfile::TempDir,
}

async fn harness(frame_bytes: usize, tiny: bool) -> Harness {
    let dir = tempfile::tempdir().unwrap();
    let mut config = Config::with_data_dir(dir.path());
    config.frame_bytes = frame_bytes;
    if tiny {
        config.max_slice_bytes = MAX_BYTES;
        config.max_slice_lines = MAX_LINES;
        config.chunk_bytes = 128;
        config.inline_max_bytes = 16;
        config.inline_object_max_bytes = 200;
    }
    let app = App::build(&config).await.unwrap();
    Harness {
        router: app.router(),
        _app: app,
        _dir: dir,
    }
}

impl Harness {
    async fn call(&self, request: Request<Body>) -> (StatusCode, Value) {
        let response = self.router.clone().oneshot(request).await.unwrap();
        let status = response.status();
        let body = response.into_body().collect().await.unwrap().to_bytes();
        (status, serde_json::from_slice(&body).unwrap_or(Value::Null))
    }

    async fn put(&self, content: &[u8]) -> Value {
        let request = Request::post("/v1/memories")
            .header(header::CONTENT_TYPE, "application/octet-stream")
            .body(Body::from(content.to_vec()))
            .unwrap();
        let (status, body) = self.call(request).await;
        assert!(status.is_success(), "put failed: {status} {body}");
        body
    }

    async fn get(&self, uri: &str) -> (StatusCode, Value) {
        self.call(Request::get(uri).body(Body::empty()).unwrap())
            .await
    }
}

/// The exact bytes of a slice answer.
fn slice_bytes(answer: &Value) -> Vec<u8> {
    match answer["text_base64"].as_str() {
        Some(b64) => base64::engine::general_purpose::STANDARD
            .decode(b64)
            .unwrap(),
        None => answer["text"].as_str().unwrap().as_bytes().to_vec(),
    }
}

/// Lines of `content`, each with its `\n`.
fn lines_of(content: &[u8]) -> Vec<&[u8]> {
    content.split_inclusive(|b| *b == b'\n').collect()
}

/// Checks a line slice answer against the original.
fn check_lines(
    content: &[u8],
    start: u64,
    end: u64,
    status: StatusCode,
    answer: &Value,
) -> Result<(), TestCaseError> {
    let lines = lines_of(content);
    let total = lines.len() as u64;
    if start > total.max(1) {
        prop_assert_eq!(status, StatusCode::BAD_REQUEST);
        return Ok(());
    }
    prop_assert_eq!(status, StatusCode::OK, "{}", answer);
    prop_assert_eq!(answer["total_lines"].as_u64(), Some(total));
    let got = slice_bytes(answer);
    let offset: usize = lines[..(start - 1) as usize].iter().map(|l| l.len()).sum();
    prop_assert_eq!(answer["offset"].as_u64(), Some(offset as u64));
    let last = end.min(total.max(1));
    let want: Vec<u8> = lines[(start - 1) as usize..last.min(total) as usize].concat();
    prop_assert!(got.len() as u64 <= MAX_BYTES);
    if answer["truncated"] == Value::Bool(true) {
        prop_assert!(want.starts_with(&got), "truncated slice is not a prefix");
        prop_assert!(want.len() as u64 > MAX_BYTES);
        prop_assert!(answer["next"].is_string());
    } else {
        prop_assert_eq!(&got, &want);
        prop_assert_eq!(answer["end"].as_u64(), Some(last));
    }
    Ok(())
}

fn content_strategy() -> impl Strategy<Value = Vec<u8>> {
    let line = prop_oneof![
        4 => "[a-z0-9 ]{0,40}".prop_map(|s| s.into_bytes()),
        1 => proptest::collection::vec(any::<u8>(), 0..40),
        1 => "[a-zé€😀 ]{0,30}".prop_map(|s| s.into_bytes()),
        1 => proptest::collection::vec(Just(b'y'), 300..700),
    ];
    let ending = prop_oneof![3 => Just(&b"\n"[..]), 1 => Just(&b"\r\n"[..])];
    (
        proptest::collection::vec((line, ending), 0..60),
        any::<bool>(),
    )
        .prop_map(|(lines, trailing)| {
            let mut out = Vec::new();
            for (line, end) in lines {
                out.extend_from_slice(&line);
                out.extend_from_slice(end);
            }
            if !trailing && out.last() == Some(&b'\n') {
                out.pop();
            }
            out
        })
}

#[test]
fn random_line_byte_and_chunk_slices_equal_the_original() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    for frame_bytes in [64, 1000] {
        let harness = runtime.block_on(harness(frame_bytes, true));
        let mut runner = TestRunner::new(RunnerConfig {
            cases: 96,
            ..RunnerConfig::default()
        });
        let strategy = (
            content_strategy(),
            1u64..70,
            0u64..60,
            0u64..5000,
            1u64..=MAX_BYTES,
        );
        runner
            .run(&strategy, |(content, start, span, offset, length)| {
                runtime.block_on(async {
                    let put = harness.put(&content).await;
                    let id = put["id"].as_str().unwrap();
                    let end = start + span;
                    let (status, answer) = harness
                        .get(&format!("/v1/memories/{id}/lines?start={start}&end={end}"))
                        .await;
                    if end - start + 1 > MAX_LINES {
                        prop_assert_eq!(status, StatusCode::BAD_REQUEST);
                        prop_assert_eq!(answer["error"]["limit"].as_str(), Some("max_slice_lines"));
                    } else {
                        check_lines(&content, start, end, status, &answer)?;
                    }
                    let offset = offset.min(content.len() as u64 + 1);
                    let (status, answer) = harness
                        .get(&format!(
                            "/v1/memories/{id}/bytes?offset={offset}&length={length}"
                        ))
                        .await;
                    if offset > content.len() as u64 {
                        prop_assert_eq!(status, StatusCode::BAD_REQUEST);
                    } else {
                        prop_assert_eq!(status, StatusCode::OK);
                        let stop = (offset + length).min(content.len() as u64) as usize;
                        prop_assert_eq!(slice_bytes(&answer), &content[offset as usize..stop]);
                    }
                    let chunks = put["chunks"].as_u64().unwrap();
                    let mut joined = Vec::new();
                    for n in 0..chunks {
                        let (status, answer) =
                            harness.get(&format!("/v1/memories/{id}/chunks/{n}")).await;
                        prop_assert_eq!(status, StatusCode::OK);
                        joined.extend(slice_bytes(&answer));
                    }
                    prop_assert_eq!(joined, content);
                    Ok(())
                })
            })
            .unwrap();
    }
}

/// Follows `next` pointers from line 1 and checks the pieces rebuild the content.
async fn walk_lines(harness: &Harness, id: &str, content: &[u8], count: u64) {
    let mut uri = format!("mem://{id}#L1-{count}");
    let mut rebuilt = Vec::new();
    for _ in 0..100_000 {
        let encoded = uri
            .replace('#', "%23")
            .replace('?', "%3F")
            .replace('&', "%26");
        let (status, answer) = harness.get(&format!("/v1/fetch?uri={encoded}")).await;
        assert_eq!(status, StatusCode::OK, "{answer}");
        let bytes = slice_bytes(&answer);
        assert!(bytes.len() as u64 <= MAX_BYTES.max(64 << 10));
        rebuilt.extend(bytes);
        match answer["next"].as_str() {
            Some(next) => uri = next.to_owned(),
            None => break,
        }
    }
    assert_eq!(rebuilt.len(), content.len());
    assert!(rebuilt == content, "pieces do not rebuild the content");
}

#[tokio::test]
async fn edge_contents_slice_exactly() {
    let harness = harness(64, true).await;
    let cases: Vec<Vec<u8>> = vec![
        Vec::new(),
        b"no trailing newline".to_vec(),
        b"one\r\ntwo\r\nthree\r\n".to_vec(),
        b"\n\n\n".to_vec(),
        vec![0xff, 0xfe, b'\n', 0xc3, b'x', b'\n', 0x80],
        "é€😀\n".repeat(40).into_bytes(),
    ];
    for content in cases {
        let put = harness.put(&content).await;
        let id = put["id"].as_str().unwrap().to_owned();
        let total = lines_of(&content).len() as u64;
        assert_eq!(put["lines"].as_u64(), Some(total));
        for start in 1..=total.max(1) {
            for end in start..=(total + 1) {
                let (status, answer) = harness
                    .get(&format!("/v1/memories/{id}/lines?start={start}&end={end}"))
                    .await;
                check_lines(&content, start, end, status, &answer).unwrap();
            }
        }
        if !content.is_empty() {
            walk_lines(&harness, &id, &content, 3).await;
        }
    }
}

#[tokio::test]
async fn a_single_five_megabyte_line_is_served_in_capped_pieces() {
    let harness = harness(4096, false).await;
    let mut content = vec![b'z'; 5 << 20];
    content[1234] = b'A';
    content.push(b'\n');
    let put = harness.put(&content).await;
    let id = put["id"].as_str().unwrap().to_owned();
    assert_eq!(put["lines"].as_u64(), Some(1));
    let (status, answer) = harness
        .get(&format!("/v1/memories/{id}/lines?start=1&end=1"))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(answer["truncated"], Value::Bool(true));
    let first = slice_bytes(&answer);
    assert_eq!(first.len(), 64 << 10);
    assert_eq!(&first[..], &content[..64 << 10]);
    assert_eq!(
        answer["next"].as_str().unwrap(),
        format!("mem://{id}?offset=65536&len=65536")
    );
    // Following the byte pointers rebuilds the line exactly.
    let mut rebuilt = first;
    let mut next = answer["next"].as_str().map(str::to_owned);
    while let Some(uri) = next {
        let encoded = uri.replace('?', "%3F").replace('&', "%26");
        let (status, answer) = harness.get(&format!("/v1/fetch?uri={encoded}")).await;
        assert_eq!(status, StatusCode::OK);
        rebuilt.extend(slice_bytes(&answer));
        next = answer["next"].as_str().map(str::to_owned);
    }
    assert!(rebuilt == content);
}

#[tokio::test]
async fn slices_from_the_front_of_large_frames_equal_the_original() {
    // Default 1 MiB frames: slices decode and verify only the front pages of a frame.
    let harness = harness(1 << 20, false).await;
    let mut content = Vec::new();
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for i in 0..120_000u64 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let width = (x % 90) as usize;
        content.extend_from_slice(format!("{i} {}\n", "q".repeat(width)).as_bytes());
    }
    let put = harness.put(&content).await;
    let id = put["id"].as_str().unwrap().to_owned();
    let lines = lines_of(&content);
    let ends: Vec<u64> = lines
        .iter()
        .scan(0u64, |at, l| {
            *at += l.len() as u64;
            Some(*at)
        })
        .collect();
    for _ in 0..300 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let start = 1 + x % lines.len() as u64;
        let end = start + x % 300;
        let (status, answer) = harness
            .get(&format!("/v1/memories/{id}/lines?start={start}&end={end}"))
            .await;
        assert_eq!(status, StatusCode::OK);
        let want: Vec<u8> = lines[(start - 1) as usize..(end as usize).min(lines.len())].concat();
        assert!(slice_bytes(&answer) == want, "lines {start}-{end} differ");
        let offset = x % content.len() as u64;
        let (status, answer) = harness
            .get(&format!(
                "/v1/memories/{id}/bytes?offset={offset}&length=5000"
            ))
            .await;
        assert_eq!(status, StatusCode::OK);
        let stop = (offset as usize + 5000).min(content.len());
        assert!(
            slice_bytes(&answer) == content[offset as usize..stop],
            "bytes at {offset} differ"
        );
        let first_line = 1 + ends.partition_point(|end| *end <= offset) as u64;
        assert_eq!(answer["start"].as_u64(), Some(first_line));
    }
}

/// Exact o200k_base tokens of a slice's bytes as tiktoken counts them (the
/// bytes as the model sees them: invalid UTF-8 replaced).
fn reference_tokens(bytes: &[u8]) -> u64 {
    let text = String::from_utf8_lossy(bytes);
    tiktoken_rs::o200k_base_singleton()
        .encode_ordinary(&text)
        .len() as u64
}

/// Follows `max_tokens` pages from the start: every page counts what it says,
/// within the budget; a page of whole lines could not take one more line; the
/// pages rebuild the content byte for byte.
async fn walk_token_pages(
    harness: &Harness,
    id: &str,
    content: &[u8],
    budget: u64,
) -> Result<(), TestCaseError> {
    let lines = lines_of(content);
    let mut uri = format!("mem://{id}?max_tokens={budget}");
    let mut rebuilt = Vec::new();
    for _ in 0..=content.len() {
        let (status, answer) = harness.get(&format!("/v1/fetch?uri={}", enc(&uri))).await;
        prop_assert_eq!(status, StatusCode::OK, "{}: {}", uri, answer);
        let page = slice_bytes(&answer);
        let tokens = reference_tokens(&page);
        prop_assert_eq!(answer["tokens"].as_u64(), Some(tokens), "{}", uri);
        prop_assert_eq!(answer["method"].as_str(), Some("exact:o200k_base"));
        prop_assert!(
            tokens <= budget,
            "{} tokens over a budget of {}",
            tokens,
            budget
        );
        let at = rebuilt.len();
        rebuilt.extend_from_slice(&page);
        let next = answer["next"].as_str();
        let whole_lines = page.last() == Some(&b'\n') && (at == 0 || content[at - 1] == b'\n');
        if whole_lines && next.is_some() && answer["truncated"] == Value::Bool(false) {
            // One more line would have broken the budget, the byte cap or the line cap.
            let first = lines_of(&content[..at]).len();
            let taken = lines_of(&page).len();
            let more = [&page[..], lines[first + taken]].concat();
            prop_assert!(
                reference_tokens(&more) > budget
                    || more.len() as u64 > MAX_BYTES
                    || taken as u64 >= MAX_LINES,
                "page at byte {} stopped early",
                at
            );
        }
        match next {
            Some(next) => {
                prop_assert!(!page.is_empty(), "an empty page with a next");
                uri = next.to_owned();
            }
            None => break,
        }
    }
    prop_assert!(rebuilt == content, "pages do not rebuild the content");
    Ok(())
}

fn enc(text: &str) -> String {
    text.replace('%', "%25")
        .replace('#', "%23")
        .replace('?', "%3F")
        .replace('&', "%26")
        .replace('=', "%3D")
}

#[test]
fn token_budgeted_pages_fit_and_rebuild_the_content() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    for frame_bytes in [64, 1000] {
        let harness = runtime.block_on(harness(frame_bytes, true));
        let mut runner = TestRunner::new(RunnerConfig {
            cases: 64,
            ..RunnerConfig::default()
        });
        runner
            .run(&(content_strategy(), 16u64..120), |(content, budget)| {
                runtime.block_on(async {
                    let put = harness.put(&content).await;
                    let id = put["id"].as_str().unwrap();
                    walk_token_pages(&harness, id, &content, budget).await
                })
            })
            .unwrap();
    }
}

#[tokio::test]
async fn a_line_longer_than_the_budget_is_cut_at_token_boundaries() {
    let harness = harness(4096, false).await;
    let words: String = (0..3000)
        .map(|i| format!("w{} ", i * 7919 % 10007))
        .collect();
    let content = format!("short\n{words}\nlast line\n").into_bytes();
    let put = harness.put(&content).await;
    let id = put["id"].as_str().unwrap().to_owned();
    let (status, answer) = harness
        .get(&format!("/v1/memories/{id}/lines?start=2&max_tokens=100"))
        .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer["truncated"], Value::Bool(true));
    let head = slice_bytes(&answer);
    assert!(words.as_bytes().starts_with(&head));
    assert_eq!(answer["tokens"].as_u64(), Some(reference_tokens(&head)));
    assert!(reference_tokens(&head) <= 100);
    // The cut falls between two of the line's own tokens.
    let ids = tiktoken_rs::o200k_base_singleton().encode_ordinary(&words);
    let bpe = tiktoken_rs::o200k_base_singleton();
    let mut boundaries = vec![0];
    for token in &ids {
        let last = *boundaries.last().unwrap();
        boundaries.push(last + bpe.decode_bytes(&[*token]).unwrap().len());
    }
    assert!(
        boundaries.contains(&head.len()),
        "cut at {} is not a token boundary",
        head.len()
    );
    let offset = 6 + head.len();
    assert_eq!(
        answer["next"].as_str(),
        Some(format!("mem://{id}?offset={offset}&max_tokens=100").as_str())
    );
    assert_eq!(
        answer["uri"].as_str(),
        Some(format!("mem://{id}?offset=6&len={}", head.len()).as_str())
    );
    walk_token_pages(&harness, &id, &content, 100)
        .await
        .unwrap();
}
