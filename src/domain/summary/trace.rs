//! Stack traces (Python, JVM, Rust, Node, Go): the exception or panic
//! message and the frames nearest to it, with their line numbers.

use super::Material;
use super::line_stats::clean_line;
use super::render::{Doc, clip};

/// Frames shown at most.
const FRAMES: usize = 8;

/// What a trace shows.
struct Found {
    language: &'static str,
    message: Option<String>,
    cause: Option<String>,
    frames: Vec<(u64, String)>,
}

/// Summarizes a stack trace into `doc`.
pub fn summarize(m: &Material, doc: &mut Doc, max_chars: usize) {
    let lines: Vec<(u64, String)> = m
        .text_lines(400)
        .into_iter()
        .map(|(n, l)| (n, String::from_utf8_lossy(l).trim_end().to_owned()))
        .collect();
    let found = python(&lines)
        .or_else(|| rust(&lines))
        .or_else(|| go(&lines))
        .or_else(|| jvm_or_node(&lines));
    let Some(found) = found else {
        doc.text("no frames recognized");
        return;
    };
    doc.detail(found.language);
    if let Some(message) = &found.message {
        doc.text(format!("message: {}", clip(message, max_chars / 3)));
    }
    if let Some(cause) = &found.cause {
        doc.text(format!("root cause: {}", clip(cause, max_chars / 4)));
    }
    let show = (max_chars / 90).clamp(2, FRAMES);
    let frames: Vec<(u64, String)> = found
        .frames
        .into_iter()
        .take(show)
        .map(|(n, f)| (n, clean_line(f.trim().as_bytes(), false)))
        .collect();
    doc.lines("top frames", frames);
}

/// Python: the last traceback's exception line and its innermost frames.
fn python(lines: &[(u64, String)]) -> Option<Found> {
    let start = lines
        .iter()
        .rposition(|(_, l)| l.starts_with("Traceback (most recent call last):"))?;
    let mut frames = Vec::new();
    let mut message = None;
    for (n, line) in &lines[start + 1..] {
        if line.trim_start().starts_with("File \"") {
            frames.push((*n, line.clone()));
        } else if !line.starts_with(' ') && !line.is_empty() {
            message = Some(line.clone());
            break;
        }
    }
    frames.reverse(); // innermost first
    Some(Found {
        language: "python",
        message,
        cause: None,
        frames,
    })
}

/// Rust: the panic message (new and old formats) and the backtrace's own frames.
fn rust(lines: &[(u64, String)]) -> Option<Found> {
    let at = lines
        .iter()
        .position(|(_, l)| l.starts_with("thread '") && l.contains("' panicked at"))?;
    let line = &lines[at].1;
    let message = if line.ends_with(':') {
        let next = lines.get(at + 1).map_or("", |(_, l)| l.as_str());
        format!("{} {next}", line.trim_end_matches(':'))
    } else {
        line.clone()
    };
    let frames = lines[at + 1..]
        .iter()
        .filter(|(_, l)| {
            let t = l.trim_start();
            let numbered = t
                .split_once(": ")
                .is_some_and(|(n, _)| n.chars().all(|c| c.is_ascii_digit()) && !n.is_empty());
            numbered
                && ![
                    "std::",
                    "core::",
                    "alloc::",
                    "rust_begin_unwind",
                    "__rust",
                    "<unknown>",
                ]
                .iter()
                .any(|skip| t.split_once(": ").is_some_and(|(_, f)| f.starts_with(skip)))
        })
        .cloned()
        .collect();
    Some(Found {
        language: "rust",
        message: Some(message),
        cause: None,
        frames,
    })
}

/// Go: the panic message and the panicking goroutine's calls.
fn go(lines: &[(u64, String)]) -> Option<Found> {
    let at = lines
        .iter()
        .position(|(_, l)| l.starts_with("panic: ") || l.starts_with("fatal error: "))?;
    let message = lines[at].1.clone();
    let frames = lines[at + 1..]
        .iter()
        .skip_while(|(_, l)| !(l.starts_with("goroutine ") && l.ends_with("]:")))
        .skip(1)
        .filter(|(_, l)| !l.starts_with('\t') && !l.is_empty())
        .take_while(|(_, l)| !l.starts_with("goroutine "))
        .cloned()
        .collect();
    Some(Found {
        language: "go",
        message: Some(message),
        cause: None,
        frames,
    })
}

/// JVM and Node: the line before the first `at` frame, the `at` frames, and the last `Caused by:`.
fn jvm_or_node(lines: &[(u64, String)]) -> Option<Found> {
    let is_frame = |l: &str| l.trim_start().starts_with("at ") && l.starts_with([' ', '\t']);
    let first = lines.iter().position(|(_, l)| is_frame(l))?;
    let node = lines[first].1.contains(".js:")
        || lines[first].1.contains(".ts:")
        || lines[first].1.contains("node:");
    let message = lines[..first]
        .iter()
        .rev()
        .find(|(_, l)| !l.trim().is_empty() && !l.starts_with(' '))
        .map(|(_, l)| l.clone());
    let frames = lines[first..]
        .iter()
        .take_while(|(_, l)| is_frame(l) || l.trim_start().starts_with("..."))
        .filter(|(_, l)| is_frame(l))
        .cloned()
        .collect();
    let cause = lines
        .iter()
        .rev()
        .find_map(|(_, l)| l.strip_prefix("Caused by: ").map(str::to_owned));
    Some(Found {
        language: if node { "node" } else { "jvm" },
        message,
        cause,
        frames,
    })
}

/// True when a flagged line is one [`locations`] may find a frame or a
/// location for: an exception line or a compiler diagnostic without one.
pub fn may_point(text: &str) -> bool {
    let first = text.split_whitespace().next().unwrap_or("");
    let name = first.trim_end_matches(':');
    !text.starts_with(char::is_whitespace)
        && (name.ends_with("Error")
            || name.ends_with("Exception")
            || text.starts_with("Exception in thread ")
            || text.starts_with("Caused by: ")
            || text.starts_with("error[")
            || text.starts_with("error: ")
            || text.starts_with("warning: "))
}

/// Frames shown for thrown lines at most.
const LOCATIONS: usize = 4;

/// Where the exceptions and diagnostics on the `thrown` lines point, from
/// the `lines` around them: a Python traceback's innermost `File "…"` frame
/// above its exception line, the first JVM or Node `at` frame below one that
/// is not the runtime's own, a rustc diagnostic's `-->` location.
pub fn locations(lines: &[(u64, &[u8])], thrown: &[u64]) -> Vec<(u64, String)> {
    let text = |i: usize| String::from_utf8_lossy(lines[i].1);
    let mut found: Vec<(u64, String)> = Vec::new();
    for n in thrown {
        if found.len() >= LOCATIONS {
            break;
        }
        let Some(at) = lines.iter().position(|(m, _)| m == n) else {
            continue;
        };
        let above = (at.saturating_sub(64)..at)
            .rev()
            .take_while(|i| lines[*i].1.starts_with(b" "))
            .find(|i| text(*i).trim_start().starts_with("File \""));
        let below = || {
            (at + 1..(at + 12).min(lines.len()))
                .take_while(|i| {
                    let t = text(*i);
                    let t = t.trim_start();
                    t.starts_with("at ") || t.starts_with("--> ")
                })
                .find(|i| {
                    let t = text(*i);
                    !t.contains("(node:") && !t.contains(" node:") && !t.contains("java.base/")
                })
        };
        if let Some(i) = above.or_else(below)
            && !found.iter().any(|(m, _)| *m == lines[i].0)
        {
            found.push((lines[i].0, clean_line(text(i).trim().as_bytes(), false)));
        }
    }
    found
}
