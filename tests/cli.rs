//! The `cairn` CLI end to end against the real server binary.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_cairn");

#[path = "common/served.rs"]
mod served;

use served::{free_port, start};

fn cli(url: &str, args: &[&str], stdin: Option<&[u8]>) -> Output {
    let mut child = Command::new(BIN)
        .args(args)
        .args(["--url", url])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    let data = stdin.map(<[u8]>::to_vec);
    let writer = std::thread::spawn(move || {
        if let Some(data) = data {
            input.write_all(&data).unwrap();
        }
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    out
}

fn log_lines(n: usize) -> Vec<u8> {
    (1..=n)
        .map(|i| {
            format!(
                "2026-11-22T06:{:02}:{:02} INFO worker {} handled request {i} in {} ms\n",
                i % 60,
                i % 59,
                i % 7,
                i * 31 % 997
            )
        })
        .collect::<String>()
        .into_bytes()
}

fn json(out: &Output) -> serde_json::Value {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn a_large_put_says_its_count_is_the_estimate_until_it_settles() {
    let server = start();
    let url = &server.url;
    let large = log_lines(5_000); // ~340 KB, over CAIRN_EXACT_TOKENS_AFTER_BYTES
    let put = cli(url, &["put", "--stdin"], Some(&large));
    assert!(
        put.status.success(),
        "{}",
        String::from_utf8_lossy(&put.stderr)
    );
    let first = String::from_utf8_lossy(&put.stdout)
        .lines()
        .next()
        .unwrap()
        .to_owned();
    assert!(
        first.ends_with("tokens (estimated; the exact count follows)"),
        "{first}"
    );
    let id = first
        .trim_start_matches("mem://")
        .split(' ')
        .next()
        .unwrap()
        .to_owned();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let summary = cli(url, &["fetch", &id, "--summary-only"], None);
        if String::from_utf8_lossy(&summary.stdout).contains("(exact:o200k_base)") {
            break;
        }
        assert!(Instant::now() < deadline, "the count never settled");
        std::thread::sleep(Duration::from_millis(50));
    }
    let small = cli(url, &["put", "--stdin"], Some(&log_lines(100)));
    let first = String::from_utf8_lossy(&small.stdout)
        .lines()
        .next()
        .unwrap()
        .to_owned();
    assert!(first.ends_with(" tokens"), "{first}");
}

#[test]
fn put_a_50_mb_pipe_then_fetch_lines_list_stats_and_errors() {
    let server = start();
    let url = &server.url;
    let mut content = log_lines(700_000);
    content.truncate(50 << 20);
    let put = cli(
        url,
        &[
            "put",
            "--stdin",
            "--type",
            "TOOL_OUTPUT",
            "--subtype",
            "pytest",
            "--tag",
            "ci",
            "--json",
        ],
        Some(&content),
    );
    let put = json(&put);
    assert_eq!(put["bytes"], content.len());
    let id = put["id"].as_str().unwrap().to_owned();

    let lines = cli(url, &["fetch", &id, "--lines", "100:200"], None);
    assert!(lines.status.success());
    let expected: Vec<&[u8]> = content
        .split_inclusive(|&b| b == b'\n')
        .skip(99)
        .take(101)
        .collect();
    assert_eq!(lines.stdout, expected.concat());

    let summary = cli(url, &["fetch", &id, "--summary-only"], None);
    assert!(String::from_utf8_lossy(&summary.stdout).contains(&format!("mem://{id}")));

    let list = json(&cli(url, &["list", "--json", "--tag", "ci"], None));
    assert_eq!(list["memories"][0]["id"], id.as_str());
    let human = cli(url, &["list"], None);
    assert!(String::from_utf8_lossy(&human.stdout).contains(&id[..12]));
    let stats = json(&cli(url, &["stats", "--json"], None));
    assert!(stats.is_object());

    let unknown = cli(url, &["fetch", &"ab".repeat(32), "--lines", "1:2"], None);
    assert_eq!(unknown.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&unknown.stderr).starts_with("error: not_found: "));
    let usage = cli(url, &["fetch", &id, "--lines", "x"], None);
    assert_eq!(usage.status.code(), Some(2));
    let down = cli(
        &format!("http://127.0.0.1:{}", free_port()),
        &["stats"],
        None,
    );
    assert_eq!(
        down.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&down.stderr)
    );
}

#[test]
fn export_to_a_file_and_import_into_a_second_server_gives_the_same_ids() {
    let (a, b) = (start(), start());
    let mut ids = Vec::new();
    for n in [10, 5_000] {
        let put = json(&cli(
            &a.url,
            &["put", "--stdin", "--json"],
            Some(&log_lines(n)),
        ));
        ids.push(put["id"].as_str().unwrap().to_owned());
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("ns.tar");
    let file_arg = file.to_str().unwrap();
    let export = cli(&a.url, &["export", "-o", file_arg], None);
    assert!(
        export.status.success(),
        "{}",
        String::from_utf8_lossy(&export.stderr)
    );
    let import = json(&cli(&b.url, &["import", file_arg, "--json"], None));
    assert_eq!(import["imported"], 2);
    let list = json(&cli(&b.url, &["list", "--json"], None));
    let mut got: Vec<String> = list["memories"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap().to_owned())
        .collect();
    got.sort();
    ids.sort();
    assert_eq!(got, ids);
    assert!(Path::new(file_arg).exists());
}

#[test]
fn search_refs_prune_gc_and_verify_talk_to_their_endpoints() {
    let server = start();
    let url = &server.url;
    let first = json(&cli(
        url,
        &[
            "put",
            "--stdin",
            "--json",
            "--thread",
            "t-1",
            "--title",
            "build log",
        ],
        Some(b"compiling cairn\nerror[E0308]: mismatched flamingo types\nbuild failed\n"),
    ));
    let second = json(&cli(
        url,
        &["put", "--stdin", "--json", "--thread", "t-1"],
        Some(b"all quiet on the western front\n"),
    ));
    let first_id = first["id"].as_str().unwrap();
    let second_id = second["id"].as_str().unwrap();

    // Search indexes in the background: poll until the hit shows.
    let deadline = Instant::now() + Duration::from_secs(20);
    let found = loop {
        let found = json(&cli(url, &["search", "flamingo", "--json"], None));
        if !found["results"].as_array().unwrap().is_empty() {
            break found;
        }
        assert!(Instant::now() < deadline, "search never found the memory");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(found["results"][0]["id"], first_id);
    assert_eq!(found["results"][0]["hits"][0]["line"], 2);
    let human = cli(url, &["search", "flamingo"], None);
    assert!(human.status.success());
    let text = String::from_utf8_lossy(&human.stdout);
    assert!(text.contains(&first_id[..12]), "{text}");
    assert!(
        text.contains("L2: error[E0308]: mismatched flamingo types"),
        "{text}"
    );

    let refs = json(&cli(url, &["refs", "--thread", "t-1", "--json"], None));
    let ids: Vec<&str> = refs["refs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), 2);
    assert!(ids.contains(&first_id) && ids.contains(&second_id));

    // A dry run names what would go and removes nothing.
    let dry = json(&cli(
        url,
        &["prune", "--keep-entries", "1", "--dry-run", "--json"],
        None,
    ));
    assert_eq!(dry["dry_run"], true);
    assert_eq!(dry["removed_count"], 1);
    assert_eq!(dry["removed"][0]["id"], first_id, "the oldest goes first");
    let listed = json(&cli(url, &["list", "--json"], None));
    assert_eq!(listed["memories"].as_array().unwrap().len(), 2);

    let pruned = json(&cli(url, &["prune", "--keep-entries", "1", "--json"], None));
    assert_eq!(pruned["removed_count"], 1);
    let gone = cli(url, &["fetch", first_id], None);
    assert_eq!(gone.status.code(), Some(1));

    let gc = json(&cli(url, &["gc", "--json"], None));
    assert!(gc.get("removed_objects").is_some(), "{gc}");
    let verify = json(&cli(url, &["verify", "--json"], None));
    assert!(verify["checked_objects"].as_u64().unwrap() >= 1, "{verify}");
    assert!(verify["corrupt"].as_array().unwrap().is_empty(), "{verify}");
}

#[test]
fn fetch_by_uri_honours_range_flags_and_refuses_two_ranges() {
    let server = start();
    let url = &server.url;
    let content = log_lines(500);
    let id = json(&cli(url, &["put", "--stdin", "--json"], Some(&content)))["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let lines_of = |a: usize, b: usize| -> Vec<u8> {
        content
            .split_inclusive(|&c| c == b'\n')
            .skip(a - 1)
            .take(b - a + 1)
            .collect::<Vec<_>>()
            .concat()
    };
    let uri = format!("mem://{id}");

    // A bare URI with --lines gives those lines, exactly as the id does.
    let by_uri = cli(url, &["fetch", &uri, "--lines", "100:110"], None);
    assert!(
        by_uri.status.success(),
        "{}",
        String::from_utf8_lossy(&by_uri.stderr)
    );
    assert_eq!(by_uri.stdout, lines_of(100, 110));
    assert_eq!(
        cli(url, &["fetch", &id, "--lines", "100:110"], None).stdout,
        by_uri.stdout
    );

    // --bytes too.
    let bytes = cli(url, &["fetch", &uri, "--bytes", "10:20"], None);
    assert!(bytes.status.success());
    // (A slice that does not end a line is printed with a newline after it.)
    assert_eq!(bytes.stdout, [&content[10..30], b"\n"].concat());

    // A URI with its own range is fetched as it is.
    let ranged = cli(url, &["fetch", &format!("{uri}#L5-7")], None);
    assert!(ranged.status.success());
    assert_eq!(ranged.stdout, lines_of(5, 7));

    // A URI with a range plus a flag is a usage error (exit 2), not a silent choice.
    for flag in [["--lines", "1:2"], ["--bytes", "0:10"], ["--chunk", "0"]] {
        let both = cli(
            url,
            &["fetch", &format!("{uri}#L5-7"), flag[0], flag[1]],
            None,
        );
        assert_eq!(both.status.code(), Some(2), "{flag:?}");
        assert!(String::from_utf8_lossy(&both.stderr).contains("names its own range"));
    }
    let both = cli(
        url,
        &["fetch", &format!("{uri}?offset=0&len=5"), "--lines", "1:2"],
        None,
    );
    assert_eq!(both.status.code(), Some(2));
}

#[test]
fn grep_prints_what_gnu_grep_prints() {
    let server = start();
    let url = &server.url;
    let content: Vec<u8> = String::from_utf8(log_lines(3000))
        .unwrap()
        .lines()
        .enumerate()
        .map(|(i, line)| match i % 37 {
            0 | 1 => format!("{} ERROR request {i} failed\n", &line[..19]),
            _ => format!("{line}\n"),
        })
        .collect::<String>()
        .into_bytes();
    let id = json(&cli(url, &["put", "--stdin", "--json"], Some(&content)))["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), &content).unwrap();
    for args in [
        &["-n", "ERROR"][..],
        &["-n", "-C", "2", "ERROR"],
        &["-n", "-i", "-C", "1", "error request [0-9]*9 "],
    ] {
        let gnu = Command::new("grep")
            .args(args)
            .arg(file.path())
            .output()
            .unwrap();
        let mut ours: Vec<&str> = vec!["grep"];
        ours.extend(args.iter().filter(|a| **a != "-n"));
        ours.push(&id);
        let out = cli(url, &ours, None);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!gnu.stdout.is_empty());
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&gnu.stdout),
            "cairn {ours:?}"
        );
    }
    let limited = cli(
        url,
        &["grep", "-m", "3", "ERROR", &format!("mem://{id}")],
        None,
    );
    assert_eq!(String::from_utf8_lossy(&limited.stdout).lines().count(), 3);
    assert!(String::from_utf8_lossy(&limited.stderr).contains("more: --after"));
    let bad = cli(url, &["grep", "a(b", &id], None);
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("regex"));
}

#[test]
fn fetch_max_tokens_pages_through_a_memory_within_the_budget() {
    let server = start();
    let url = &server.url;
    let content = log_lines(60);
    let id = json(&cli(url, &["put", "--stdin", "--json"], Some(&content)))["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut args = vec![id.clone(), "--max-tokens".into(), "120".into()];
    let mut rebuilt = Vec::new();
    for _ in 0..100 {
        let refs: Vec<&str> = std::iter::once("fetch")
            .chain(args.iter().map(String::as_str))
            .collect();
        let out = cli(url, &refs, None);
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{stderr}");
        let tokens: u64 = stderr
            .lines()
            .find_map(|l| l.strip_prefix("tokens: "))
            .and_then(|l| l.strip_suffix(" (exact:o200k_base)"))
            .unwrap_or_else(|| panic!("no token count in {stderr}"))
            .parse()
            .unwrap();
        assert!(tokens <= 120, "{tokens} tokens");
        assert!(!out.stdout.is_empty());
        rebuilt.extend_from_slice(&out.stdout);
        match stderr.lines().find_map(|l| l.strip_prefix("more: ")) {
            Some(next) => {
                assert!(next.contains("max_tokens=120"), "{next}");
                args = vec![next.to_owned(), "--max-tokens".into(), "120".into()];
            }
            None => break,
        }
    }
    assert!(rebuilt == content, "the pages do not rebuild the content");
    let from = cli(
        url,
        &["fetch", &id, "--lines", "5:6", "--max-tokens", "1000"],
        None,
    );
    let lines: Vec<&str> = std::str::from_utf8(&content)
        .unwrap()
        .split_inclusive('\n')
        .collect();
    assert_eq!(String::from_utf8_lossy(&from.stdout), lines[4..6].concat());
}

#[test]
fn query_prints_what_jq_prints() {
    let server = start();
    let url = &server.url;
    let fixture = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/summaries/json-api-response.txt"
    );
    let content = std::fs::read(fixture).unwrap();
    let id = json(&cli(url, &["put", "--stdin", "--json"], Some(&content)))["id"]
        .as_str()
        .unwrap()
        .to_owned();
    for program in [
        ".",
        ".data[] | select(.status == \"failed\")",
        ".data | map({name, status})",
    ] {
        let ours = cli(url, &["query", &id, program], None);
        assert!(
            ours.status.success(),
            "{}",
            String::from_utf8_lossy(&ours.stderr)
        );
        let Ok(jq) = Command::new("jq").args(["-c", program, fixture]).output() else {
            eprintln!("jq is not installed: output not compared");
            return;
        };
        assert!(jq.status.success());
        assert_eq!(
            String::from_utf8_lossy(&ours.stdout),
            String::from_utf8_lossy(&jq.stdout),
            "cairn query {program}"
        );
    }
    let bad = cli(url, &["query", &id, ".data | map("], None);
    assert_eq!(bad.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("invalid_field"));
}

#[test]
fn a_log_file_gets_one_plain_line_per_request() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("cairn.log");
    let port = free_port();
    let mut child = Command::new(BIN)
        .args([
            "serve",
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--data-dir",
        ])
        .arg(dir.path().join("data"))
        .env("RUST_LOG", "info")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let url = format!("http://127.0.0.1:{port}");
    while !served::answers_ready(port) {
        assert!(Instant::now() < deadline, "server did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    let stats = cli(&url, &["stats"], None);
    assert!(stats.status.success());
    let _ = child.kill();
    let _ = child.wait();
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(
        !text.contains('\u{1b}'),
        "colour codes in a log file:\n{text}"
    );
    let line = text
        .lines()
        .find(|l| l.contains("finished processing request") && l.contains("/v1/stats"))
        .unwrap_or_else(|| panic!("no request line:\n{text}"));
    assert!(
        line.contains(" INFO ") && line.contains("status=200"),
        "{line}"
    );
    assert!(line.contains("latency=") && line.contains(" ms"), "{line}");
}
