//! The Markdown report: the machine, the command, one table row per measure
//! (value, target, verdict) and free-form notes.

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;

/// Whether a measure met its target.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Target met.
    Pass,
    /// Target missed, or the measure failed.
    Fail,
    /// No target: reported for context.
    Info,
}

/// One line of the results table.
#[derive(Clone, Debug)]
pub struct Row {
    /// What was measured.
    pub measure: String,
    /// The figure found.
    pub value: String,
    /// The figure wanted (empty for information only).
    pub target: String,
    /// Pass, fail or information.
    pub verdict: Verdict,
}

/// Facts about the machine the run happened on.
#[derive(Clone, Debug)]
pub struct Machine {
    /// Logical CPUs available (as `nproc` counts them).
    pub cpus: usize,
    /// `model name` from /proc/cpuinfo.
    pub cpu_model: String,
    /// Total memory, from /proc/meminfo.
    pub memory: String,
    /// Kernel release.
    pub kernel: String,
    /// Local date and time of the start.
    pub date: String,
}

impl Machine {
    /// Reads what it can from /proc; unknown fields say so.
    pub fn detect() -> Self {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu_model = field(&cpuinfo, "model name")
            .or_else(|| field(&cpuinfo, "Model"))
            .unwrap_or_else(|| "unknown CPU".to_owned());
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        let memory = field(&meminfo, "MemTotal")
            .and_then(|kib| kib.trim_end_matches("kB").trim().parse::<f64>().ok())
            .map_or_else(
                || "unknown".to_owned(),
                |kib| format!("{:.1} GiB", kib / 1024.0 / 1024.0),
            );
        let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .map_or_else(|_| "unknown".to_owned(), |k| k.trim().to_owned());
        Self {
            cpus: std::thread::available_parallelism().map_or(0, |n| n.get()),
            cpu_model,
            memory,
            kernel,
            date: chrono::Local::now()
                .format("%Y-%m-%d %H:%M:%S %z")
                .to_string(),
        }
    }
}

/// The value after `name` and a colon on a `name : value` line.
fn field(text: &str, name: &str) -> Option<String> {
    text.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        (key.trim() == name).then(|| value.trim().to_owned())
    })
}

/// The 1-, 5- and 15-minute load averages.
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".to_owned())
}

/// The short commit of the repository at `dir`, marked when the tree has local changes.
pub fn git_revision(dir: &Path) -> Option<String> {
    let run = |args: &[&str]| {
        Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(args)
            .output()
            .ok()
            .filter(|out| out.status.success())
            .map(|out| String::from_utf8_lossy(&out.stdout).trim().to_owned())
    };
    let commit = run(&["rev-parse", "--short", "HEAD"])?;
    let dirty = run(&["status", "--porcelain", "--untracked-files=no"])
        .is_some_and(|status| !status.is_empty());
    Some(if dirty {
        format!("{commit} + local changes")
    } else {
        commit
    })
}

/// The whole report, built up as measures finish.
#[derive(Debug)]
pub struct Report {
    machine: Machine,
    /// Header facts (`- **Key**: value` lines), in order.
    facts: Vec<(String, String)>,
    rows: Vec<Row>,
    notes: Vec<String>,
}

impl Report {
    /// An empty report about `machine`.
    pub fn new(machine: Machine) -> Self {
        Self {
            machine,
            facts: Vec::new(),
            rows: Vec::new(),
            notes: Vec::new(),
        }
    }

    /// Adds a header fact.
    pub fn fact(&mut self, key: &str, value: impl Into<String>) {
        self.facts.push((key.to_owned(), value.into()));
    }

    /// Adds a measure without a target.
    pub fn info(&mut self, measure: impl Into<String>, value: impl Into<String>) {
        self.row(measure, value, "", Verdict::Info);
    }

    /// Adds a measure with its target and whether it was met.
    pub fn check(
        &mut self,
        measure: impl Into<String>,
        value: impl Into<String>,
        target: impl Into<String>,
        met: bool,
    ) {
        let verdict = if met { Verdict::Pass } else { Verdict::Fail };
        self.row(measure, value, target, verdict);
    }

    /// Records a measure that could not be taken.
    pub fn failed(&mut self, measure: &str, error: &anyhow::Error) {
        self.row(measure, "error", "", Verdict::Fail);
        self.note(format!("{measure} failed: {error:#}"));
    }

    fn row(
        &mut self,
        measure: impl Into<String>,
        value: impl Into<String>,
        target: impl Into<String>,
        verdict: Verdict,
    ) {
        self.rows.push(Row {
            measure: measure.into(),
            value: value.into(),
            target: target.into(),
            verdict,
        });
    }

    /// Adds a note under the table.
    pub fn note(&mut self, text: impl Into<String>) {
        self.notes.push(text.into());
    }

    /// Whether any measure was recorded.
    pub fn has_rows(&self) -> bool {
        !self.rows.is_empty()
    }

    /// Measures that missed their target or failed.
    pub fn failures(&self) -> usize {
        self.rows
            .iter()
            .filter(|r| r.verdict == Verdict::Fail)
            .count()
    }

    /// The report as Markdown.
    pub fn render(&self) -> String {
        let mut out = String::from("# Cairn benchmark\n\n");
        let machine = &self.machine;
        let _ = writeln!(out, "- **Date**: {}", machine.date);
        let _ = writeln!(
            out,
            "- **Machine**: {} CPUs (nproc), {}, {} RAM, Linux {}",
            machine.cpus, machine.cpu_model, machine.memory, machine.kernel
        );
        for (key, value) in &self.facts {
            let _ = writeln!(out, "- **{key}**: {value}");
        }
        out.push_str("\n| Measure | Value | Target | Result |\n| --- | ---: | --- | --- |\n");
        for row in &self.rows {
            let verdict = match row.verdict {
                Verdict::Pass => "pass",
                Verdict::Fail => "**FAIL**",
                Verdict::Info => "",
            };
            let _ = writeln!(
                out,
                "| {} | {} | {} | {verdict} |",
                cell(&row.measure),
                cell(&row.value),
                cell(&row.target)
            );
        }
        let judged = self
            .rows
            .iter()
            .filter(|r| r.verdict != Verdict::Info)
            .count();
        let _ = writeln!(
            out,
            "\n{} of {judged} targets met.",
            judged - self.failures()
        );
        if !self.notes.is_empty() {
            out.push_str("\n## Notes\n\n");
            for note in &self.notes {
                let _ = writeln!(out, "- {}", note.replace('\n', "\n  "));
            }
        }
        out
    }
}

/// The report file at `path` with `section` (a run of `--only <measure>`)
/// put in place of that measure's earlier section, or added at the end.
pub fn with_section(path: &Path, measure: crate::Measure, section: &str) -> String {
    let name = format!("{measure:?}").to_ascii_lowercase();
    let (start, end) = (
        format!("<!-- cairn-bench --only {name} -->"),
        format!("<!-- end --only {name} -->"),
    );
    let body = section.replacen(
        "# Cairn benchmark",
        &format!("## Cairn benchmark: {name} alone"),
        1,
    );
    let block = format!("{start}\n{}\n{end}\n", body.trim_end());
    let existing = std::fs::read_to_string(path).unwrap_or_default();
    match (existing.find(&start), existing.find(&end)) {
        (Some(a), Some(b)) if a < b => {
            let tail = &existing[b + end.len()..];
            format!("{}{block}{}", &existing[..a], tail.trim_start_matches('\n'))
        }
        _ if existing.is_empty() => block,
        _ => format!("{}\n\n{block}", existing.trim_end()),
    }
}

/// A table cell: pipes escaped so they do not split the row.
fn cell(text: &str) -> String {
    text.replace('|', "\\|")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_a_row_per_measure_and_counts_targets() {
        let mut report = Report::new(Machine::detect());
        report.check("slice p50", "1.0 ms", "< 2 ms", true);
        report.check("puts", "10/s", "≥ 3,000/s", false);
        report.info("zstd", "300 MiB/s");
        let text = report.render();
        assert!(text.contains("| slice p50 | 1.0 ms | < 2 ms | pass |"));
        assert!(text.contains("| puts | 10/s | ≥ 3,000/s | **FAIL** |"));
        assert!(text.contains("1 of 2 targets met."));
    }

    #[test]
    fn reads_colon_fields() {
        assert_eq!(
            field("model name\t: Some CPU\nflags : x", "model name").as_deref(),
            Some("Some CPU")
        );
    }
}
