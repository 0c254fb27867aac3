//! `observation_masking`: keep the last `keep_recent` tool results verbatim and
//! replace every older one by a marker and pointer, whatever its size (as long
//! as the marker is shorter than the result).

use super::Context;

/// Indexes (into `ctx.pieces`) of the texts of the older tool results.
pub fn select(ctx: &Context<'_>, keep_recent: usize) -> Vec<usize> {
    let mut results: Vec<(usize, usize)> = ctx
        .pieces
        .iter()
        .filter(|piece| ctx.maskable_result(piece))
        .filter_map(|piece| piece.result)
        .collect();
    results.dedup();
    let older = &results[..results.len().saturating_sub(keep_recent)];
    ctx.pieces
        .iter()
        .enumerate()
        .filter(|(_, piece)| piece.result.is_some_and(|r| older.contains(&r)))
        .filter(|(_, piece)| ctx.editable(piece) && ctx.worth_offloading(ctx.chars(piece)))
        .map(|(i, _)| i)
        .collect()
}
