//! The recognizable text that replaces offloaded or folded content.
//!
//! A marker's first line is `[cairn: <what> · mem://<id> · <n> lines, <m> tokens]`;
//! a summary may follow on the next lines. Any text whose first line starts
//! with `[cairn: ` and names a `mem://` pointer is a marker: strategies never
//! offload, fold or re-hydrate it, which makes compressing twice a no-op.

use std::borrow::Cow;

/// How every marker starts.
pub const PREFIX: &str = "[cairn: ";

/// True when `text` is a marker Cairn wrote.
pub fn is_marker(text: &str) -> bool {
    let first = text.split('\n').next().unwrap_or("");
    first.starts_with(PREFIX) && first.contains(" mem://") && first.ends_with(']')
}

/// A marker: `what` (e.g. `offloaded tool_output pytest`), the pointer, sizes, and a summary.
/// `what` may hold client-given names (tools, roles): brackets and control
/// characters become `_` and it is cut to 120 characters, so the first line
/// always stays a marker.
pub fn render(what: &str, id: &str, lines: u64, tokens: u64, summary: &str) -> String {
    let what: String = clip(what, 120)
        .chars()
        .map(|c| {
            if c.is_control() || c == '[' || c == ']' {
                '_'
            } else {
                c
            }
        })
        .collect();
    let mut text = format!("{PREFIX}{what} · mem://{id} · {lines} lines, {tokens} tokens]");
    if !summary.is_empty() {
        text.push('\n');
        text.push_str(summary);
    }
    text
}

/// `summary` without the ` | mem://<id>` of its first line (a memory's
/// summary names its own pointer): the marker's first line names it
/// already, and a pointer is some forty tokens of hexadecimal that every
/// later request reads again.
pub fn without_pointer<'a>(summary: &'a str, id: &str) -> Cow<'a, str> {
    let pointer = format!(" | mem://{id}");
    let first_line = summary.find('\n').unwrap_or(summary.len());
    match summary[..first_line].find(&pointer) {
        Some(at) => Cow::Owned(format!(
            "{}{}",
            &summary[..at],
            &summary[at + pointer.len()..]
        )),
        None => Cow::Borrowed(summary),
    }
}

/// `text` cut to at most `max` characters, on a character boundary.
pub fn clip(text: &str, max: usize) -> &str {
    match text.char_indices().nth(max) {
        Some((end, _)) => &text[..end],
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rendered_markers_are_recognized() {
        let text = render("offloaded tool_output pytest", "ab12", 10, 99, "10 lines");
        assert!(is_marker(&text));
        assert!(text.starts_with(
            "[cairn: offloaded tool_output pytest · mem://ab12 · 10 lines, 99 tokens]\n"
        ));
        assert!(!is_marker("[cairn: not a pointer]"));
        assert!(!is_marker("see mem://ab12"));
        assert!(is_marker(&render(
            "offloaded tool_output a]\nb",
            "ab12",
            1,
            1,
            ""
        )));
    }

    #[test]
    fn the_summary_does_not_name_the_pointer_again() {
        let summary = "kind: text | 3 lines | mem://ab12\nhead:\nL1: see mem://ab12";
        assert_eq!(
            without_pointer(summary, "ab12"),
            "kind: text | 3 lines\nhead:\nL1: see mem://ab12"
        );
        assert_eq!(
            without_pointer("kind: text | mem://ab", "ab12"),
            "kind: text | mem://ab"
        );
    }

    #[test]
    fn clipping_respects_characters() {
        assert_eq!(clip("héllo", 2), "hé");
        assert_eq!(clip("hi", 5), "hi");
    }
}
