//! HTML: the title, the h1-h3 headings and a short run of visible text,
//! from a small tolerant scanner over the kept prefix (script, style and
//! other invisible elements skipped, common entities decoded).

use super::Material;
use super::render::{Doc, clip, squash};

/// Headings kept.
const HEADINGS: usize = 12;
/// Visible text kept, in characters.
const TEXT_KEEP: usize = 2000;

/// Elements whose content is not shown.
const HIDDEN: [&str; 7] = [
    "script", "style", "noscript", "template", "svg", "head", "iframe",
];

/// What the scanner found.
#[derive(Debug, Default)]
struct Page {
    title: String,
    headings: Vec<(u8, String)>,
    text: String,
}

/// Summarizes HTML into `doc`.
pub fn summarize(m: &Material, doc: &mut Doc, max_chars: usize) {
    let page = scan(&String::from_utf8_lossy(m.prefix));
    if !page.title.is_empty() {
        doc.text(format!("title: {}", clip(&page.title, max_chars / 4)));
    }
    if !page.headings.is_empty() {
        let list: Vec<String> = page
            .headings
            .iter()
            .map(|(level, text)| format!("h{level} {}", clip(text, 80)))
            .collect();
        doc.text(clip(
            &format!("headings: {}", list.join("; ")),
            max_chars / 3,
        ));
    }
    if !page.text.is_empty() {
        doc.text(format!("text: {}", clip(&page.text, max_chars / 3)));
    }
    // A page of console output: its error lines, numbered in the source.
    super::logs::flagged(m, doc);
    if !m.whole {
        doc.text(format!(
            "(from the first {} of {} bytes)",
            m.prefix.len(),
            m.seen
        ));
    }
}

fn scan(html: &str) -> Page {
    let mut page = Page::default();
    let mut hidden: Option<String> = None; // the element being skipped
    let mut title: Option<String> = None;
    let mut heading: Option<(u8, String)> = None;
    let mut rest = html;
    while !rest.is_empty() {
        let Some(lt) = rest.find('<') else {
            take_text(rest, &mut page, &mut title, &mut heading, hidden.is_some());
            break;
        };
        take_text(
            &rest[..lt],
            &mut page,
            &mut title,
            &mut heading,
            hidden.is_some(),
        );
        rest = &rest[lt..];
        if let Some(after) = rest.strip_prefix("<!--") {
            rest = after.find("-->").map_or("", |end| &after[end + 3..]);
            continue;
        }
        let (tag, after) = match tag_end(rest) {
            Some(end) => (&rest[1..end], &rest[end + 1..]),
            None => (&rest[1..], ""),
        };
        rest = after;
        let closing = tag.starts_with('/');
        let name: String = tag
            .trim_start_matches('/')
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric())
            .collect::<String>()
            .to_ascii_lowercase();
        if let Some(skipping) = &hidden {
            if (closing && *skipping == name) || (skipping == "head" && name == "body") {
                hidden = None;
            }
            if name != "title" {
                continue;
            }
        }
        match (name.as_str(), closing) {
            ("title", false) => title = Some(String::new()),
            ("title", true) => {
                if let Some(done) = title.take()
                    && page.title.is_empty()
                {
                    page.title = squash(&done);
                }
            }
            ("h1" | "h2" | "h3", false) => {
                page.text.push(' ');
                heading = Some((name.as_bytes()[1] - b'0', String::new()));
            }
            ("h1" | "h2" | "h3", true) => {
                page.text.push(' ');
                if let Some((level, text)) = heading.take() {
                    let text = squash(&text);
                    if !text.is_empty() && page.headings.len() < HEADINGS {
                        page.headings.push((level, text));
                    }
                }
            }
            (n, false) if HIDDEN.contains(&n) && !tag.ends_with('/') => hidden = Some(name),
            (
                "p" | "div" | "br" | "li" | "tr" | "td" | "th" | "section" | "article" | "h4"
                | "h5" | "h6",
                _,
            ) => page.text.push(' '),
            _ => {}
        }
    }
    page.text = squash(&page.text);
    page
}

/// Where the `>` of the tag starting at `text[0] == '<'` is, quotes respected.
fn tag_end(text: &str) -> Option<usize> {
    let mut quote = None;
    for (i, c) in text.char_indices().skip(1) {
        match (quote, c) {
            (None, '"' | '\'') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, '>') => return Some(i),
            _ => {}
        }
    }
    None
}

fn take_text(
    raw: &str,
    page: &mut Page,
    title: &mut Option<String>,
    heading: &mut Option<(u8, String)>,
    hidden: bool,
) {
    if raw.is_empty() {
        return;
    }
    let text = decode(raw);
    if let Some(title) = title {
        title.push_str(&text);
        return;
    }
    if hidden {
        return;
    }
    if let Some((_, heading)) = heading {
        heading.push_str(&text);
    }
    if page.text.len() < TEXT_KEEP {
        page.text.push_str(&text);
    }
}

/// Decodes the common entities; leaves the others as they are.
fn decode(text: &str) -> String {
    if !text.contains('&') {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(amp) = rest.find('&') {
        out.push_str(&rest[..amp]);
        rest = &rest[amp..];
        let window = rest.char_indices().nth(12).map_or(rest.len(), |(i, _)| i);
        let Some(semi) = rest[..window].find(';') else {
            out.push('&');
            rest = &rest[1..];
            continue;
        };
        let entity = &rest[1..semi];
        let decoded = match entity {
            "amp" => Some('&'),
            "lt" => Some('<'),
            "gt" => Some('>'),
            "quot" => Some('"'),
            "apos" => Some('\''),
            "nbsp" => Some(' '),
            _ => entity
                .strip_prefix("#x")
                .or_else(|| entity.strip_prefix("#X"))
                .and_then(|hex| u32::from_str_radix(hex, 16).ok())
                .or_else(|| entity.strip_prefix('#').and_then(|d| d.parse().ok()))
                .and_then(char::from_u32),
        };
        match decoded {
            Some(c) => {
                out.push(c);
                rest = &rest[semi + 1..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}
