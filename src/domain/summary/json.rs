//! JSON: the shape (object or array, keys with value types, array lengths,
//! nesting) and a short sample, from a tolerant scan of the kept prefix.
//!
//! The scanner walks tokens without building values, so a 4 MiB prefix
//! costs one pass and little memory; a prefix cut mid-document still gives
//! the shape it shows, marked as partial.

use super::Material;
use super::render::{Doc, clip, squash};

/// Levels of nesting described.
const DEPTH: usize = 3;
/// Keys described per object.
const KEYS: usize = 12;

/// The shape of a JSON value.
#[derive(Debug)]
enum Shape {
    Object {
        keys: Vec<(String, Shape)>,
        count: u64,
        /// False when the text ended inside it.
        complete: bool,
    },
    Array {
        len: u64,
        first: Option<Box<Shape>>,
        complete: bool,
    },
    String,
    Number,
    Bool,
    Null,
    /// Nested deeper than described.
    Deep(bool),
}

/// Summarizes JSON into `doc`.
pub fn summarize(m: &Material, doc: &mut Doc, max_chars: usize) {
    let mut scan = Scanner {
        text: m.prefix,
        at: 0,
        cut: false,
    };
    scan.ws();
    let start = scan.at;
    let shape = scan.value(0);
    let first_end = scan.at;
    let mut values = 1u64;
    let mut invalid = None;
    loop {
        scan.ws();
        if scan.cut || scan.at >= scan.text.len() {
            break;
        }
        match scan.text[scan.at] {
            b'{' | b'[' => {
                scan.value(DEPTH + 1);
                values += 1;
            }
            _ => {
                invalid = Some(scan.at);
                break;
            }
        }
    }
    let partial = scan.cut || !m.whole;
    if values > 1 {
        doc.detail("JSON lines");
        let more = if partial { "+" } else { "" };
        let shape = describe(&shape, 0);
        doc.text(clip(
            &format!("{values}{more} values; the first is {shape}"),
            max_chars * 2 / 3,
        ));
    } else {
        doc.text(clip(&describe(&shape, 0), max_chars * 2 / 3));
    }
    if let Some(at) = invalid.or(scan.invalid_at()) {
        doc.text(format!("not valid JSON at byte {at}"));
    } else if !m.whole {
        doc.text(format!(
            "shape from the first {} of {} bytes",
            m.prefix.len(),
            m.seen
        ));
    }
    let sample = match &shape {
        Shape::Array { .. } => first_element(m.prefix, start).unwrap_or(start..first_end),
        _ => start..first_end,
    };
    let sample =
        String::from_utf8_lossy(&m.prefix[sample.start..sample.end.min(sample.start + 4096)]);
    // JSON lines that are logs: their error lines matter more than a sample.
    let flagged = m.stats.counts[..3].iter().any(|n| *n > 0);
    let sample_chars = if flagged {
        max_chars / 8
    } else {
        max_chars / 3
    };
    doc.text(format!("sample: {}", clip(&squash(&sample), sample_chars)));
    if flagged {
        super::logs::flagged(m, doc);
    }
}

fn describe(shape: &Shape, depth: usize) -> String {
    let at_least = |complete: bool| if complete { "" } else { "≥" };
    match shape {
        Shape::Object {
            keys,
            count,
            complete,
        } => {
            if depth >= DEPTH {
                return format!("object{{{}{count} keys}}", at_least(*complete));
            }
            let mut parts: Vec<String> = keys
                .iter()
                .map(|(k, v)| format!("{}: {}", clip(k, 40), describe(v, depth + 1)))
                .collect();
            if *count > keys.len() as u64 {
                parts.push(format!("…+{} keys", count - keys.len() as u64));
            }
            if depth == 0 {
                format!(
                    "object with {}{count} keys {{{}}}",
                    at_least(*complete),
                    parts.join(", ")
                )
            } else {
                format!("{{{}}}", parts.join(", "))
            }
        }
        Shape::Array {
            len,
            first,
            complete,
        } => {
            let at_least = at_least(*complete);
            match first {
                None => format!("array[{at_least}{len}]"),
                Some(first) => format!("array[{at_least}{len}] of {}", describe(first, depth + 1)),
            }
        }
        Shape::String => "string".into(),
        Shape::Number => "number".into(),
        Shape::Bool => "bool".into(),
        Shape::Null => "null".into(),
        Shape::Deep(true) => "object".into(),
        Shape::Deep(false) => "array".into(),
    }
}

/// The byte range of the first element of the array starting at `start`.
fn first_element(text: &[u8], start: usize) -> Option<std::ops::Range<usize>> {
    let mut scan = Scanner {
        text,
        at: start + 1,
        cut: false,
    };
    scan.ws();
    let from = scan.at;
    if text.get(from) == Some(&b']') {
        return None;
    }
    scan.value(DEPTH + 1);
    Some(from..scan.at)
}

/// A tolerant walk over JSON tokens: stops at the end of the text (`cut`) or at
/// the first byte that cannot be JSON, never panics, never recurses deeper than [`DEPTH`].
struct Scanner<'a> {
    text: &'a [u8],
    at: usize,
    cut: bool,
}

impl Scanner<'_> {
    fn ws(&mut self) {
        while self.text.get(self.at).is_some_and(u8::is_ascii_whitespace) {
            self.at += 1;
        }
    }

    fn invalid_at(&self) -> Option<usize> {
        (!self.cut
            && self.at < self.text.len()
            && !self.text[self.at..].iter().all(u8::is_ascii_whitespace))
        .then_some(self.at)
    }

    /// Reads one value, describing it down to [`DEPTH`].
    fn value(&mut self, depth: usize) -> Shape {
        self.ws();
        let Some(&byte) = self.text.get(self.at) else {
            self.cut = true;
            return Shape::Null;
        };
        match byte {
            b'{' | b'[' if depth > DEPTH => {
                self.skip_nested();
                Shape::Deep(byte == b'{')
            }
            b'{' => self.object(depth),
            b'[' => self.array(depth),
            b'"' => {
                self.string();
                Shape::String
            }
            b't' | b'f' => {
                self.word();
                Shape::Bool
            }
            b'n' => {
                self.word();
                Shape::Null
            }
            _ => {
                self.word();
                Shape::Number
            }
        }
    }

    fn object(&mut self, depth: usize) -> Shape {
        self.at += 1;
        let (mut keys, mut count) = (Vec::new(), 0u64);
        loop {
            self.ws();
            match self.text.get(self.at) {
                None => {
                    self.cut = true;
                    break;
                }
                Some(b'}') => {
                    self.at += 1;
                    break;
                }
                Some(b',') => self.at += 1,
                Some(b'"') => {
                    let key = self.string();
                    self.ws();
                    if self.text.get(self.at) == Some(&b':') {
                        self.at += 1;
                    } else if self.at < self.text.len() {
                        break; // not JSON: stop here
                    }
                    let value = self.value(depth + 1);
                    count += 1;
                    if keys.len() < KEYS {
                        keys.push((key, value));
                    }
                    if self.cut {
                        break;
                    }
                }
                Some(_) => break,
            }
        }
        Shape::Object {
            keys,
            count,
            complete: !self.cut,
        }
    }

    fn array(&mut self, depth: usize) -> Shape {
        self.at += 1;
        let (mut len, mut first) = (0u64, None);
        loop {
            self.ws();
            match self.text.get(self.at) {
                None => {
                    self.cut = true;
                    break;
                }
                Some(b']') => {
                    self.at += 1;
                    break;
                }
                Some(b',') => self.at += 1,
                Some(_) => {
                    let before = self.at;
                    let shape = if first.is_none() {
                        self.value(depth + 1)
                    } else {
                        self.value(DEPTH + 1)
                    };
                    if self.cut && first.is_some() {
                        break; // a cut last element does not count
                    }
                    len += 1;
                    first.get_or_insert_with(|| Box::new(shape));
                    if self.cut || self.at == before {
                        break;
                    }
                }
            }
        }
        Shape::Array {
            len,
            first,
            complete: !self.cut,
        }
    }

    /// Reads a string; answers its text (at most 200 bytes of it, lossy).
    fn string(&mut self) -> String {
        let start = self.at + 1;
        let mut i = start;
        loop {
            match memchr::memchr2(b'"', b'\\', &self.text[i.min(self.text.len())..]) {
                None => {
                    self.cut = true;
                    self.at = self.text.len();
                    break;
                }
                Some(p) if self.text[i + p] == b'\\' => i += p + 2,
                Some(p) => {
                    self.at = i + p + 1;
                    break;
                }
            }
        }
        let end = self
            .at
            .saturating_sub(1)
            .max(start)
            .min(start + 200)
            .min(self.text.len());
        String::from_utf8_lossy(&self.text[start.min(end)..end]).into_owned()
    }

    /// Reads a number or literal.
    fn word(&mut self) {
        let start = self.at;
        while self
            .text
            .get(self.at)
            .is_some_and(|b| !b",]}".contains(b) && !b.is_ascii_whitespace())
        {
            self.at += 1;
        }
        if self.at == self.text.len() {
            self.cut = true;
        }
        if self.at == start {
            self.at += 1; // a stray byte: move on rather than loop
        }
    }

    /// Skips a nested object or array without describing it (no recursion).
    fn skip_nested(&mut self) {
        let mut depth = 0usize;
        while let Some(&b) = self.text.get(self.at) {
            match b {
                b'"' => {
                    self.string();
                    continue;
                }
                b'{' | b'[' => depth += 1,
                b'}' | b']' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        self.at += 1;
                        return;
                    }
                }
                _ => {}
            }
            self.at += 1;
        }
        self.cut = true;
    }
}
