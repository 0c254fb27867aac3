//! The hand-written split against bpe-openai's regex split.

use proptest::prelude::*;

use super::*;

const ENCODINGS: [Encoding; 2] = [Encoding::O200kBase, Encoding::Cl100kBase];

/// The pieces of `text` by `split` ([`next_piece`] or [`any_piece`]).
fn pieces_by(
    encoding: Encoding,
    text: &str,
    split: fn(Encoding, &[u8], usize) -> usize,
) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    while start < text.len() {
        let end = split(encoding, text.as_bytes(), start);
        assert!(
            end > start && text.is_char_boundary(end),
            "{text:?} at {start}"
        );
        out.push(&text[start..end]);
        start = end;
    }
    out
}

/// Both splits, the ASCII shortcut's and the general one, are the library's.
fn assert_same_split(text: &str) {
    for encoding in ENCODINGS {
        let library: Vec<&str> = encoding.tokenizer().split(text).collect();
        assert_eq!(
            pieces_by(encoding, text, next_piece),
            library,
            "{encoding:?} on {text:?}"
        );
        assert_eq!(
            pieces_by(encoding, text, any_piece),
            library,
            "{encoding:?} on {text:?}, general split"
        );
    }
}

#[test]
fn every_class_pattern_is_one_unicode_class() {
    for pattern in [
        r"\p{L}",
        r"[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]",
        r"[\p{Ll}\p{Lm}\p{Lo}\p{M}]",
        r"\p{N}",
        r"\s",
        r"[\r\n]",
    ] {
        assert!(!unicode_ranges(pattern).is_empty(), "{pattern}");
    }
}

#[test]
fn the_contraction_letters_fold_as_the_regex_folds_them() {
    // (?i:x) for each letter the contractions use: only `s` gains a
    // character beyond its two ASCII cases, the long s.
    for letter in ['s', 't', 'r', 'e', 'v', 'm', 'l', 'd'] {
        let folded = unicode_ranges(&format!("(?i:{letter})"));
        let mut chars: Vec<char> = folded
            .iter()
            .flat_map(|&(s, e)| (s..=e).filter_map(char::from_u32))
            .collect();
        chars.sort_unstable();
        let mut expected = vec![letter.to_ascii_uppercase(), letter];
        if letter == 's' {
            expected.push('ſ');
        }
        assert_eq!(chars, expected, "{letter}");
    }
}

#[test]
fn the_ascii_table_holds_the_classes_of_ascii() {
    for b in 0..128u8 {
        assert_eq!(ASCII[b as usize], CLASSES.of(u32::from(b)), "{b:#x}");
    }
}

#[test]
fn every_character_gets_the_classes_of_its_patterns() {
    let sets = [
        (LETTER, r"\p{L}"),
        (UPPER, r"[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]"),
        (LOWER, r"[\p{Ll}\p{Lm}\p{Lo}\p{M}]"),
        (NUMBER, r"\p{N}"),
        (SPACE, r"\s"),
        (NEWLINE, r"[\r\n]"),
    ]
    .map(|(flag, pattern)| {
        (
            flag,
            regex_automata::meta::Regex::new(&format!("^{pattern}$")).unwrap(),
        )
    });
    for c in (0..=0x10_FFFF).step_by(7).filter_map(char::from_u32) {
        let text = c.to_string();
        let expected = sets
            .iter()
            .filter(|(_, regex)| regex.is_match(&text))
            .fold(0, |acc, (flag, _)| acc | flag);
        assert_eq!(
            CLASSES.of(u32::from(c)),
            expected,
            "{c:?} U+{:04X}",
            u32::from(c)
        );
    }
}

#[test]
fn characters_get_their_classes() {
    let of = |c: char| CLASSES.of(u32::from(c));
    assert_eq!(of('a'), LETTER | LOWER);
    assert_eq!(of('É'), LETTER | UPPER);
    assert_eq!(of('ǅ'), LETTER | UPPER); // Lt
    assert_eq!(of('ʰ'), LETTER | UPPER | LOWER); // Lm
    assert_eq!(of('日'), LETTER | UPPER | LOWER); // Lo
    assert_eq!(of('\u{301}'), UPPER | LOWER); // Mn
    assert_eq!(of('٣'), NUMBER);
    assert_eq!(of('\u{3000}'), SPACE);
    assert_eq!(of('\n'), SPACE | NEWLINE);
    assert_eq!(of('𝐀'), LETTER | UPPER); // astral Lu
    assert_eq!(of('😀'), 0);
    assert_eq!(of('\u{10FFFF}'), 0);
}

#[test]
fn the_split_of_tricky_text_equals_the_regex_split() {
    for text in [
        "Hello World",
        "HELLO world's THEY'RE we'LL I'd 'sam' 'S",
        "((hello)) !!\n/usr/bin/env\n!\n/x",
        "  \n  x\t\ty \x0b\x0cz  ",
        "a1234567b 12 345 6789",
        "\r\n\r\n  \r  \n",
        "\x00\x01\x7f abc\x1f\x1e ",
        "Ünïcödé — ✓ 日本語 naïve CAFÉ Éclair",
        "it'ſ IT'ſ 'ſ x'ſa",
        "\u{301}ABC \u{301}abc a\u{301}b A\u{301}B ʰA ʰa",
        "ǅemal ǅ ǅa Ǆ",
        "٣٤٥٦ Ⅻ½ ¼¾x 𝟘𝟙𝟚𝟛",
        "a\u{a0}b \u{3000}c\u{2028}d\u{85}e  \u{a0}\u{a0}",
        "😀👍🏽 emoji 𝐀𝐁c 𐌰𐌱",
        "  \u{3000}",
        "x\u{3000}",
        "€100 €€ /€ \u{3000}€",
    ] {
        assert_same_split(text);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    #[test]
    fn random_ascii_splits_as_the_library(text in "[\\x00-\\x7f]{0,200}") {
        assert_same_split(&text);
    }

    /// Characters of every class the patterns name, next to each other.
    #[test]
    fn random_unicode_splits_as_the_library(
        text in "([a-zA-Z]{1,4}|[0-9]{1,4}|[ \\t\\r\\n]{1,3}|['/.,!-]|'(s|t|re|ve|m|ll|d|S|LL|ſ)|[éÉßſǅǄʰ日本]|\\p{Lu}|\\p{Ll}|\\p{Lt}|\\p{Lm}|\\p{Lo}|\\p{M}|\\p{N}|\\p{Zs}|[\\u{85}\\u{2028}\\u{3000}\\u{a0}]|\\p{S}|\\p{P}|[😀𝐀𝟘𐌰]|\\p{Cc}){0,40}"
    ) {
        assert_same_split(&text);
    }

    #[test]
    fn any_string_splits_as_the_library(text in "\\PC{0,60}") {
        assert_same_split(&text);
    }
}
