//! One regex of many alternatives (the secret patterns), with the kind and
//! capture group of each, searched with warm caches from a small pool.

use std::sync::Mutex;

use regex_automata::util::captures::Captures;
use regex_automata::util::syntax;
use regex_automata::{Input, PatternID, meta};

use super::kinds::{Kind, Rule};

/// A regex of alternatives, and the kind and group of each.
///
/// Searches run with a cache the caller holds ([`RegexCache`]), taken from a
/// small pool of warm caches: a cold cache rebuilds the lazy DFA's states
/// line after line, and the regex crate's own pool hands fresh caches to the
/// blocking pool's ever-changing threads (measured: ~6% of an upload's CPU
/// went to rebuilding DFA states).
pub(super) struct Alternatives {
    regex: meta::Regex,
    /// (kind, whether specific) of alternative `i`, whose secret is group `s{i}`.
    kinds: Vec<(Kind, bool)>,
    groups: Vec<usize>,
    /// Caches given back, kept warm for the next search.
    caches: Mutex<Vec<meta::Cache>>,
}

/// Caches kept per regex: one per frame redacted at once, and some spare.
const KEPT_CACHES: usize = 4;

impl Alternatives {
    /// One regex of `rules` (`anchored`: each must match a whole haystack).
    pub(super) fn build(rules: &[&Rule], anchored: bool) -> Self {
        let body = rules
            .iter()
            .enumerate()
            .map(|(i, r)| format!("(?:{})", r.pattern.replace("(?P<s>", &format!("(?P<s{i}>"))))
            .collect::<Vec<_>>()
            .join("|");
        let pattern = if anchored {
            format!(r"(?-u)\A(?:{body})\z")
        } else {
            format!("(?-u)(?:{body})")
        };
        #[allow(clippy::expect_used)] // the patterns are constants; a test builds them
        let regex = meta::Regex::builder()
            .syntax(syntax::Config::new().utf8(false))
            .configure(
                meta::Config::new()
                    .nfa_size_limit(Some(64 << 20))
                    .onepass_size_limit(Some(64 << 20))
                    .hybrid_cache_capacity(4 << 20)
                    .dfa_size_limit(Some(4 << 20)),
            )
            .build(&pattern)
            .expect("secret patterns compile");
        let groups = (0..rules.len())
            .map(|i| {
                regex
                    .group_info()
                    .to_index(PatternID::ZERO, &format!("s{i}"))
                    .unwrap_or(0)
            })
            .collect();
        Self {
            regex,
            kinds: rules.iter().map(|r| (r.kind, r.specific)).collect(),
            groups,
            caches: Mutex::new(Vec::new()),
        }
    }

    /// A cache for searches, warm if one was given back.
    pub(super) fn cache(&'static self) -> RegexCache {
        let kept = self.caches.lock().ok().and_then(|mut kept| kept.pop());
        RegexCache {
            alternatives: self,
            cache: Some(kept.unwrap_or_else(|| self.regex.create_cache())),
        }
    }

    /// Empty captures for [`Alternatives::captures_at`].
    pub(super) fn captures(&self) -> Captures {
        self.regex.create_captures()
    }

    /// Searches `haystack` from `at` (bytes before `at` are looked behind,
    /// as by `\b`); true when `caps` holds a match.
    pub(super) fn captures_at(
        &self,
        cache: &mut RegexCache,
        haystack: &[u8],
        at: usize,
        caps: &mut Captures,
    ) -> bool {
        let input = Input::new(haystack).span(at..haystack.len());
        match cache.cache.as_mut() {
            Some(cache) => self.regex.search_captures_with(cache, &input, caps),
            None => self.regex.search_captures(&input, caps),
        }
        caps.is_match()
    }

    /// Which alternative matched: its kind, whether it is specific, and the secret's span.
    pub(super) fn which(&self, caps: &Captures) -> Option<(Kind, bool, std::ops::Range<usize>)> {
        self.groups.iter().enumerate().find_map(|(i, &g)| {
            caps.get_group(g)
                .map(|span| (self.kinds[i].0, self.kinds[i].1, span.range()))
        })
    }
}

/// A search cache of an [`Alternatives`], given back to its pool when dropped.
pub(super) struct RegexCache {
    alternatives: &'static Alternatives,
    cache: Option<meta::Cache>,
}

impl std::fmt::Debug for RegexCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RegexCache")
    }
}

impl Drop for RegexCache {
    fn drop(&mut self) {
        if let (Some(cache), Ok(mut kept)) = (self.cache.take(), self.alternatives.caches.lock())
            && kept.len() < KEPT_CACHES
        {
            kept.push(cache);
        }
    }
}
