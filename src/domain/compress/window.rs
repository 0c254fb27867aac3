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
