//! `sliding_window`: keep the system prompts and the last `keep_recent`
//! messages; fold everything older into one summary message pointing to the
//! stored transcript of the run. The window edge never splits a tool pair.

use std::ops::Range;

use super::{Context, fold};

/// The message runs to fold.
pub fn select(ctx: &Context<'_>, keep_recent: usize) -> Vec<Range<usize>> {
    let edge = ctx.window_start(keep_recent);
    let fold_unit: Vec<bool> = ctx
        .units
        .iter()
        .map(|unit| unit.end <= edge && !ctx.must_keep(unit))
        .collect();
    fold::runs(ctx, &fold_unit)
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::super::format::Format;
    use super::super::{Context, Options};
    use super::*;

    fn transcript() -> Vec<Value> {
        let long = "word ".repeat(200);
        vec![
            json!({"role": "system", "content": "be brief"}),
            json!({"role": "user", "content": long}),
            json!({"role": "assistant", "content": long}),
            json!({"role": "assistant", "content": null, "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "ls", "arguments": "{}"}},
                {"id": "b", "type": "function", "function": {"name": "cat", "arguments": "{}"}}]}),
            json!({"role": "tool", "tool_call_id": "a", "content": long}),
            json!({"role": "tool", "tool_call_id": "b", "content": long}),
            json!({"role": "assistant", "content": "done"}),
        ]
    }

    #[test]
    fn the_window_edge_never_splits_a_tool_pair() {
        let messages = transcript();
        let options = Options::default();
        let ctx = Context::new(Format::OpenAi, &messages, &options);
        // The last 2 messages start inside the call at 3..6: the whole call stays.
        assert_eq!(ctx.window_start(2), 3);
        assert_eq!(select(&ctx, 2), vec![std::ops::Range { start: 1, end: 3 }]);
        // System prompts are never folded; a prefix is never edited.
        let options = Options {
            preserve_prefix: 2,
            ..Options::default()
        };
        let ctx = Context::new(Format::OpenAi, &messages, &options);
        assert_eq!(select(&ctx, 2), vec![std::ops::Range { start: 2, end: 3 }]);
    }
}
