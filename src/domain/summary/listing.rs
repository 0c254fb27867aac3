//! File listings (`ls -l`, `ls -lR`, `find`, `tree`, plain paths): entry
//! counts, files and directories when the listing tells, the directories
//! with most entries, and the commonest extensions.

use std::collections::BTreeMap;

use super::Material;
use super::detect::{is_listing_line, is_ls_long};
use super::render::{Doc, clip, top};

/// What a listing shows, from the lines read.
#[derive(Debug, Default)]
struct Tally {
    entries: u64,
    files: u64,
    dirs: u64,
    links: u64,
    by_dir: BTreeMap<String, u64>,
    by_ext: BTreeMap<String, u64>,
    /// `tree`'s own closing count (`3 directories, 12 files`).
    tree_total: Option<String>,
}

/// Summarizes a file listing into `doc`.
pub fn summarize(m: &Material, doc: &mut Doc, max_chars: usize) {
    let lines = m.prefix_lines();
    let mut tally = Tally::default();
    let mut dir = String::new(); // the `ls -R` section
    let mut tree: Vec<String> = Vec::new(); // `tree` ancestors
    let (mut style, mut read) = ("paths", 0usize);
    for (_, raw) in &lines {
        let line = String::from_utf8_lossy(raw);
        let line = line.trim_end();
        read += 1;
        if line.is_empty() || line.starts_with("total ") {
            continue;
        }
        if line.ends_with(" files") && line.contains(" director") {
            tally.tree_total = Some(line.to_owned());
            continue;
        }
        if is_ls_long(line) {
            style = if dir.is_empty() { "ls -l" } else { "ls -lR" };
            let name = line
                .split_whitespace()
                .nth(8)
                .map(|_| ls_name(line))
                .unwrap_or_default();
            let kind = line.as_bytes()[0];
            if name == "." || name == ".." {
                continue;
            }
            let path = if dir.is_empty() {
                name.to_owned()
            } else {
                format!("{dir}/{name}")
            };
            tally.add(&path, Some(kind));
            continue;
        }
        if let Some(header) = line.strip_suffix(':').filter(|h| !h.contains(": ")) {
            dir = header.trim_end_matches('/').to_owned();
            continue;
        }
        if let Some(at) = line.find("├── ").or_else(|| line.find("└── ")) {
            style = "tree";
            let depth = line[..at].chars().count() / 4;
            let name = line[at..].chars().skip(4).collect::<String>();
            tree.truncate(depth);
            let path = tree
                .iter()
                .chain([&name])
                .cloned()
                .collect::<Vec<_>>()
                .join("/");
            tree.push(name);
            tally.add(&path, None);
            continue;
        }
        if is_listing_line(line) {
            if style == "paths" && line.starts_with("./") {
                style = "find";
            }
            let path = if dir.is_empty() {
                line.to_owned()
            } else {
                format!("{dir}/{line}")
            };
            let kind = line.ends_with('/').then_some(b'd');
            tally.add(path.trim_end_matches('/'), kind);
        }
    }
    doc.detail(style);
    let mut known = Vec::new();
    for (n, what) in [
        (tally.files, "files"),
        (tally.dirs, "dirs"),
        (tally.links, "links"),
    ] {
        if n > 0 {
            known.push(format!("{n} {what}"));
        }
    }
    let known = if known.is_empty() {
        String::new()
    } else {
        format!(" ({})", known.join(", "))
    };
    let partial = if m.whole {
        String::new()
    } else {
        format!(" in the first {read} of {} lines", m.facts.lines)
    };
    doc.text(format!("entries: {}{known}{partial}", tally.entries));
    if let Some(total) = &tally.tree_total {
        doc.text(format!("tree says: {total}"));
    }
    let dirs: Vec<String> = top(&tally.by_dir, 6)
        .into_iter()
        .map(|(d, n)| format!("{} ({n})", clip(&d, 60)))
        .collect();
    if !dirs.is_empty() {
        doc.text(clip(
            &format!("top directories: {}", dirs.join(", ")),
            max_chars / 3,
        ));
    }
    let exts: Vec<String> = top(&tally.by_ext, 8)
        .into_iter()
        .map(|(e, n)| format!("{e} {n}"))
        .collect();
    if !exts.is_empty() {
        doc.text(clip(
            &format!("extensions: {}", exts.join(", ")),
            max_chars / 4,
        ));
    }
    let sample: Vec<(u64, String)> = lines
        .iter()
        .filter(|(_, l)| !l.is_empty())
        .take(3)
        .map(|(n, l)| (*n, super::line_stats::clean_line(l, false)))
        .collect();
    doc.lines("first lines", sample);
}

/// The name in an `ls -l` line: what follows the date (link targets dropped).
fn ls_name(line: &str) -> &str {
    let mut rest = line;
    for _ in 0..8 {
        rest = rest.trim_start();
        rest = rest.find(char::is_whitespace).map_or("", |i| &rest[i..]);
    }
    let name = rest.trim_start();
    name.split(" -> ").next().unwrap_or(name)
}

impl Tally {
    fn add(&mut self, path: &str, kind: Option<u8>) {
        self.entries += 1;
        match kind {
            Some(b'd') => self.dirs += 1,
            Some(b'l') => self.links += 1,
            Some(_) => self.files += 1,
            None => {}
        }
        let (parent, name) = path.rsplit_once('/').unwrap_or((".", path));
        let parent = if parent.is_empty() { "/" } else { parent };
        *self.by_dir.entry(parent.to_owned()).or_default() += 1;
        if kind != Some(b'd') {
            let ext = match name.rsplit_once('.') {
                Some((stem, ext)) if !stem.is_empty() && ext.len() <= 10 => format!(".{ext}"),
                _ => "(none)".to_owned(),
            };
            if self.by_ext.len() < 10_000 || self.by_ext.contains_key(&ext) {
                *self.by_ext.entry(ext).or_default() += 1;
            }
        }
    }
}
