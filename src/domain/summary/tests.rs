//! Unit tests of the summaries, one realistic sample per kind.

use proptest::prelude::*;

use super::trace_tests::{JAVA_TRACE, PYTHON_TRACE, RUST_PANIC};
use super::*;

fn facts(content: &[u8], mime: &str) -> SummaryFacts {
    let newlines = memchr::memchr_iter(b'\n', content).count() as u64;
    SummaryFacts {
        uri: format!("mem://{}", "ab".repeat(32)),
        mime: mime.to_owned(),
        bytes: content.len() as u64,
        lines: newlines + u64::from(content.last().is_some_and(|b| *b != b'\n')),
        tokens: (content.len() as u64).div_ceil(4),
        token_method: "estimate:bytes/4".to_owned(),
    }
}

pub(super) fn of(content: &[u8], mime: &str) -> String {
    let s = summarize(content, &facts(content, mime), SUMMARY_CHARS);
    assert!(
        s.chars().count() <= SUMMARY_CHARS,
        "{} chars: {s}",
        s.chars().count()
    );
    s
}

/// The summary of `content` streamed through a builder in frames of `frame` bytes.
fn streamed(content: &[u8], mime: &str, frame: usize, max_chars: usize) -> String {
    let mut builder = SummaryBuilder::default();
    let mut line = 1;
    for piece in content.chunks(frame.max(1)) {
        let scan = scan_frame(piece);
        builder.add_frame(piece, &scan, line);
        line += scan.newlines;
    }
    builder.finish(&facts(content, mime), max_chars)
}

fn api_answer(users: usize) -> String {
    let items: Vec<serde_json::Value> = (0..users)
        .map(|i| {
            serde_json::json!({
                "id": i, "login": format!("user{i}"), "email": format!("user{i}@example.com"),
                "active": i % 3 != 0, "roles": ["reader", "writer"],
                "address": {"city": "Lyon", "zip": "69001", "geo": {"lat": 45.76, "lng": 4.83}},
            })
        })
        .collect();
    serde_json::json!({
        "data": items, "meta": {"page": 1, "per_page": users, "total": users * 4},
        "links": {"next": "https://api.example.com/users?page=2"}, "error": null,
    })
    .to_string()
}

#[test]
fn json_answers_show_shape_and_a_sample() {
    let s = of(api_answer(300).as_bytes(), "application/json");
    assert!(s.starts_with("kind: json | 1 line, "), "{s}");
    assert!(s.contains("mem://abab"), "{s}");
    assert!(s.contains("object with 4 keys"), "{s}");
    assert!(
        s.contains("data: array[300] of {active: bool, address: object{3 keys}, email: string"),
        "{s}"
    );
    assert!(
        s.contains("error: null, links: {next: string}, meta: {page: number"),
        "{s}"
    );
    assert!(s.contains("sample: {\"data\":[{\"active\":false,"), "{s}");
}

#[test]
fn json_past_the_kept_prefix_says_it_is_partial() {
    let big = api_answer(30_000);
    assert!(big.len() > detect::JSON_KEEP);
    let s = of(big.as_bytes(), "text/plain");
    assert!(s.starts_with("kind: json"), "{s}");
    assert!(s.contains("data: array[≥"), "{s}");
    assert!(
        s.contains("roles: array[2] of string"),
        "complete inner arrays are exact: {s}"
    );
    assert!(
        s.contains(&format!(
            "shape from the first {} of {} bytes",
            detect::JSON_KEEP,
            big.len()
        )),
        "{s}"
    );
}

#[test]
fn json_lines_are_counted() {
    let lines: String = (0..50)
        .map(|i| format!("{{\"ts\":{i},\"msg\":\"hi\"}}\n"))
        .collect();
    let s = of(lines.as_bytes(), "application/x-ndjson");
    assert!(s.contains("kind: json (JSON lines)"), "{s}");
    assert!(
        s.contains("50 values; the first is object with 2 keys {ts: number, msg: string}"),
        "{s}"
    );
}

#[test]
fn log_lines_in_brackets_are_not_json() {
    let log = "[2024-05-01T10:00:00Z] INFO start\n[2024-05-01T10:00:01Z] ERROR db down\n";
    assert!(of(log.as_bytes(), "text/plain").starts_with("kind: log"));
}

const PAGE: &str = r#"<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Release notes &amp; changes — Cairn</title>
<style>body { font: 14px sans-serif } h1 { color: red }</style>
<script>window.dataLayer = []; if (a < b) { track("x") }</script></head>
<body><nav><a href="/">Home</a></nav>
<h1>Cairn 0.3 released</h1><p>This release brings <b>structure-aware summaries</b> and exact token counts.</p>
<h2 id="install">Install</h2><p>Run <code>cargo install cairn</code>.</p>
<h2>Breaking changes</h2><h3>Config</h3><p>CAIRN_SUMMARY_CHARS replaces the fixed cap.</p>
<!-- <h2>Hidden</h2> --><script type="module">import x from "./y.js"</script>
</body></html>
"#;

#[test]
fn html_pages_show_title_headings_and_visible_text() {
    let s = of(PAGE.as_bytes(), "text/html");
    assert!(s.starts_with("kind: html |"), "{s}");
    assert!(s.contains("title: Release notes & changes — Cairn"), "{s}");
    assert!(
        s.contains("headings: h1 Cairn 0.3 released; h2 Install; h2 Breaking changes; h3 Config"),
        "{s}"
    );
    assert!(
        s.contains("text: Home Cairn 0.3 released This release brings structure-aware summaries"),
        "{s}"
    );
    assert!(
        !s.contains("dataLayer") && !s.contains("font:") && !s.contains("Hidden"),
        "{s}"
    );
}

const PYTEST: &str =
    "============================= test session starts ==============================
platform linux -- Python 3.12.1, pytest-8.0.0, pluggy-1.4.0
rootdir: /home/dev/shop
collected 52 items

tests/test_cart.py ..........F.....                                      [ 30%]
tests/test_orders.py ...................F..s                             [ 75%]
tests/test_users.py .............                                        [100%]

=================================== FAILURES ===================================
_______________________________ test_total_with_discount _______________________________

    def test_total_with_discount():
>       assert cart.total() == 90
E       assert 100 == 90

tests/test_cart.py:42: AssertionError
_______________________________ test_cancel_paid_order _______________________________
E       RuntimeError: payment gateway unreachable
tests/test_orders.py:88: RuntimeError
=========================== short test summary info ============================
FAILED tests/test_cart.py::test_total_with_discount - assert 100 == 90
FAILED tests/test_orders.py::test_cancel_paid_order - RuntimeError: payment gateway unreachable
=================== 2 failed, 49 passed, 1 skipped in 3.21s ====================
";

#[test]
fn pytest_runs_show_the_tally_and_the_failures() {
    let s = of(PYTEST.as_bytes(), "text/plain");
    assert!(s.starts_with("kind: test-output (pytest) |"), "{s}");
    assert!(s.contains("tests: 49 passed, 2 failed, 1 skipped"), "{s}");
    // The `FAILURES` banner and the tally are not failures; `E` lines and
    // located exceptions are errors.
    assert!(s.contains("lines by level: 2 failed, 4 error"), "{s}");
    assert!(s.contains("failed:\nL22: "), "{s}");
    assert!(
        s.contains("L22: FAILED tests/test_cart.py::test_total_with"),
        "{s}"
    );
    assert!(
        s.contains(
            "errors:\nL15: E       assert 100 == 90\nL17: tests/test_cart.py:42: AssertionError"
        ),
        "{s}"
    );
    assert_eq!(s.matches("L22: ").count(), 1, "lines shown once: {s}");
}

#[test]
fn cargo_test_runs_add_up_every_binary() {
    let mut out = String::from(
        "   Compiling shop v0.1.0\n    Finished test target(s)\n     Running unittests src/lib.rs\n\nrunning 3 tests\n",
    );
    out.push_str("test cart::adds ... ok\ntest cart::totals ... FAILED\ntest users::names ... ok\n\nfailures:\n\n---- cart::totals stdout ----\n");
    out.push_str("thread 'cart::totals' panicked at src/cart.rs:40:9:\nassertion `left == right` failed\n  left: 100\n right: 90\n\n");
    out.push_str("failures:\n    cart::totals\n\ntest result: FAILED. 2 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.01s\n\n");
    out.push_str("     Running tests/api.rs\n\nrunning 4 tests\ntest a ... ok\ntest b ... ok\ntest c ... ok\ntest d ... ignored\n\n");
    out.push_str("test result: ok. 3 passed; 0 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.20s\n\nerror: test failed, to rerun pass `--lib`\n");
    let s = of(out.as_bytes(), "text/plain");
    assert!(s.starts_with("kind: test-output (cargo test)"), "{s}");
    assert!(
        s.contains("tests: 5 passed, 1 failed, 1 skipped over 2 runs"),
        "{s}"
    );
    assert!(s.contains("L7: test cart::totals ... FAILED"), "{s}");
    assert!(s.contains("lines by level: "), "{s}");
}

#[test]
fn server_logs_count_levels_and_keep_numbers() {
    let mut log = String::new();
    for i in 1..=20_000 {
        let line = match i {
            777 => {
                "2024-05-01T10:12:57.120Z ERROR db: connection refused (retrying in 5s)".to_owned()
            }
            5000 | 9000 => format!(
                "2024-05-01T11:00:{:02}.000Z WARN cache: eviction storm",
                i % 60
            ),
            _ => format!(
                "2024-05-01T10:00:{:02}.000Z INFO http: GET /api/items/{i} 200 3ms",
                i % 60
            ),
        };
        log.push_str(&line);
        log.push('\n');
    }
    let s = of(log.as_bytes(), "text/plain");
    assert!(s.starts_with("kind: log | 20000 lines,"), "{s}");
    assert!(s.contains("lines by level: 1 error, 2 warning"), "{s}");
    assert!(
        s.contains("L777: 2024-05-01T10:12:57.120Z ERROR db: connection refused"),
        "{s}"
    );
    assert!(s.contains("L5000: ") && s.contains("L9000: "), "{s}");
    assert!(s.contains("L20000: 2024-05-01T10:00:20.000Z INFO"), "{s}");
}

const LS_LR: &str = ".:
total 24
drwxr-xr-x 2 dev dev 4096 May  1 10:00 src
drwxr-xr-x 2 dev dev 4096 May  1 10:00 tests
-rw-r--r-- 1 dev dev  812 May  1 10:00 Cargo.toml
-rw-r--r-- 1 dev dev 2048 May  1 10:00 README.md
lrwxrwxrwx 1 dev dev    9 May  1 10:00 latest -> README.md

./src:
total 16
-rw-r--r-- 1 dev dev 1200 May  1 10:00 main.rs
-rw-r--r-- 1 dev dev 3400 May  1 10:00 lib.rs
-rw-r--r-- 1 dev dev  900 May  1 10:00 config.rs

./tests:
total 8
-rw-r--r-- 1 dev dev 5000 May  1 10:00 api.rs
";

#[test]
fn ls_lr_listings_count_files_dirs_and_extensions() {
    let s = of(LS_LR.as_bytes(), "text/plain");
    assert!(s.starts_with("kind: listing (ls -lR) |"), "{s}");
    assert!(s.contains("entries: 9 (6 files, 2 dirs, 1 links)"), "{s}");
    assert!(
        s.contains("top directories: . (5), ./src (3), ./tests (1)"),
        "{s}"
    );
    assert!(
        s.contains("extensions: .rs 4, (none) 1, .md 1, .toml 1"),
        "{s}"
    );
}

#[test]
fn find_output_names_its_top_directories() {
    let mut find = String::from(".\n");
    for dir in ["./src/http", "./src/domain", "./tests"] {
        find.push_str(&format!("{dir}\n"));
        for i in 0..(if dir == "./src/domain" { 12 } else { 4 }) {
            find.push_str(&format!("{dir}/file_{i}.rs\n"));
        }
    }
    let s = of(find.as_bytes(), "text/plain");
    assert!(s.starts_with("kind: listing (find) |"), "{s}");
    assert!(s.contains("entries: 24"), "{s}");
    assert!(
        s.contains("top directories: ./src/domain (12), ./src (2), ./src/http (4)")
            || s.contains("top directories: ./src/domain (12),"),
        "{s}"
    );
    assert!(s.contains("extensions: .rs 20"), "{s}");
}

#[test]
fn plain_text_keeps_head_errors_and_tail() {
    let mut text = String::new();
    for i in 1..=5000 {
        if i == 2500 {
            text.push_str("ERROR: disk quota exceeded on /var\n");
        } else {
            text.push_str(&format!(
                "line {i} of a rather verbose build log, doing fine here\n"
            ));
        }
    }
    let s = of(text.as_bytes(), "text/plain");
    assert!(s.starts_with("kind: text | 5000 lines,"), "{s}");
    assert!(s.contains("1 failed or error lines"), "{s}");
    assert!(s.contains("L2500: ERROR: disk quota"), "{s}");
    assert!(
        s.contains("L1: line 1 ") && s.contains("L5000: line 5000"),
        "{s}"
    );
    assert_eq!(
        of(b"alpha\nbeta\n", "text/plain"),
        format!(
            "kind: text | 2 lines, 11 bytes, 3 tokens (estimate:bytes/4) | mem://{}\nL1: alpha\nL2: beta",
            "ab".repeat(32)
        )
    );
}

#[test]
fn binary_and_huge_lines_stay_within_the_cap() {
    assert!(of(b"\x00\x01\x02binary", "application/octet-stream").starts_with("kind: binary |"));
    let one_line = vec![b'x'; 5_000_000];
    let s = of(&one_line, "text/plain");
    assert!(s.contains("L1: xxxx"), "{s}");
}

#[test]
fn streaming_in_any_frames_equals_summarize() {
    let samples: [(&[u8], &str); 8] = [
        (PYTEST.as_bytes(), "text/plain"),
        (PAGE.as_bytes(), "text/html"),
        (LS_LR.as_bytes(), "text/plain"),
        (PYTHON_TRACE.as_bytes(), "text/plain"),
        (JAVA_TRACE.as_bytes(), "text/plain"),
        (RUST_PANIC.as_bytes(), "text/plain"),
        (b"no newline at the end ERROR", "text/plain"),
        (b"", "text/plain"),
    ];
    let json = api_answer(2000);
    for (content, mime) in samples
        .iter()
        .copied()
        .chain([(json.as_bytes(), "application/json")])
    {
        let whole = summarize(content, &facts(content, mime), SUMMARY_CHARS);
        for frame in [1, 7, 64, 4096, 100_000] {
            assert_eq!(
                streamed(content, mime, frame, SUMMARY_CHARS),
                whole,
                "frame {frame}"
            );
        }
    }
}

#[test]
fn summaries_are_deterministic_and_follow_the_cap() {
    let content = PYTEST.repeat(50);
    let a = summarize(
        content.as_bytes(),
        &facts(content.as_bytes(), "text/plain"),
        2000,
    );
    let b = summarize(
        content.as_bytes(),
        &facts(content.as_bytes(), "text/plain"),
        2000,
    );
    assert_eq!(a, b);
    assert!(
        a.chars().count() <= 2000 && a.chars().count() > 800,
        "{}",
        a.chars().count()
    );
    for cap in [0, 1, 50, 120, 300] {
        let s = summarize(
            content.as_bytes(),
            &facts(content.as_bytes(), "text/plain"),
            cap,
        );
        assert!(s.chars().count() <= cap, "cap {cap}: {s}");
    }
}

#[test]
fn excerpts_are_bounded_and_keep_errors() {
    let mut log = String::new();
    for i in 0..50_000 {
        if i == 30_000 {
            log.push_str("FATAL out of memory\n");
        } else {
            log.push_str("some ordinary progress line\n");
        }
    }
    let mut builder = SummaryBuilder::default();
    let scan = scan_frame(log.as_bytes());
    builder.add_frame(log.as_bytes(), &scan, 1);
    let excerpt = builder.excerpt(24 << 10);
    assert!(excerpt.len() <= (24 << 10) + 400, "{}", excerpt.len());
    assert!(excerpt.contains("L30001: FATAL out of memory"));
    let mut small = SummaryBuilder::default();
    small.add_frame(PYTEST.as_bytes(), &scan_frame(PYTEST.as_bytes()), 1);
    assert_eq!(small.excerpt(24 << 10), PYTEST, "small content goes whole");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn any_bytes_give_a_summary_within_the_cap(
        content in proptest::collection::vec(any::<u8>(), 0..3000),
        cap in 0usize..1200,
        frame in 1usize..200,
    ) {
        let whole = summarize(&content, &facts(&content, "text/plain"), cap);
        prop_assert!(whole.chars().count() <= cap);
        prop_assert_eq!(streamed(&content, "text/plain", frame, cap), whole);
    }

    #[test]
    fn structured_looking_bytes_never_panic(
        body in "[\\[\\]{}\":,a-z0-9 \\n<>/!=-]{0,2000}",
        mime in prop_oneof![Just("application/json"), Just("text/html"), Just("text/plain")],
    ) {
        let s = summarize(body.as_bytes(), &facts(body.as_bytes(), mime), 800);
        prop_assert!(s.chars().count() <= 800);
    }
}

#[test]
fn words_at_the_edges_of_the_scans_windows_count_once() {
    // A frame is scanned 64 KiB at a time: put a word 0..12 bytes before
    // each window edge (straddling it), and compare with frames small
    // enough never to be cut into windows.
    let mut log: Vec<u8> = Vec::new();
    for k in 0..12usize {
        let start = (k + 1) * (64 << 10) - k;
        while log.len() + 80 < start {
            log.extend_from_slice(&[b'.'; 79]);
            log.push(b'\n');
        }
        log.resize(start, b'.');
        log.extend_from_slice(b"\nERROR: quota exceeded\n");
    }
    let whole = summarize(&log, &facts(&log, "text/plain"), SUMMARY_CHARS);
    assert_eq!(streamed(&log, "text/plain", 4096, SUMMARY_CHARS), whole);
    assert_eq!(
        streamed(&log, "text/plain", log.len(), SUMMARY_CHARS),
        whole
    );
    assert!(whole.contains("12 failed or error lines"), "{whole}");
}

#[test]
fn a_count_made_exact_after_the_put_is_restated_in_the_summary_alone() {
    let log = "2026-01-01 INFO start\n2026-01-01 ERROR disk full\n".repeat(400);
    let estimated = facts(log.as_bytes(), "text/plain");
    let summary = summarize(log.as_bytes(), &estimated, SUMMARY_CHARS);
    // Same number of digits: the restated summary is the one the exact count gives.
    let exact = SummaryFacts {
        tokens: estimated.tokens - 1000,
        token_method: "exact:o200k_base".to_owned(),
        ..estimated.clone()
    };
    let restated = restate_tokens(
        &summary,
        (estimated.tokens, &estimated.token_method),
        (exact.tokens, &exact.token_method),
        SUMMARY_CHARS,
    );
    assert_eq!(
        restated.as_deref(),
        Some(summarize(log.as_bytes(), &exact, SUMMARY_CHARS).as_str())
    );
    // A longer count keeps the cap.
    let longer = restate_tokens(
        &summary,
        (estimated.tokens, &estimated.token_method),
        (estimated.tokens * 1000, "exact:o200k_base"),
        summary.chars().count(),
    )
    .unwrap();
    assert_eq!(longer.chars().count(), summary.chars().count());
    assert!(longer.contains(&format!(
        "{} tokens (exact:o200k_base)",
        estimated.tokens * 1000
    )));
    // A summary that does not state that count is left alone.
    assert_eq!(
        restate_tokens(
            &summary,
            (7, "estimate:bytes/4"),
            (5, "exact:o200k_base"),
            800
        ),
        None
    );
}
