//! Our counts against the reference: tiktoken's published encodings, and
//! tiktoken-rs (OpenAI's tiktoken core, vendored) on varied real text.

use sha2::{Digest, Sha256};

use super::{Counter, Digested, Encoding};

fn bpe_encode(encoding: Encoding, text: &str) -> Vec<u32> {
    encoding.tokenizer().encode(text)
}

fn tiktoken_encode(encoding: Encoding, text: &str) -> Vec<u32> {
    let bpe = match encoding {
        Encoding::O200kBase => tiktoken_rs::o200k_base_singleton(),
        Encoding::Cl100kBase => tiktoken_rs::cl100k_base_singleton(),
    };
    bpe.encode_ordinary(text)
}

#[test]
fn published_encodings_are_reproduced() {
    // tiktoken tests/test_encoding.py and tiktoken-rs tests/tiktoken.rs.
    let cases: [(Encoding, &str, &[u32]); 5] = [
        (Encoding::Cl100kBase, "hello world", &[15339, 1917]),
        (Encoding::Cl100kBase, " \u{85}0", &[220, 126, 227, 15]),
        (
            Encoding::Cl100kBase,
            "This is a test         with a lot of spaces",
            &[2028, 374, 264, 1296, 260, 449, 264, 2763, 315, 12908],
        ),
        (Encoding::O200kBase, "hello world", &[24912, 2375]),
        (
            Encoding::O200kBase,
            "This is a test         with a lot of spaces",
            &[2500, 382, 261, 1746, 269, 483, 261, 3261, 328, 18608],
        ),
    ];
    for (encoding, text, tokens) in cases {
        assert_eq!(bpe_encode(encoding, text), tokens, "{text:?}");
        assert_eq!(tiktoken_encode(encoding, text), tokens, "{text:?}");
        assert_eq!(Counter::Exact(encoding).count(text), tokens.len() as u64);
    }
}

/// Real text of several kinds: this crate's sources and docs, plus shapes
/// that BPE pre-tokenization treats specially.
fn corpus() -> Vec<String> {
    let root = env!("CARGO_MANIFEST_DIR");
    let mut texts: Vec<String> = [
        "README.md",
        "src/domain/memories/ingest/mod.rs",
        "src/http/error.rs",
        "Cargo.toml",
    ]
    .iter()
    .filter_map(|path| std::fs::read_to_string(format!("{root}/{path}")).ok())
    .collect();
    assert_eq!(texts.len(), 4, "the crate's own files are readable");
    texts.extend(
        [
            "   leading spaces, trailing spaces   ",
            "tabs\t\tand\r\nCRLF\r\n\r\n\n\n   \n",
            "digits 1234567890123456789012345678901234567890 and 3.14159e-10, 1,000,000",
            "emoji 😀👍🏽👨‍👩‍👧‍👦🇫🇷 and ✓✗ symbols ∑∫√",
            "日本語のテキストと中文文本以及한국어 텍스트",
            "Ünïcödé façade naïve coöperate — «quotes» „German“",
            "Ελληνικά и русский текст, עברית, العربية",
            "<|endoftext|> <|fim_prefix|> special tokens are plain text here",
            "it's we'll they're I'M YOU'VE He'd she'll",
            "{\"key\": [1, 2, {\"nested\": null}], \"url\": \"https://example.com/a/b?c=d&e=f\"}",
            "    def f(x):\n        return x ** 2  # comment\n",
            "!!!???...,,,;;;:::---___===+++***///\\\\\\|||",
            "\u{0}\u{1}\u{7f} control \u{200b}zero\u{feff}width",
        ]
        .map(str::to_owned),
    );
    texts.push("a".repeat(10_000));
    texts.push(" ".repeat(5_000) + "x");
    texts.push("9".repeat(1_001));
    texts
}

#[test]
fn counts_equal_tiktoken_on_varied_real_text() {
    for text in corpus() {
        for encoding in [Encoding::O200kBase, Encoding::Cl100kBase] {
            let ours = bpe_encode(encoding, &text);
            let reference = tiktoken_encode(encoding, &text);
            assert_eq!(
                ours,
                reference,
                "{} differs on {:?}",
                encoding.name(),
                text.chars().take(60).collect::<String>()
            );
            assert_eq!(
                Counter::Exact(encoding).count(&text),
                reference.len() as u64
            );
            assert_eq!(
                Counter::Exact(encoding).count_cached(&text),
                reference.len() as u64
            );
        }
    }
}

/// A digest noted for a text is used for that very text only: a copy of it
/// elsewhere in memory is hashed, and a wrong digest noted for a text
/// shows in its count (it names another text's cached count).
#[test]
fn noted_digests_name_the_text_where_it_sits() {
    let counter = Counter::Exact(Encoding::O200kBase);
    let text = "cargo test --workspace: 412 passed, 3 failed\n".repeat(200);
    let short = "ok ".repeat(2_000);
    let exact = counter.count(&text);
    let mut known = Digested::default();
    known.note(&text, Sha256::digest(text.as_bytes()).into());
    assert_eq!(counter.count_digested(&text, &known), exact);
    let copy = text.clone();
    assert_eq!(counter.count_digested(&copy, &known), exact);
    // The short text's count cached under its digest, then that digest
    // noted for the long text: the long text now answers the short one's.
    let short_digest: [u8; 32] = Sha256::digest(short.as_bytes()).into();
    let short_count = counter.count_cached(&short);
    let mut wrong = Digested::default();
    wrong.note(&text, short_digest);
    assert_eq!(counter.count_digested(&text, &wrong), short_count);
    assert_ne!(short_count, exact);
    assert_eq!(counter.count_digested(&copy, &wrong), exact);
}
