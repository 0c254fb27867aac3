//! `deletion`: drop the messages older than the last `keep_recent` (system
//! prompts stay) after archiving them as a transcript; one short notice with
//! the pointer takes their place.

use std::ops::Range;

use super::{Context, fold};

/// The message runs to drop.
pub fn select(ctx: &Context<'_>, keep_recent: usize) -> Vec<Range<usize>> {
    let edge = ctx.window_start(keep_recent);
    let drop_unit: Vec<bool> = ctx
        .units
        .iter()
        .map(|unit| unit.end <= edge && !ctx.must_keep(unit))
        .collect();
    fold::runs(ctx, &drop_unit)
}
