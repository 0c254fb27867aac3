//! The token-counting section of the report: its own heading, command and
//! table, so that it can be measured alone and put into an existing report
//! without touching the other sections.

use std::fmt::Write as _;

use crate::measure::tokens::{Pass, TokenCounting};

/// The section's heading; everything from it to the next `## ` heading is the section.
pub const HEADING: &str = "## Token counting";

/// The section as Markdown.
pub fn render(result: &TokenCounting, command: &str, revision: Option<&str>) -> String {
    let mut out = format!("{HEADING}\n\n");
    let _ = writeln!(out, "- **Command**: {command}");
    if let Some(revision) = revision {
        let _ = writeln!(out, "- **Code**: git {revision}");
    }
    let sources: Vec<String> = result
        .sources
        .iter()
        .map(|p| format!("`{}`", p.display()))
        .collect();
    let _ = writeln!(
        out,
        "- **Corpus**: {:.1} MB ({} files: `.rs`, `.md`, `.txt` and extension-less text files under {}, sorted by path, each counted as one text)",
        result.bytes as f64 / 1e6,
        result.files,
        sources.join(" and ")
    );
    let _ = writeln!(
        out,
        "- **Load average at the end**: {}",
        crate::report::load_average()
    );
    out.push_str(
        "- One thread; MB = 10^6 bytes. Speed per second of the counting thread's CPU time \
         (fair while other work shares the CPUs); wall-clock speed in brackets.\n\n",
    );
    out.push_str(
        "| Encoding | Cairn | bpe-openai | tiktoken-rs | Cairn / bpe-openai | Cairn / tiktoken-rs | Tokens | Files whose counts differ from tiktoken-rs (Cairn, bpe-openai) |\n\
         | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n",
    );
    let mb = result.bytes as f64 / 1e6;
    for r in &result.results {
        let (cairn, bpe, tiktoken) = (
            speed(mb, &r.cairn),
            speed(mb, &r.bpe),
            speed(mb, &r.tiktoken),
        );
        let tokens = if r.cairn.tokens == r.tiktoken.tokens && r.bpe.tokens == r.tiktoken.tokens {
            r.tiktoken.tokens.to_string()
        } else {
            format!(
                "{} vs {} vs {}",
                r.cairn.tokens, r.bpe.tokens, r.tiktoken.tokens
            )
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {:.2}× | {:.2}× | {tokens} | {}, {} |",
            r.encoding,
            cairn.1,
            bpe.1,
            tiktoken.1,
            cairn.0 / bpe.0,
            cairn.0 / tiktoken.0,
            r.cairn_mismatched_files,
            r.mismatched_files
        );
    }
    out
}

/// MB/s of a pass (per CPU second when known) and its table cell.
fn speed(mb: f64, pass: &Pass) -> (f64, String) {
    let wall = mb / pass.elapsed.as_secs_f64();
    match pass.cpu.filter(|c| !c.is_zero()) {
        Some(cpu) => {
            let per_cpu = mb / cpu.as_secs_f64();
            (
                per_cpu,
                format!(
                    "{per_cpu:.1} MB/s ({wall:.1}; {:.1} s)",
                    pass.elapsed.as_secs_f64()
                ),
            )
        }
        None => (
            wall,
            format!("({wall:.1} MB/s; {:.1} s)", pass.elapsed.as_secs_f64()),
        ),
    }
}

/// `report` with its token-counting section replaced by `section` (or, with
/// no section, kept as it was), the section going last.
pub fn splice(report: &str, section: Option<&str>, previous: Option<&str>) -> String {
    let (rest, old) = cut(report);
    let old = old.or_else(|| previous.and_then(|p| cut(p).1));
    let mut out = rest.trim_end().to_owned();
    if let Some(section) = section.or(old.as_deref()) {
        if !out.is_empty() {
            out.push_str("\n\n");
        }
        out.push_str(section.trim_end());
    }
    out.push('\n');
    out
}

/// Splits a report into everything but the token section, and that section.
fn cut(report: &str) -> (String, Option<String>) {
    let Some(start) = report
        .match_indices(HEADING)
        .map(|(i, _)| i)
        .find(|&i| i == 0 || report[..i].ends_with('\n'))
    else {
        return (report.to_owned(), None);
    };
    let after = start + HEADING.len();
    let end = report[after..]
        .find("\n## ")
        .map_or(report.len(), |i| after + i + 1);
    let mut rest = report[..start].to_owned();
    rest.push_str(&report[end..]);
    (rest, Some(report[start..end].to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAIN: &str = "# Cairn benchmark\n\n| a | b |\n\n## Notes\n\n- n\n";

    #[test]
    fn a_new_section_goes_last_and_replaces_the_old_one() {
        let first = splice(MAIN, Some("## Token counting\n\nv1\n"), None);
        assert_eq!(
            first,
            format!("{}\n\n## Token counting\n\nv1\n", MAIN.trim_end())
        );
        let second = splice(&first, Some("## Token counting\n\nv2\n"), None);
        assert!(second.contains("v2") && !second.contains("v1"));
        assert!(second.starts_with(MAIN.trim_end()));
    }

    #[test]
    fn a_rewritten_main_report_keeps_the_previous_section() {
        let old = splice(MAIN, Some("## Token counting\n\nv1\n"), None);
        let rewritten = splice("# Cairn benchmark\n\nnew\n", None, Some(&old));
        assert_eq!(
            rewritten,
            "# Cairn benchmark\n\nnew\n\n## Token counting\n\nv1\n"
        );
    }

    #[test]
    fn a_section_in_the_middle_is_cut_out_whole() {
        let report = "# T\n\n## Token counting\n\nx\n\n## Notes\n\n- n\n";
        let (rest, section) = cut(report);
        assert_eq!(rest, "# T\n\n## Notes\n\n- n\n");
        assert_eq!(section.as_deref(), Some("## Token counting\n\nx\n\n"));
    }
}
