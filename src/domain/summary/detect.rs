//! Which kind of content this is, from its media type, head and tail.
//! Deterministic: the same bytes and mime always give the same kind.

use std::sync::LazyLock;

use super::signal::Level;
use super::{HEAD_KEEP, Material};

/// What a summary is shaped for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A JSON document, or JSON lines.
    Json,
    /// An HTML page.
    Html,
    /// Output of a test runner (pytest, cargo test, go test, jest).
    TestOutput,
    /// Log lines (timestamps, levels).
    Log,
    /// A compiler's output (rustc and cargo, gcc and clang, javac, tsc).
    Build,
    /// A file listing (`ls -l`, `ls -R`, `find`, `tree`, plain paths).
    Listing,
    /// A stack trace (Python, JVM, Rust, Node, Go).
    Trace,
    /// Any other text.
    Text,
    /// Content with NUL bytes.
    Binary,
}

impl Kind {
    /// The kind as summaries name it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Json => "json",
            Self::Html => "html",
            Self::TestOutput => "test-output",
            Self::Log => "log",
            Self::Build => "build-output",
            Self::Listing => "listing",
            Self::Trace => "stack-trace",
            Self::Text => "text",
            Self::Binary => "binary",
        }
    }
}

/// Prefix kept when the head looks like JSON: parsed in full up to here.
pub const JSON_KEEP: usize = 4 << 20;
/// Prefix kept when the head looks like markup.
const MARKUP_KEEP: usize = 1 << 20;
/// Prefix kept otherwise (listings, traces, the head of logs).
const TEXT_KEEP: usize = 256 << 10;

/// How many bytes of prefix to keep, judged from the first [`HEAD_KEEP`] bytes.
pub fn prefix_keep(head: &[u8]) -> usize {
    if looks_like_json(head) {
        JSON_KEEP
    } else if first_byte(head) == Some(b'<') {
        MARKUP_KEEP
    } else {
        TEXT_KEEP
    }
}

/// The kind of the content `material` shows.
pub fn detect(mime: &str, material: &Material) -> Kind {
    let head = &material.prefix[..material.prefix.len().min(HEAD_KEEP)];
    if memchr::memchr(0, head).is_some() {
        return Kind::Binary;
    }
    let mime = mime.to_ascii_lowercase();
    if looks_like_json(head) {
        return Kind::Json;
    }
    if mime.contains("html") || looks_like_html(head) {
        return Kind::Html;
    }
    let lines: Vec<&str> = text_lines(head)
        .chain(text_lines(
            &material.tail[material.tail.len().saturating_sub(HEAD_KEEP)..],
        ))
        .collect();
    if lines.iter().any(|l| test_runner(l).is_some()) {
        return Kind::TestOutput;
    }
    let head_lines: Vec<&str> = text_lines(head)
        .filter(|l| !l.trim().is_empty())
        .take(100)
        .collect();
    let share = |pred: fn(&str) -> bool| {
        let hits = head_lines.iter().filter(|l| pred(l)).count();
        (hits * 100).checked_div(head_lines.len()).unwrap_or(0)
    };
    let log_share = share(is_log_line);
    if log_share >= 60 {
        return Kind::Log;
    }
    // A compiler's diagnostics are among the error and warning lines kept.
    let diagnostics = [Level::Error, Level::Warning]
        .iter()
        .flat_map(|level| material.stats.shown(*level))
        .any(|(_, line)| compiler(&line).is_some());
    if diagnostics {
        return Kind::Build;
    }
    if lines.iter().any(|l| is_trace_marker(l)) {
        return Kind::Trace;
    }
    if head_lines.len() >= 2 && share(is_listing_line) >= 80 {
        return Kind::Listing;
    }
    if log_share >= 30 {
        return Kind::Log;
    }
    Kind::Text
}

/// A part of both pytest phrases [`test_runner`] looks for.
static TEST_S: LazyLock<memchr::memmem::Finder<'static>> =
    LazyLock::new(|| memchr::memmem::Finder::new("test s"));

/// The test runner a line shows, if it is typical of one.
pub fn test_runner(line: &str) -> Option<&'static str> {
    let t = line.trim_end();
    // Both pytest phrases hold `test s`: one search rules out most lines.
    if TEST_S.find(t.as_bytes()).is_some()
        && (t.contains("test session starts") || t.contains("short test summary info"))
    {
        return Some("pytest");
    }
    if t.starts_with("test result: ") || (t.starts_with("running ") && t.ends_with(" tests")) {
        return Some("cargo test");
    }
    if t.starts_with("=== RUN ") || t.starts_with("--- FAIL: ") || t.starts_with("--- PASS: ") {
        return Some("go test");
    }
    if (t.starts_with("Tests:") || t.starts_with("Test Suites:")) && t.ends_with(" total") {
        return Some("jest");
    }
    if t.starts_with("Ran ") && (t.contains(" tests in ") || t.contains(" test in ")) {
        return Some("unittest");
    }
    None
}

/// The compiler whose diagnostic or progress line `line` is, if it is one.
pub fn compiler(line: &str) -> Option<&'static str> {
    static DIAGNOSTIC: LazyLock<regex::Regex> = LazyLock::new(|| {
        #[allow(clippy::expect_used)] // constant pattern; the tests build it
        regex::Regex::new(
            r"^(?:[^\s:]+\.(c|cc|cpp|cxx|h|hpp|m|java|go):\d+(?::\d+)?: (?:fatal )?(?:error|warning):|[^\s:(]+\.(tsx?)\(\d+,\d+\): error TS\d+:)",
        )
        .expect("constant pattern")
    });
    let t = line.trim_end();
    if t.starts_with("error[E") || (t.starts_with("   Compiling ") && t.contains(" v")) {
        return Some("rustc");
    }
    // Every diagnostic below says ` error` or ` warning`: most lines say neither.
    static SAYS: LazyLock<[memchr::memmem::Finder<'static>; 2]> =
        LazyLock::new(|| [" error", " warning"].map(memchr::memmem::Finder::new));
    if !SAYS.iter().any(|f| f.find(t.as_bytes()).is_some()) {
        return None;
    }
    let caps = DIAGNOSTIC.captures(t)?;
    Some(match caps.get(1).or(caps.get(2)).map(|m| m.as_str()) {
        Some("java") => "javac",
        Some("go") => "go build",
        Some("ts" | "tsx") => "tsc",
        _ => "gcc",
    })
}

fn first_byte(head: &[u8]) -> Option<u8> {
    let head = head.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(head);
    head.iter().copied().find(|b| !b.is_ascii_whitespace())
}

/// True when `head` starts a JSON value: it parses, or only runs out early.
fn looks_like_json(head: &[u8]) -> bool {
    if !matches!(first_byte(head), Some(b'{' | b'[')) {
        return false;
    }
    let mut values =
        serde_json::Deserializer::from_slice(head).into_iter::<serde::de::IgnoredAny>();
    match values.next() {
        Some(Ok(_)) => true,
        Some(Err(e)) => e.is_eof(),
        None => false,
    }
}

fn looks_like_html(head: &[u8]) -> bool {
    if first_byte(head) != Some(b'<') {
        return false;
    }
    let lower = head[..head.len().min(2048)].to_ascii_lowercase();
    ["<!doctype html", "<html", "<head", "<body"]
        .iter()
        .any(|tag| memchr::memmem::find(&lower, tag.as_bytes()).is_some())
}

/// Lines of `bytes` as text (a cut UTF-8 sequence is dropped).
fn text_lines(bytes: &[u8]) -> impl Iterator<Item = &str> {
    bytes
        .split(|b| *b == b'\n')
        .filter_map(|l| std::str::from_utf8(l.strip_suffix(b"\r").unwrap_or(l)).ok())
}

/// A timestamp within the first 40 characters, or a level word.
pub fn is_log_line(line: &str) -> bool {
    let start = line.char_indices().nth(40).map_or(line.len(), |(i, _)| i);
    let b = &line.as_bytes()[..start];
    let digits_at = |s: &[u8], i: usize, n: usize| {
        s.get(i..i + n)
            .is_some_and(|d| d.iter().all(u8::is_ascii_digit))
    };
    let stamp = (0..b.len()).any(|i| {
        (digits_at(b, i, 4) && b.get(i + 4) == Some(&b'-') && digits_at(b, i + 5, 2))
            || (digits_at(b, i, 2)
                && b.get(i + 2) == Some(&b':')
                && digits_at(b, i + 3, 2)
                && b.get(i + 5) == Some(&b':'))
    });
    // Words are runs of ASCII letters: bytes of other characters separate them.
    stamp
        || line
            .as_bytes()
            .split(|b| !b.is_ascii_alphabetic())
            .any(|w| {
                matches!(
                    w,
                    b"INFO"
                        | b"WARN"
                        | b"WARNING"
                        | b"ERROR"
                        | b"DEBUG"
                        | b"TRACE"
                        | b"FATAL"
                        | b"CRITICAL"
                        | b"NOTICE"
                )
            })
        || LEVEL_ASSIGNMENT.find(line.as_bytes()).is_some()
}

/// `level=`, as structured logs write it.
static LEVEL_ASSIGNMENT: LazyLock<memchr::memmem::Finder<'static>> =
    LazyLock::new(|| memchr::memmem::Finder::new("level="));

/// A line that only a stack trace has.
pub fn is_trace_marker(line: &str) -> bool {
    let t = line.trim_start();
    line.starts_with("Traceback (most recent call last):")
        || (line.starts_with("thread '") && line.contains("' panicked at"))
        || line.starts_with("panic: ")
        || (line.starts_with("goroutine ") && line.ends_with("]:"))
        || line.starts_with("Exception in thread ")
        || (line.starts_with("\tat ") && line.ends_with(')'))
        || (line.starts_with("    at ")
            && (t.ends_with(')') || t.contains(".js:") || t.contains(".ts:")))
        || line.starts_with("Caused by: ")
}

/// An `ls -l` entry, an `ls -R` header, a `tree` entry, or a lone path.
pub fn is_listing_line(line: &str) -> bool {
    let t = line.trim_end();
    if t.starts_with("total ") && t[6..].trim().chars().all(|c| c.is_ascii_alphanumeric()) {
        return true;
    }
    if is_ls_long(t) {
        return true;
    }
    if t.contains("├── ") || t.contains("└── ") || t == "." {
        return true;
    }
    is_path(t) || (t.ends_with(':') && is_path(&t[..t.len() - 1]))
}

/// An `ls -l` line: a type letter and nine permission letters.
pub fn is_ls_long(line: &str) -> bool {
    let b = line.as_bytes();
    b.len() > 11
        && b"-dlcbps".contains(&b[0])
        && b[1..10].iter().all(|c| b"rwxsStT-".contains(c))
        && (b[10] == b' ' || (b"+.@".contains(&b[10]) && b[11] == b' '))
}

/// A path or file name: no control characters, a `/` or an extension, no prose.
pub fn is_path(line: &str) -> bool {
    let t = line.trim();
    if t.is_empty() || t.len() > 1024 || t.chars().any(char::is_control) {
        return false;
    }
    if t.contains('/') {
        return !t.contains(": ") && t.split(' ').count() <= 4;
    }
    !t.contains(' ')
        && t.rsplit_once('.').is_some_and(|(stem, ext)| {
            !stem.is_empty()
                && (1..=8).contains(&ext.len())
                && ext.chars().all(|c| c.is_ascii_alphanumeric())
        })
}
