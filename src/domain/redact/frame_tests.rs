//! Unit tests of redaction inside ingest: frames redacted in parallel give
//! what one pass gives, key blocks across frames, and a throughput measure.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use proptest::prelude::*;

use super::tests::{ALNUM, contains, corpus, fakes, pem, random, redact_with};
use super::*;

/// Throughput on log-like text: `cargo test --release --lib redact::tests::throughput -- --ignored --nocapture`.
#[test]
#[ignore = "a measurement; run in release mode"]
fn throughput() {
    let mut text = Vec::with_capacity(110 << 20);
    let mut n = 0u64;
    while text.len() < 100 << 20 {
        n += 1;
        let line = match n % 50 {
            0 => format!(
                "2024-05-01T12:00:{:02}Z INFO  request GET https://api.example.com/v1/items?page={n} took {}ms\n",
                n % 60,
                n % 997
            ),
            1 => format!(
                "2024-05-01T12:00:{:02}Z DEBUG token usage: prompt={} completion={}\n",
                n % 60,
                n % 4000,
                n % 800
            ),
            2 => format!(
                "  at com.example.service.Handler.process(Handler.java:{})\n",
                n % 500
            ),
            3 | 13 | 23 | 33 | 43 => format!(
                "{{\"key\": \"item-{n}\", \"status\": \"ok\", \"elapsed_ms\": {}}}\n",
                n % 1000
            ),
            4 if n % 1000 == 4 => format!(
                "push failed for {}\n",
                ["gh", "p_", &random(n, 36, ALNUM)].concat()
            ),
            _ => format!(
                "2024-05-01T12:00:{:02}Z INFO  worker-{} processed batch {} in {} ms, {} rows, status=ok\n",
                n % 60,
                n % 16,
                n,
                n % 1000,
                n % 10_000
            ),
        };
        text.extend_from_slice(line.as_bytes());
    }
    let started = std::time::Instant::now();
    let newlines = memchr::memchr_iter(b'\n', &text).count();
    let memchr_secs = started.elapsed().as_secs_f64();
    let started = std::time::Instant::now();
    let candidates = super::patterns::PREFILTER.find_iter(&text).count();
    let prefilter_secs = started.elapsed().as_secs_f64();
    let started = std::time::Instant::now();
    let mut redactor = Redactor::default();
    let mut out = Vec::with_capacity(text.len());
    for piece in text.chunks(64 << 10) {
        out.clear();
        redactor.push(piece, &mut out);
    }
    redactor.finish(&mut out);
    let secs = started.elapsed().as_secs_f64();
    let mb = text.len() as f64 / 1e6;
    println!(
        "redaction: {mb:.0} MB in {secs:.3} s = {:.0} MB/s, {} redacted",
        mb / secs,
        redactor.report().total
    );
    println!(
        "reference: newline count {:.0} MB/s ({newlines} lines); prefilter alone {:.0} MB/s ({candidates} candidates)",
        mb / memchr_secs,
        mb / prefilter_secs
    );
}

/// Frames of this size (the server's default) in the tests below.
const CHUNK_BYTES: usize = 512 << 10;

/// Stores for ingesting in tests: a runtime, SQLite metadata and object
/// files in a temporary directory (objects stay inline, in memory).
struct Harness {
    runtime: tokio::runtime::Runtime,
    meta: crate::storage::meta::sqlite::SqliteMetaStore,
    blobs: crate::storage::blob::fs::FsBlobStore,
    _dir: tempfile::TempDir,
}

static HARNESS: std::sync::LazyLock<Harness> = std::sync::LazyLock::new(|| {
    let dir = tempfile::tempdir().unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let url = format!("sqlite://{}", dir.path().join("meta.sqlite").display());
    let meta = runtime
        .block_on(crate::storage::meta::sqlite::SqliteMetaStore::open(&url))
        .unwrap();
    let (blobs, _) = crate::storage::blob::fs::FsBlobStore::open(
        dir.path().join("objects"),
        dir.path().join("tmp"),
    )
    .unwrap();
    Harness {
        runtime,
        meta,
        blobs,
        _dir: dir,
    }
});

/// Runs `content`, cut into `pieces`, through ingest with frames of
/// `frame_bytes`; answers the stored content, read back from its frames,
/// and what was redacted. Checks the object's hash and counts on the way.
fn ingested(
    content: &[u8],
    pieces: &[usize],
    frame_bytes: usize,
    redact: bool,
) -> (Vec<u8>, Option<Report>) {
    use crate::domain::memories::ingest::{IngestConfig, ingest};
    use crate::domain::memories::locks::ObjectLocks;
    use crate::storage::meta::Layout;
    let mut parts = Vec::new();
    let mut rest = content;
    for &n in pieces {
        let n = n.min(rest.len());
        parts.push(Ok::<_, std::convert::Infallible>(
            bytes::Bytes::copy_from_slice(&rest[..n]),
        ));
        rest = &rest[n..];
    }
    parts.push(Ok(bytes::Bytes::copy_from_slice(rest)));
    let config = IngestConfig {
        frame_bytes,
        zstd_level: 1,
        raw_inline_max: 0,
        inline_object_max: usize::MAX,
        max_upload_bytes: None,
        parallelism: 3,
        exact_tokens_max: 0,
        exact_tokens_after: u64::MAX,
    };
    let h = &*HARNESS;
    let ingested = h
        .runtime
        .block_on(ingest(
            futures::stream::iter(parts),
            redact,
            &h.blobs,
            &h.meta,
            &ObjectLocks::default(),
            &config,
            None,
        ))
        .unwrap();
    let object = &ingested.object;
    let data = object.data.as_deref().unwrap();
    let out = match object.layout {
        Layout::Raw => data.to_vec(),
        Layout::Inline => {
            let mut out = Vec::new();
            for frame in &object.frames {
                assert!(frame.content_len > 0, "no empty frame is stored");
                let at = frame.stored_offset as usize;
                let stored = &data[at..at + frame.stored_len as usize];
                let content = crate::domain::memories::read::seekable::decompress_frame(
                    stored,
                    frame.content_len as usize,
                )
                .unwrap();
                assert_eq!(frame.content_offset, out.len() as u64);
                out.extend_from_slice(&content);
            }
            out
        }
        Layout::Blob => panic!("objects stay inline here"),
    };
    assert_eq!(object.bytes, out.len() as u64);
    assert_eq!(
        ingested.id.as_str(),
        crate::domain::memories::ids::MemoryId::of_content(&out).as_str()
    );
    (out, ingested.redacted)
}

/// Runs `content`, cut into `pieces`, through ingest with redaction and
/// frames of `frame_bytes`: the stored content and what was redacted.
fn redact_streamed(content: &[u8], pieces: &[usize], frame_bytes: usize) -> (Vec<u8>, Report) {
    let (out, report) = ingested(content, pieces, frame_bytes, true);
    (out, report.unwrap())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    /// Frames redacted side by side give the bytes of one redactor, also
    /// when a frame ends inside a key block or inside a line.
    #[test]
    fn parallel_chunks_give_the_output_of_one_redactor(
        content in corpus(),
        cuts in proptest::collection::vec(0usize..4000, 0..40),
        chunk_bytes in prop_oneof![1usize..64, 64usize..4000, Just(CHUNK_BYTES)],
        trim in 0usize..50,
    ) {
        let content = &content[..content.len().saturating_sub(trim)];
        let whole = redact_with(content, Limits::default(), &[]);
        let streamed = redact_streamed(content, &cuts, chunk_bytes);
        prop_assert_eq!(&streamed.1, &whole.1);
        prop_assert!(streamed.0 == whole.0, "streamed output differs");
    }
}

#[test]
fn a_key_block_across_many_chunks_is_still_one_marker() {
    let (key, lines) = pem("RSA ", 40, 9);
    let long = format!("{} {} tail\n", "x".repeat(5000), fakes(9)[1].1);
    let text = format!("head\n{key}{long}after\n{key}");
    for chunk_bytes in [1, 65, 100, 1000, 3000] {
        let (out, report) = redact_streamed(text.as_bytes(), &[17, 4096], chunk_bytes);
        assert_eq!(report.count(Kind::PrivateKey), 2, "chunks of {chunk_bytes}");
        for line in &lines {
            assert!(
                !contains(&out, line),
                "chunks of {chunk_bytes}: key line leaked"
            );
        }
        assert_eq!(
            out,
            redact_bytes(text.as_bytes()).0,
            "chunks of {chunk_bytes}"
        );
    }
}

#[test]
fn key_names_in_each_case_style_get_past_the_prefilter() {
    let value = random(77, 24, ALNUM);
    for key in [
        "api_key",
        "apikey",
        "api-key",
        "x-api-key",
        "apiKey",
        "ApiKey",
        "APIKey",
        "API_KEY",
        "APIKEY",
        "access_key",
        "accessKey",
        "AccessKey",
        "ACCESS_KEY",
        "privateKey",
        "private-key",
        "PRIVATE_KEY",
        "PRIVATEKEY",
        "authorization",
        "Authorization",
        "AUTHORIZATION",
        "password",
        "Password",
        "PASSWORD",
        "PassWord",
        "passwd",
        "DB_PASSWD",
        "--password",
    ] {
        let line = format!("{key}={value}\n");
        let (out, report) = redact_bytes(line.as_bytes());
        assert_eq!(report.total, 1, "{key}");
        assert!(!contains(&out, &value), "{key}");
    }
    // Words that only look alike are not even candidates: they stay as they are.
    for text in [
        "index key=batch:78798 auth ok, high load\n",
        "tests/test_api.py::test_put[case-1] PASSED [ 10%]\n",
        "=== 12 passed, 1 skipped in 0.41s ===\n",
        "Pass 2 of 3: compass bypass\n",
    ] {
        assert!(super::patterns::PREFILTER.find(text).is_none(), "{text}");
        assert_eq!(redact_bytes(text.as_bytes()).0, text.as_bytes());
    }
}

#[test]
fn ingest_redacts_large_and_small_pieces_alike() {
    let text: String = fakes(4)
        .iter()
        .map(|(_, line, _)| format!("{line}\n"))
        .collect();
    let big = text.repeat(2000); // several frames, worked on by the frame workers
    let content = format!("{big}{text}");
    let (out, report) = redact_streamed(content.as_bytes(), &[big.len(), 100], CHUNK_BYTES);
    let (expected, whole) = redact_bytes(content.as_bytes());
    assert!(out == expected, "ingested content differs");
    assert_eq!(report, whole);
    assert_eq!(report.total, 2001 * fakes(4).len() as u64);

    // Off: the content is stored as it came, and nothing is reported.
    let ingested = ingested(text.as_bytes(), &[], CHUNK_BYTES, false);
    assert_eq!(ingested.0, text.as_bytes());
    assert!(ingested.1.is_none());
}
