//! Which lines state a failure, an error or a warning, judged by where the
//! verdict stands in the line: a level field or prefix in logs, a test
//! runner's verdict, a compiler diagnostic, an exception or panic line, a
//! non-zero exit status. A word inside an identifier, a path, a package name
//! or prose never counts (`liberror-perl`, `src/errors/mod.rs`,
//! `error_rate=0.00`, "Error handling in the service").
//!
//! Only lines the frame scan found a candidate word in are judged, so this
//! runs on few lines; it reads at most the line's kept head.

use std::sync::LazyLock;

use regex::Regex;

/// Line levels, most severe first; a line counts once, at its most severe level.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    /// A test runner's verdict: `FAILED tests/x.py::t`, `--- FAIL:`, `✕`.
    Failed = 0,
    /// A log level, compiler error, exception, panic or non-zero exit status.
    Error = 1,
    /// A warning level or diagnostic.
    Warning = 2,
    /// A line with the word `passed` (lines that only say `ok` are not counted:
    /// not worth a search of every frame).
    Passed = 3,
}

/// Levels in order, with the words shown for them.
pub const LEVELS: [(Level, &str); 4] = [
    (Level::Failed, "failed"),
    (Level::Error, "error"),
    (Level::Warning, "warning"),
    (Level::Passed, "passed"),
];

/// Bytes at the start of a line where a log level may stand.
const LEVEL_ZONE: usize = 80;
/// Words at the start of a line where an upper-case log level may stand.
const LEVEL_WORDS: usize = 6;

/// The level a line states, if any (`Passed` is never returned: a pass is
/// counted from the word alone).
pub fn classify(line: &[u8]) -> Option<Level> {
    if let Some(level) = leading_level(line) {
        return level;
    }
    let text = match std::str::from_utf8(line) {
        Ok(text) => std::borrow::Cow::Borrowed(text),
        Err(_) => String::from_utf8_lossy(line),
    };
    let text = plain(&text);
    let line = text.trim_end_matches(['\r', '\n']);
    let t = line.trim_start();
    if t.is_empty() {
        return None;
    }
    if let Some(verdict) = verdict(line, t) {
        return Some(verdict);
    }
    // A level where logs put it decides the line, whatever its message says
    // (an `INFO` line stating a failure is info); so does a level field.
    // Fields stand in unindented lines (`key=value` or JSON) only.
    let fields = || {
        let may = line.len() == t.len() && memchr::memchr2(b'=', b'"', line.as_bytes()).is_some();
        if may { level_field(line) } else { None }
    };
    let level = if t.starts_with('{') {
        fields().or_else(|| level_prefix(line, t))
    } else {
        level_prefix(line, t).or_else(fields)
    };
    if let Some(level) = level {
        return level;
    }
    diagnostic(t)
        .or_else(|| thrown(line, t))
        .or_else(|| (line.len() == t.len()).then(|| exit_status(t)).flatten())
}

/// The line without ANSI colour codes, and without the tags that open it
/// (a `<pre>` in a page).
fn plain(line: &str) -> std::borrow::Cow<'_, str> {
    let mut text = std::borrow::Cow::Borrowed(line);
    if line.contains('\x1b') {
        static ANSI: LazyLock<Regex> = LazyLock::new(|| pattern(r"\x1b\[[0-9;?]*[A-Za-z]"));
        text = std::borrow::Cow::Owned(ANSI.replace_all(line, "").into_owned());
    }
    let trimmed = text.trim_start();
    if trimmed.starts_with('<') {
        let mut rest = trimmed;
        while let Some(after) = rest.strip_prefix('<') {
            match after.find('>') {
                Some(end) => rest = &after[end + 1..],
                None => break,
            }
        }
        return std::borrow::Cow::Owned(rest.to_owned());
    }
    text
}

/// The level an upper-case level name means: `Some(None)` for a level that
/// is not a problem (`INFO`), which decides the line as much as `ERROR` does;
/// `None` for a word that names no level.
fn level_of(upper: &[u8]) -> Option<Option<Level>> {
    match upper {
        b"ERROR" | b"ERR" | b"FATAL" | b"CRITICAL" | b"CRIT" | b"SEVERE" | b"PANIC" | b"EMERG" => {
            Some(Some(Level::Error))
        }
        b"WARN" | b"WARNING" => Some(Some(Level::Warning)),
        b"INFO" | b"NOTICE" | b"DEBUG" | b"TRACE" | b"FINE" | b"VERBOSE" | b"LOG" => Some(None),
        _ => None,
    }
}

/// [`level_of`] a word in any case.
fn level_named(word: &str) -> Option<Option<Level>> {
    // Upper-cased on the stack: this runs on several words of every judged line.
    let mut upper = [0u8; 8];
    let len = word.len();
    if !(3..=8).contains(&len) {
        return None;
    }
    upper[..len].copy_from_slice(word.as_bytes());
    upper[..len].make_ascii_uppercase();
    level_of(&upper[..len])
}

/// `level=error`, `"level":"error"`, `severity=ERROR` anywhere in the line:
/// `Some(level)` when the line has such a field (`Some(None)` for info).
fn level_field(line: &str) -> Option<Option<Level>> {
    static NAMES: LazyLock<Vec<(memchr::memmem::Finder<'static>, usize)>> = LazyLock::new(|| {
        [
            "level", "LEVEL", "Level", "lvl", "severity", "Severity", "SEVERITY",
        ]
        .iter()
        .map(|name| (memchr::memmem::Finder::new(name.as_bytes()), name.len()))
        .collect()
    });
    let bytes = line.as_bytes();
    for (finder, len) in NAMES.iter() {
        for at in finder.find_iter(bytes) {
            // A whole field name: `level`, `"level"`, `log.level`, not `sublevel`.
            if at > 0 && bytes[at - 1].is_ascii_alphanumeric() {
                continue;
            }
            if let Some(word) = field_value(&line[at + len..]) {
                let level = match word.to_ascii_lowercase().as_str() {
                    "eror" | "err" | "error" | "fatal" | "crit" | "critical" | "panic"
                    | "emerg" | "alert" | "severe" => Some(Level::Error),
                    "warn" | "warning" => Some(Level::Warning),
                    _ => match level_named(word) {
                        Some(level) => level,
                        None => continue,
                    },
                };
                return Some(level);
            }
        }
    }
    None
}

/// The word a field's name is given in `rest` (what follows the name):
/// `=error`, `": "error"`, `: warn`.
fn field_value(rest: &str) -> Option<&str> {
    let rest = rest.strip_prefix('"').unwrap_or(rest).trim_start();
    let rest = rest.strip_prefix(['=', ':'])?.trim_start();
    let rest = rest.strip_prefix('"').unwrap_or(rest);
    let end = rest
        .find(|c: char| !c.is_ascii_alphabetic())
        .unwrap_or(rest.len());
    (end > 0).then(|| &rest[..end])
}

/// The common case of [`level_prefix`], on bytes: an upper-case level word
/// among the first words of a plain line (`2026-11-24 10:00:01 ERROR …`,
/// `[WARN] …`). `None` when the line needs the full judgement: it may end in
/// a runner's verdict, or starts with something else.
fn leading_level(line: &[u8]) -> Option<Option<Level>> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let verdict_end = [&b"FAILED"[..], b"FAIL", b"ERROR", b"]"]
        .iter()
        .any(|end| line.ends_with(end));
    if verdict_end
        || line
            .first()
            .is_none_or(|b| !b.is_ascii_alphanumeric() && *b != b'[')
    {
        return None;
    }
    let zone = &line[..line.len().min(LEVEL_ZONE)];
    for word in zone
        .split(|b| *b == b' ')
        .filter(|w| !w.is_empty())
        .take(LEVEL_WORDS)
    {
        let bare = word.strip_suffix(b":").unwrap_or(word);
        let bare = bare.strip_prefix(b"[").unwrap_or(bare);
        let bare = bare.strip_suffix(b"]").unwrap_or(bare);
        if bare.len() < 3 || !bare.iter().all(u8::is_ascii_uppercase) {
            continue;
        }
        if let Some(level) = level_of(bare) {
            return Some(level);
        }
    }
    None
}

/// A test runner's verdict on a test, a file or a run.
fn verdict(line: &str, t: &str) -> Option<Level> {
    let failed = Some(Level::Failed);
    // pytest's short summary and unittest's headers and verdict.
    if t.starts_with("FAILED ") || t == "FAILED" || t.starts_with("FAIL: ") {
        return failed;
    }
    // go test: a test, a subtest, a package, the run; jest: a file.
    if t.starts_with("--- FAIL: ") || t == "FAIL" || line.starts_with("FAIL\t") {
        return failed;
    }
    if line.starts_with("FAIL ") && line.split_whitespace().count() == 2 {
        return failed;
    }
    // jest and vitest marks; a go test's own failure message.
    if t.starts_with("✕ ") || t.starts_with("✗ ") {
        return failed;
    }
    static GO_MESSAGE: LazyLock<Regex> = LazyLock::new(|| pattern(r"^\s+[\w./-]+_test\.go:\d+: "));
    if line.starts_with(char::is_whitespace)
        && line.contains("_test.go:")
        && GO_MESSAGE.is_match(line)
    {
        return failed;
    }
    // cargo test, unittest (`... FAIL`, `... ERROR`), pytest -v (`FAILED [ 50%]`).
    static VERDICT: LazyLock<Regex> = LazyLock::new(|| {
        pattern(r"(?: \.\.\. (?:FAILED|FAIL|ERROR)|::\S+ (?:FAILED|ERROR)(?:\s+\[\s*\d+%\])?)$")
    });
    let verdict_end = ["FAILED", "FAIL", "ERROR", "]"]
        .iter()
        .any(|end| t.ends_with(end));
    if verdict_end && VERDICT.is_match(t) {
        return failed;
    }
    if t.starts_with("test result: FAILED") {
        return failed;
    }
    None
}

/// A compiler's diagnostic: `error[E0308]:`, `error:`, `warning:` at the
/// start, or after a location (`src/a.c:4:12: error:`, `a.ts(3,10): error TS2305:`).
fn diagnostic(t: &str) -> Option<Level> {
    static AT_START: LazyLock<Regex> =
        LazyLock::new(|| pattern(r"^(?:(?:fatal )?(?:error|warning)(?:\[[\w-]+\])?:|fatal: )"));
    static LOCATED: LazyLock<Regex> = LazyLock::new(|| {
        pattern(
            r"^[^\s:]+(?::\d+(?::\d+)?:|\(\d+(?:,\d+)?\):) (?:fatal )?(?:error|warning)(?:\[[\w-]+\])?(?::| [A-Z]+\d+:)",
        )
    });
    // Cheap shapes first: the patterns run only on lines that may match.
    let starts = ["error", "warning", "fatal"]
        .iter()
        .any(|w| t.starts_with(w));
    let first = byte_at(t, b' ').map_or(t, |at| &t[..at]);
    let located = first.len() > 2 && first.ends_with(':');
    // `is_match` only: the level is the word after the location, which
    // spares the capturing engine on every diagnostic.
    let (matched, level_word) = if starts {
        (AT_START.is_match(t), t.strip_prefix("fatal ").unwrap_or(t))
    } else if located {
        let after = t[first.len()..].trim_start();
        (
            LOCATED.is_match(t),
            after.strip_prefix("fatal ").unwrap_or(after),
        )
    } else {
        (false, t)
    };
    matched.then(|| {
        if level_word.starts_with("warning") {
            Level::Warning
        } else {
            Level::Error
        }
    })
}

/// An exception, panic or uncaught error line: `ValueError: …`,
/// `java.lang.IllegalStateException: …`, `Caused by: …`, `panic: …`,
/// `thread 'main' panicked at …`, `Error: ENOENT …`, and a located one
/// (`cart.py:12: ValueError`).
fn thrown(line: &str, t: &str) -> Option<Level> {
    let error = Some(Level::Error);
    if t.starts_with("Exception in thread ")
        || t.starts_with("Caused by: ")
        || line.starts_with("panic: ")
        || line.starts_with("fatal error: ")
        || (t.starts_with("thread '") && t.contains(" panicked at "))
    {
        return error;
    }
    // Exception lines stand at the start, after a location (`cart.py:12: `) at most.
    let mut words = t.split(' ');
    let mut name = words.next().unwrap_or("");
    let located = name.strip_suffix(':').is_some_and(|at| {
        at.rsplit_once(':')
            .is_some_and(|(_, n)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
    });
    if located {
        name = words.next().unwrap_or("");
    } else if line.starts_with(char::is_whitespace) {
        return None;
    }
    // The name ends the line or is followed by `: `.
    let (bare, ends) = match name.strip_suffix(':') {
        Some(bare) => (bare, true),
        None => (name, words.next().is_none()),
    };
    let dotted = bare.split('.').all(|part| {
        !part.is_empty()
            && part
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'$')
    });
    if !ends || !dotted {
        return None;
    }
    if bare.ends_with("Warning") {
        Some(Level::Warning)
    } else if bare.ends_with("Error") || bare.ends_with("Exception") {
        error
    } else {
        None
    }
}

/// A level standing where logs put it: one of the first words in upper
/// case (`2026-11-24 10:00:01 ERROR …`, `[ERROR]`, `ERROR:`, `npm ERR!`), a
/// bracketed level in any case (`[error]`, `##[error]`), a level the line
/// starts with and a colon follows (`error:`, `fatal:`, also after a syslog
/// tag), one-letter levels (`E: ` of apt, `E   ` of pytest, `E1124 07:21:33` of glog).
/// `Some(None)` for a level that is not a problem.
fn level_prefix(line: &str, t: &str) -> Option<Option<Level>> {
    let b = line.as_bytes();
    if let [letter @ (b'E' | b'W' | b'F'), rest @ ..] = b {
        let one_letter = rest.starts_with(b": ")
            || rest.starts_with(b"   ")
            || (rest.len() > 12
                && rest[..4].iter().all(u8::is_ascii_digit)
                && rest[4] == b' '
                && rest[7] == b':');
        // pytest's `E    +  where 100 = total()` explains the line above it.
        if one_letter && rest.trim_ascii_start().starts_with(b"+") {
            return Some(None);
        }
        if one_letter {
            return Some(Some(if *letter == b'W' {
                Level::Warning
            } else {
                Level::Error
            }));
        }
    }
    let zone_end = (0..=LEVEL_ZONE.min(t.len()))
        .rev()
        .find(|i| t.is_char_boundary(*i))
        .unwrap_or(0);
    let zone = &t[..zone_end];
    if let Some(level) = bracketed(zone) {
        return Some(level);
    }
    let mut previous = "";
    let mut words = zone
        .split_ascii_whitespace()
        .take(LEVEL_WORDS)
        .enumerate()
        .peekable();
    while let Some((i, word)) = words.next() {
        let before_colon = byte_at(word, b':').map_or(word, |at| &word[..at]);
        let bare = before_colon
            .trim_matches(|c| matches!(c, '[' | ']' | '(' | ')' | '<' | '>' | '|' | '!' | ','));
        if let Some(level) = level_named(bare) {
            let upper = bare.bytes().all(|c| c.is_ascii_uppercase());
            let colon = word.len() > before_colon.len();
            let opens = i == 0 || previous.ends_with("]:");
            // `npm error` with nothing after it only spaces out a message.
            if previous == "npm" && words.peek().is_none() && zone.len() == t.len() {
                return Some(None);
            }
            if upper || previous == "npm" || (colon && opens) {
                return Some(level);
            }
        }
        previous = word;
    }
    None
}

/// A level in brackets within the zone: `[error]`, `[WARN]`, `##[error]`.
fn bracketed(zone: &str) -> Option<Option<Level>> {
    let mut rest = zone;
    while let Some(open) = byte_at(rest, b'[') {
        let after = &rest[open + 1..];
        let Some(close) = byte_at(after, b']') else {
            break;
        };
        let word = after[..close].trim();
        if let Some(level) = level_named(word) {
            return Some(level);
        }
        rest = &after[close..];
    }
    None
}

/// A non-zero exit status that ends the line (`exit status 1`, `Process
/// completed with exit code 1.`, `status=1/FAILURE`, `make: *** … Error 2`).
fn exit_status(t: &str) -> Option<Level> {
    static STATUS: LazyLock<Regex> = LazyLock::new(|| {
        pattern(
            r"(?i)(?:exit (?:status|code)|exited with (?:code|status)|non-zero exit status|exit code:)\s*(\d+)[.)]?$|status=(\d+)/FAILURE|^make(?:\[\d+\])?: \*\*\* .*Error (\d+)",
        )
    });
    static SAYS: LazyLock<[memchr::memmem::Finder<'static>; 3]> =
        LazyLock::new(|| ["xit", "XIT", "status="].map(memchr::memmem::Finder::new));
    if !t.starts_with("make") && !SAYS.iter().any(|f| f.find(t.as_bytes()).is_some()) {
        return None;
    }
    let caps = STATUS.captures(t)?;
    let code = caps.iter().skip(1).flatten().next()?.as_str();
    (!code.trim_start_matches('0').is_empty()).then_some(Level::Error)
}

/// Where the ASCII byte `b` first stands in `s`: a plain loop, cheaper than
/// a SIMD search on the few bytes of a word or a line's head.
fn byte_at(s: &str, b: u8) -> Option<usize> {
    s.bytes().position(|c| c == b)
}

/// A constant pattern, built once (the tests build every one of them).
fn pattern(re: &str) -> Regex {
    #[allow(clippy::expect_used)] // constant pattern; a test builds it
    Regex::new(re).expect("constant pattern")
}

#[cfg(test)]
#[path = "signal_tests.rs"]
mod tests;
