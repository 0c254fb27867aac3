//! `selective`: keep what matters inline and compress the rest, pairs intact.
//!
//! Kept as they are: system prompts, the last `keep_recent` messages, tool
//! calls *and* their result messages (so pairs stay valid), messages marked
//! important (`"cairn_keep": true` on the message, or `[important]` in its
//! text) and error-looking chat messages. Compressed: older large tool
//! results that are not marked important are offloaded to a pointer inside
//! their result message (the pair stays, the bulk goes) — a result that
//! reports a failure keeps its failure lines inline, with their numbers,
//! after the marker; runs of other messages (chatter between calls) are
//! folded into a summary and a pointer to the stored transcript.

use std::ops::Range;

use serde_json::Value;

use super::{Context, fold, format, pairs};

/// Words that make a chat message look like an error report (any ASCII case).
const ERROR_WORDS: [&str; 7] = [
    "error",
    "exception",
    "traceback",
    "failed",
    "failure",
    "panic",
    "fatal",
];

/// How a line of a tool result starts when it reports a failure (after
/// leading blanks): a level, a runner's verdict, a compiler diagnostic, a
/// trace. Only line starts count: `liberror-perl` or `/var/lib/error/x`
/// inside a line do not.
const FAILURE_STARTS: [&str; 16] = [
    "error",
    "Error",
    "ERROR",
    "FAILED",
    "FAIL",
    "FATAL",
    "fatal:",
    "Fatal",
    "panic",
    "thread '",
    "Traceback",
    "Exception",
    "E   ",
    "✕",
    "--- FAIL",
    "[error]",
];

/// The texts (tool results) to offload and the message runs to fold.
pub fn select(ctx: &Context<'_>, keep_recent: usize) -> (Vec<usize>, Vec<Range<usize>>) {
    let edge = ctx.window_start(keep_recent);
    let fold_unit: Vec<bool> = ctx
        .units
        .iter()
        .map(|unit| {
            unit.end <= edge
                && !ctx.must_keep(unit)
                && !ctx.messages[unit.clone()].iter().any(|m| keeps(ctx, m))
        })
        .collect();
    let runs = fold::runs(ctx, &fold_unit);
    let pieces = ctx
        .pieces
        .iter()
        .enumerate()
        .filter(|(_, piece)| piece.message < edge && ctx.maskable_result(piece))
        .filter(|(_, piece)| ctx.editable(piece) && ctx.worth_offloading(ctx.chars(piece)))
        .filter(|(_, piece)| !important(&ctx.messages[piece.message]))
        .filter(|(_, piece)| !runs.iter().any(|run| run.contains(&piece.message)))
        .map(|(i, _)| i)
        .collect();
    (pieces, runs)
}

/// True for a tool call or result, an error-looking or an important message.
fn keeps(ctx: &Context<'_>, message: &Value) -> bool {
    if !pairs::call_ids(ctx.format, message).is_empty()
        || !pairs::result_ids(ctx.format, message).is_empty()
        || important(message)
    {
        return true;
    }
    let text = format::message_text(message).to_ascii_lowercase();
    ERROR_WORDS.iter().any(|w| text.contains(w))
}

/// Marked important: `"cairn_keep": true`, or `[important]` in its text.
fn important(message: &Value) -> bool {
    message["cairn_keep"] == true
        || format::message_text(message)
            .to_ascii_lowercase()
            .contains("[important]")
}

/// Most failure lines kept inline after a marker.
const MAX_FAILURE_LINES: usize = 12;
/// Longest failure line kept inline (characters; a longer one is cut and says so).
const FAILURE_LINE_CHARS: usize = 300;

/// True when a line starts like a failure report, or states a non-zero exit status.
fn is_failure_line(line: &str) -> bool {
    let line = line.trim_start();
    FAILURE_STARTS.iter().any(|start| line.starts_with(start))
        || line
            .strip_prefix("exit code ")
            .or_else(|| line.strip_prefix("exit status "))
            .or_else(|| line.strip_prefix("Process exited with code "))
            .is_some_and(|code| code.trim() != "0")
}

#[cfg(test)]
fn reports_failure(text: &str) -> bool {
    text.lines().any(is_failure_line)
}

/// The failure lines of an offloaded text, to keep inline after its marker:
/// `L<n>: <line>` each (1-based, as `/lines` counts), at most
/// [`MAX_FAILURE_LINES`], leaving out lines the marker's summary quotes
/// already. Empty when the text reports no failure.
pub fn failure_lines(text: &str, summary: &str) -> String {
    let mut out = String::new();
    let mut kept = 0;
    for (n, line) in text.lines().enumerate() {
        if kept == MAX_FAILURE_LINES {
            out.push_str("… (more failure lines: search or fetch the pointer)\n");
            break;
        }
        let line = line.trim_end();
        if !is_failure_line(line) || summary.contains(line.trim()) {
            continue;
        }
        let cut = super::marker::clip(line, FAILURE_LINE_CHARS);
        let more = if cut.len() < line.len() {
            " […cut]"
        } else {
            ""
        };
        out.push_str(&format!("L{}: {cut}{more}\n", n + 1));
        kept += 1;
    }
    if out.is_empty() {
        return out;
    }
    format!("failure lines kept inline:\n{out}")
}

#[cfg(test)]
mod tests {
    use super::reports_failure;

    #[test]
    fn failures_are_told_by_line_starts_not_by_words_inside_lines() {
        assert!(reports_failure(
            "collected 3\nFAILED tests/test_a.py::test_x - assert 1\n"
        ));
        assert!(reports_failure("ok\nerror[E0308]: mismatched types\n"));
        assert!(reports_failure(
            "Traceback (most recent call last):\n  File \"x\""
        ));
        assert!(reports_failure("build\nexit code 2\n"));
        assert!(!reports_failure("exit code 0\n"));
        assert!(!reports_failure("ii  liberror-perl 0.17029-2 all\n"));
        assert!(!reports_failure("/var/lib/error/cache\nsrc/fail_fast.rs\n"));
        assert!(!reports_failure("test result: ok. 3 passed; 0 failed\n"));
    }
}
