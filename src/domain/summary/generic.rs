//! Any other text: the head, error-looking lines with their numbers, the tail
//! (short content is shown whole).

use super::Material;
use super::render::Doc;
use super::scan::clean_line;

/// Lines shown at the head and at the tail.
const EDGE_LINES: usize = 5;
/// Error-looking lines shown.
const ERROR_LINES: usize = 5;

/// Summarizes plain text into `doc`.
pub fn summarize(m: &Material, doc: &mut Doc, max_chars: usize) {
    let clean = |lines: Vec<(u64, &[u8])>| -> Vec<(u64, String)> {
        lines
            .into_iter()
            .map(|(n, l)| (n, clean_line(l, false)))
            .collect()
    };
    let edge = (max_chars / 160).clamp(2, 4 * EDGE_LINES);
    let lines = m.prefix_lines();
    if m.whole && lines.len() <= 2 * edge {
        doc.lines("", clean(lines));
        return;
    }
    let mut errors: Vec<(u64, String)> = m.stats.examples[..2].iter().flatten().cloned().collect();
    errors.sort_by_key(|(n, _)| *n);
    errors.truncate(ERROR_LINES);
    let flagged = m.stats.counts[0] + m.stats.counts[1];
    if flagged > 0 {
        doc.text(format!("{flagged} error-looking lines"));
    }
    doc.lines("head", clean(lines.into_iter().take(edge).collect()));
    doc.lines("errors", errors);
    doc.lines("tail", clean(m.tail_lines(edge)));
}
