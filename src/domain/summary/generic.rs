//! Any other text: the head, error-looking lines with their numbers, the tail
//! (short content is shown whole).

use super::Material;
use super::line_stats::clean_line;
use super::render::Doc;

/// Lines shown at the head and at the tail.
const EDGE_LINES: usize = 5;

/// Summarizes plain text into `doc`.
pub fn summarize(m: &Material, doc: &mut Doc, max_chars: usize) {
    let clean = |lines: Vec<(u64, &[u8])>| -> Vec<(u64, String)> {
        lines
            .into_iter()
            .map(|(n, l)| (n, clean_line(l, false)))
            .collect()
    };
    let edge = (max_chars / 200).clamp(2, 4 * EDGE_LINES);
    let lines = m.prefix_lines();
    if m.whole && lines.len() <= 2 * edge {
        doc.lines("", clean(lines));
        return;
    }
    let flagged = m.stats.counts[0] + m.stats.counts[1];
    if flagged > 0 {
        doc.text(format!("{flagged} failed or error lines"));
    } else {
        doc.text("no structure recognized: head and tail");
    }
    let shown = super::logs::flagged(m, doc);
    let keep = |mut lines: Vec<(u64, String)>| {
        lines.retain(|(n, _)| !shown.contains(n));
        lines
    };
    doc.lines("head", keep(clean(lines.into_iter().take(edge).collect())));
    doc.lines("tail", keep(clean(m.tail_lines(edge))));
}
