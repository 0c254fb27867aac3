//! Logs and test output: lines counted by level, the runner's own tally
//! (pytest, cargo test, go test, jest), failed, error and warning lines with
//! their numbers, and the last lines.

use super::Material;
use super::detect::{Kind, test_runner};
use super::render::Doc;
use super::scan::{LEVELS, Level, Tally};

/// Summarizes logs or test output into `doc`.
pub fn summarize(m: &Material, doc: &mut Doc, max_chars: usize, kind: Kind) {
    let stats = &m.stats;
    let lines = m.text_lines(64);
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
    // About one shown line per 90 characters, shared out by severity.
    let mut budget = (max_chars / 90).clamp(3, 60);
    let tail_count = (budget / 3).clamp(1, 8);
    budget -= tail_count;
    let mut shown = Vec::new();
    for (level, title) in [
        (Level::Failed, "failed"),
        (Level::Error, "errors"),
        (Level::Warning, "warnings"),
    ] {
        let examples = &stats.examples[level as usize];
        let take = examples.len().min(budget);
        budget -= take;
        shown.extend(examples[..take].iter().map(|(n, _)| *n));
        doc.lines(title, examples[..take].to_vec());
    }
    let tail = m
        .tail_lines(tail_count)
        .into_iter()
        .filter(|(n, _)| !shown.contains(n))
        .map(|(n, l)| (n, super::scan::clean_line(l, false)))
        .collect();
    doc.lines("last lines", tail);
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
