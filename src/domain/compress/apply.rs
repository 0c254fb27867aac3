//! Building the compressed list from a selection and the stored pieces.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;

use super::format::{self, TextAt};
use super::offload::StoredRef;
use super::{Context, Offloaded, Options, Outcome, Policy, Prepared, fold, marker, selective};
use crate::domain::DomainError;

/// Notice left where `deletion` dropped messages.
const DROP_NOTICE: &str = "Earlier messages were archived, one JSON message per line: fetch line ranges of the pointer to read them.";

/// Replaces what the selection picked by markers (only where a marker has
/// fewer tokens than what it replaces) and counts the result.
pub(super) fn apply(
    prepared: Prepared,
    refs: &[Arc<StoredRef>],
    options: &Options,
    policy: Policy,
) -> Result<Outcome, DomainError> {
    let Prepared {
        format,
        messages,
        system,
        counter,
        selection,
        tokens_before,
        digested,
        ..
    } = prepared;
    let system = system.map(Arc::unwrap_or_clone);
    let ctx = Context::new(format, &messages, options);
    let mut edits: HashMap<usize, Vec<(TextAt, String)>> = HashMap::new();
    let mut runs: HashMap<usize, (usize, Vec<Value>)> = HashMap::new();
    let mut used: Vec<(Offloaded, Arc<StoredRef>)> = Vec::new();
    let (piece_refs, run_refs) = refs.split_at(selection.pieces.len().min(refs.len()));
    for (&i, stored) in selection.pieces.iter().zip(piece_refs) {
        let piece = &ctx.pieces[i];
        let text = ctx.text(piece);
        let tokens = counter.count_digested(text, &digested);
        let what = match &piece.tool {
            Some(tool) if piece.is_tool_result() => format!("offloaded tool_output {tool}"),
            _ => format!("offloaded {} text", piece.role),
        };
        let summary = marker::clip(&stored.summary, options.summary_chars);
        let summary = marker::without_pointer(summary, &stored.id);
        // The first line states the store's count, the one its summary states
        // with its method: one text, one number (the savings use `tokens`).
        let mut replaced = marker::render(&what, &stored.id, stored.lines, stored.tokens, &summary);
        if selection.failures_inline {
            let failures = selective::failure_lines(text, &summary);
            if !failures.is_empty() {
                replaced.push('\n');
                replaced.push_str(failures.trim_end());
            }
        }
        if counter.count_cached(&replaced) >= tokens {
            continue;
        }
        edits
            .entry(piece.message)
            .or_default()
            .push((piece.at, replaced));
        let offloaded = Offloaded {
            index: piece.message,
            messages: 0,
            id: stored.id.clone(),
            tokens,
        };
        used.push((offloaded, stored.clone()));
    }
    let drop = selection.drop;
    for (run, stored) in selection.runs.iter().zip(run_refs) {
        let folded = &messages[run.clone()];
        let tokens = counter.count_messages(folded, None);
        let count = folded.len();
        let (what, summary) = if drop {
            (format!("dropped {count} messages"), DROP_NOTICE.to_owned())
        } else {
            (
                format!("folded {count} messages"),
                fold::summarize(format, folded, options.summary_chars),
            )
        };
        let text = marker::render(&what, &stored.id, stored.lines, tokens, &summary);
        let closing = marker::render("end of folded run", &stored.id, stored.lines, tokens, "");
        let replacement = fold::replacement(format, folded, text, closing);
        if counter.count_messages(&replacement, None) >= tokens {
            continue;
        }
        runs.insert(run.start, (run.end, replacement));
        let offloaded = Offloaded {
            index: run.start,
            messages: count,
            id: stored.id.clone(),
            tokens,
        };
        used.push((offloaded, stored.clone()));
    }
    let mut out = Vec::with_capacity(messages.len());
    let mut i = 0;
    while i < messages.len() {
        if let Some((end, replacement)) = runs.remove(&i) {
            out.extend(replacement);
            i = end;
            continue;
        }
        let mut message = messages[i].clone();
        for (at, text) in edits.remove(&i).unwrap_or_default() {
            format::set_text_at(&mut message, at, text);
        }
        out.push(message);
        i += 1;
    }
    let tokens_after = counter.count_messages(&out, system.as_ref());
    used.sort_by_key(|(o, _)| o.index);
    let mut refs_out: Vec<Arc<StoredRef>> = Vec::new();
    for (_, stored) in &used {
        if !refs_out.iter().any(|r| r.id == stored.id) {
            refs_out.push(stored.clone());
        }
    }
    Ok(Outcome {
        format,
        messages: out,
        system,
        refs: refs_out,
        offloaded: used.into_iter().map(|(o, _)| o).collect(),
        tokens_before,
        tokens_after,
        counter,
        strategy: policy.name(),
    })
}
