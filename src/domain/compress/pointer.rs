//! `pointer`: offload every text over `threshold_chars` — tool results and big
//! user or assistant texts — and leave a marker, its summary and the pointer.

use super::Context;

/// Indexes (into `ctx.pieces`) of the texts to offload.
pub fn select(ctx: &Context<'_>, threshold_chars: usize, keep_recent: usize) -> Vec<usize> {
    let recent_from = ctx.messages.len().saturating_sub(keep_recent);
    ctx.pieces
        .iter()
        .enumerate()
        .filter(|(_, piece)| piece.message < recent_from && ctx.editable(piece))
        .filter(|(_, piece)| {
            let chars = ctx.chars(piece);
            chars > threshold_chars && ctx.worth_offloading(chars)
        })
        .map(|(i, _)| i)
        .collect()
}
