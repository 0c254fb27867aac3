//! `selective`: keep system prompts, tool calls with their results, messages
//! that look like errors, messages marked important (`"cairn_keep": true` on
//! the message, or `[important]` in its text) and the last `keep_recent`
//! messages; fold each run of the rest into a summary message and pointer.

use std::ops::Range;

use serde_json::Value;

use super::{Context, fold, format, pairs};

/// Words that make a message look like an error report (any ASCII case).
const ERROR_WORDS: [&str; 7] = [
    "error",
    "exception",
    "traceback",
    "failed",
    "failure",
    "panic",
    "fatal",
];

/// The message runs to fold.
pub fn select(ctx: &Context<'_>, keep_recent: usize) -> Vec<Range<usize>> {
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
    fold::runs(ctx, &fold_unit)
}

/// True for a tool call or result, an error-looking or an important message.
fn keeps(ctx: &Context<'_>, message: &Value) -> bool {
    if !pairs::call_ids(ctx.format, message).is_empty()
        || !pairs::result_ids(ctx.format, message).is_empty()
        || message["cairn_keep"] == true
    {
        return true;
    }
    let text = format::message_text(message).to_ascii_lowercase();
    text.contains("[important]") || ERROR_WORDS.iter().any(|w| text.contains(w))
}
