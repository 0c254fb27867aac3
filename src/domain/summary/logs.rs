//! Logs, test output and build output: lines counted by level, the runner's
//! own tally (pytest, unittest, cargo test, go test, jest), failed, error
//! and warning lines with their numbers and where they were raised or point
//! to, and the last lines.

use super::Material;
use super::detect::{Kind, compiler, test_runner};
use super::line_stats::Tally;
use super::render::Doc;
use super::signal::{LEVELS, Level};

/// Summarizes logs or test output into `doc`.
pub fn summarize(m: &Material, doc: &mut Doc, kind: Kind) {
    let stats = &m.stats;
    let lines = m.text_lines(64);
    if kind == Kind::Build {
        let compiler = lines
            .iter()
            .find_map(|(_, l)| compiler(&String::from_utf8_lossy(l)));
        if let Some(compiler) = compiler {
            doc.detail(compiler);
        }
    }
    if kind == Kind::TestOutput {
        let runner = lines
            .iter()
            .find_map(|(_, l)| test_runner(&String::from_utf8_lossy(l)));
        if let Some(runner) = runner {
            doc.detail(runner);
        }
        if let Some(tests) = runner.and_then(|r| tests_line(r, m)) {
            doc.text(tests);
        }
    }
    let counts: Vec<String> = LEVELS
        .iter()
        .filter(|(level, _)| stats.counts[*level as usize] > 0)
        .map(|(level, word)| format!("{} {word}", stats.counts[*level as usize]))
        .collect();
    if counts.is_empty() {
        doc.text("lines by level: no failed, error or warning lines");
    } else {
        doc.text(format!("lines by level: {}", counts.join(", ")));
    }
    let shown = flagged(m, doc);
    let tail = m
        .tail_lines(TAIL_LINES)
        .into_iter()
        .filter(|(n, _)| !shown.contains(n))
        .map(|(n, l)| (n, super::line_stats::clean_line(l, false)))
        .collect();
    doc.lines("last lines", tail);
}

/// Last lines shown (after the flagged ones, as room allows).
const TAIL_LINES: usize = 3;

/// Adds the failed and error lines, where their exceptions were raised or
/// their diagnostics point, and the warnings, as room allows (most severe
/// first); returns the numbers of the lines shown.
pub fn flagged(m: &Material, doc: &mut Doc) -> Vec<u64> {
    let stats = &m.stats;
    let failed = stats.shown(Level::Failed);
    let errors = stats.shown(Level::Error);
    let thrown: Vec<u64> = failed
        .iter()
        .chain(&errors)
        .filter(|(_, text)| super::trace::may_point(text))
        .map(|(n, _)| *n)
        .collect();
    let raised_at = if thrown.is_empty() {
        Vec::new()
    } else {
        super::trace::locations(&m.text_lines(256), &thrown)
    };
    let warnings = stats.shown(Level::Warning);
    let shown = [&failed, &errors, &raised_at, &warnings]
        .iter()
        .flat_map(|lines| lines.iter().map(|(n, _)| *n))
        .collect();
    doc.lines("failed", failed);
    doc.lines("errors", errors);
    doc.lines("raised at", raised_at);
    doc.lines("warnings", warnings);
    shown
}

/// The runner's own count of tests, when its summary line is found.
fn tests_line(runner: &str, m: &Material) -> Option<String> {
    let tally = if runner == "cargo test" {
        Some(m.stats.tally).filter(|t| t.runs > 0)
    } else if runner == "go test" {
        let (mut ok, mut failed) = (0, 0);
        for (_, line) in m.text_lines(256) {
            if line.starts_with(b"ok  \t") || line.starts_with(b"ok \t") {
                ok += 1;
            } else if line.starts_with(b"FAIL\t") {
                failed += 1;
            }
        }
        return (ok + failed > 0).then(|| format!("packages: {ok} ok, {failed} failed"));
    } else if runner == "unittest" {
        return unittest_line(m);
    } else {
        // pytest and jest: the last line that tallies tests.
        m.tail_lines(64).iter().rev().find_map(|(_, line)| {
            let line = String::from_utf8_lossy(line);
            let summary = (runner == "pytest" && line.starts_with('=') && line.contains(" in "))
                || (runner == "jest" && line.starts_with("Tests:"));
            summary.then(|| Tally::parse(&line)).flatten()
        })
    }?;
    let mut parts = vec![
        format!("{} passed", tally.passed),
        format!("{} failed", tally.failed),
    ];
    if tally.skipped > 0 {
        parts.push(format!("{} skipped", tally.skipped));
    }
    let runs = if tally.runs > 1 {
        format!(" over {} runs", tally.runs)
    } else {
        String::new()
    };
    Some(format!("tests: {}{runs}", parts.join(", ")))
}

/// unittest's `Ran 4 tests in 0.001s` and `FAILED (failures=1, errors=1)` or `OK`.
fn unittest_line(m: &Material) -> Option<String> {
    let lines = m.tail_lines(64);
    let text = |l: &[u8]| String::from_utf8_lossy(l).trim_end().to_owned();
    let ran = lines.iter().rev().find_map(|(_, l)| {
        let t = text(l);
        let rest = t.strip_prefix("Ran ")?;
        rest.split_whitespace().next()?.parse::<u64>().ok()
    })?;
    let verdict = lines.iter().rev().find_map(|(_, l)| {
        let t = text(l);
        (t.starts_with("FAILED (") || t.starts_with("OK")).then_some(t)
    });
    Some(match verdict {
        Some(verdict) => format!("tests: {ran} run, {verdict}"),
        None => format!("tests: {ran} run"),
    })
}
