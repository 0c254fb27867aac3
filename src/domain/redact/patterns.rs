//! What a secret looks like: the rules of each kind, one combined regex over a line, the
//! literal prefilter that lets lines without candidates through untouched,
//! and the markers of private-key blocks.

use std::sync::LazyLock;

use aho_corasick::AhoCorasick;

use regex::bytes::Regex;

use super::alternatives::Alternatives;
use super::kinds::{Kind, Rule};

/// Key names whose assigned value is taken for a secret: a key that *ends*
/// with one of these words (`DB_PASSWORD`, `client_secret`, `x-api-key`,
/// `GITHUB_TOKEN`), but not `password_hint`, `max_tokens` or `secret_name`.
const KEY: &str = r#"(?i:[a-z0-9_.-]*(?:passw(?:or)?d|secret|token|api[_-]?key|access[_-]?key|private[_-]?key|credentials?))["']?"#;

/// Characters of an unquoted assigned value.
const VALUE: &str = r#"[^\s"'`,;&<>(){}\[\]=][^\s"'`,;&<>(){}\[\]]{2,}"#;

/// The alternatives, earliest first when two start at the same place.
static RULES: LazyLock<Vec<Rule>> = LazyLock::new(|| {
    let rule = |kind, specific, pattern: String| (kind, specific, pattern);
    let rules = [
        rule(Kind::AwsAccessKeyId, true, r"\b(?P<s>(?:AKIA|ASIA)[A-Z0-9]{16})\b".into()),
        rule(Kind::GithubToken, true, r"\b(?P<s>gh[pousr]_[A-Za-z0-9]{36,})\b".into()),
        rule(Kind::GithubToken, true, r"\b(?P<s>github_pat_[A-Za-z0-9_]{22,})\b".into()),
        rule(Kind::GitlabToken, true, r"\b(?P<s>glpat-[A-Za-z0-9_-]{20,})".into()),
        rule(Kind::SlackToken, true, r"\b(?P<s>xox[abeoprs]-[A-Za-z0-9-]{10,})".into()),
        rule(
            Kind::SlackWebhook,
            false,
            r"hooks\.slack\.com/(?:services|workflows|triggers)/(?P<s>[A-Za-z0-9_/-]{16,})".into(),
        ),
        rule(Kind::StripeKey, true, r"\b(?P<s>(?:sk|rk)_live_[A-Za-z0-9]{16,})".into()),
        rule(Kind::AnthropicKey, true, r"\b(?P<s>sk-ant-[A-Za-z0-9_-]{20,})".into()),
        rule(
            Kind::OpenaiKey,
            true,
            r"\b(?P<s>sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,})".into(),
        ),
        rule(Kind::GoogleApiKey, true, r"\b(?P<s>AIza[0-9A-Za-z_-]{35})".into()),
        rule(
            Kind::Jwt,
            true,
            r"\b(?P<s>eyJ[A-Za-z0-9_-]{8,}\.ey[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*)".into(),
        ),
        rule(
            Kind::AwsSecretAccessKey,
            false,
            r#"(?i:aws_?secret_?access_?key|aws_?secret_?key|secret_?access_?key)["']?\s{0,8}(?::=|=>|=|:)\s{0,8}["']?(?P<s>[A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+=]|$)"#.into(),
        ),
        rule(
            Kind::UrlPassword,
            false,
            r#"\b[A-Za-z][A-Za-z0-9+.-]{1,30}://[^:/?#@\s"'<>]+:(?P<s>[^@/?#\s"'<>]+)@"#.into(),
        ),
        rule(
            Kind::Authorization,
            false,
            r#"(?i:\b(?:proxy-)?authorization)["']?\s{0,8}[:=]\s{0,8}["']?(?i:(?:bearer|basic|token|digest)\s+)?(?P<s>[A-Za-z0-9._~+/-]{8,}=*)"#.into(),
        ),
        rule(
            Kind::BearerToken,
            false,
            r"(?i:\bbearer)\s+(?P<s>[A-Za-z0-9._~+/-]{16,}=*)".into(),
        ),
        rule(
            Kind::GenericSecret,
            false,
            format!(r#"{KEY}\s{{0,8}}(?::=|=>|=|:)\s{{0,8}}"(?P<s>[^"\r\n]{{3,}})""#),
        ),
        rule(
            Kind::GenericSecret,
            false,
            format!(r#"{KEY}\s{{0,8}}(?::=|=>|=|:)\s{{0,8}}'(?P<s>[^'\r\n]{{3,}})'"#),
        ),
        rule(
            Kind::GenericSecret,
            false,
            format!(r"{KEY}[ \t]{{0,8}}(?::=|=>|=)[ \t]{{0,8}}(?P<s>{VALUE})"),
        ),
        // After a colon only a value that ends the line (or a field) counts:
        // `password: hunter22` does, `password: click the link below` does not.
        rule(
            Kind::GenericSecret,
            false,
            format!(r"{KEY}[ \t]{{0,8}}:[ \t]{{0,8}}(?P<s>{VALUE})[ \t]*(?:[,;}}\]]|\r?\n|$)"),
        ),
        rule(
            Kind::GenericSecret,
            false,
            r"(?i:--[a-z0-9-]*(?:password|passwd|token|secret|api-key))[ \t]+(?P<s>[^\s\x22'-][^\s\x22']{2,})".to_owned(),
        ),
    ];
    rules
        .into_iter()
        .map(|(kind, specific, pattern)| Rule {
            kind,
            specific,
            pattern: Box::leak(pattern.into_boxed_str()),
        })
        .collect()
});

/// Which specific token `secret` is, in full, if any.
fn specific_token(secret: &[u8]) -> Option<(Kind, bool, std::ops::Range<usize>)> {
    let mut cache = SPECIFIC.cache();
    let mut caps = SPECIFIC.captures();
    if !SPECIFIC.captures_at(&mut cache, secret, 0, &mut caps) {
        return None;
    }
    SPECIFIC.which(&caps)
}

/// The line regex: every rule.
pub(super) static LINE: LazyLock<Alternatives> =
    LazyLock::new(|| Alternatives::build(&RULES.iter().collect::<Vec<_>>(), false));

/// The specific rules, anchored: which token a generic value is, if any.
static SPECIFIC: LazyLock<Alternatives> = LazyLock::new(|| {
    Alternatives::build(
        &RULES.iter().filter(|r| r.specific).collect::<Vec<_>>(),
        true,
    )
});

/// Literals one of which every secret (or its key name) contains; a line
/// holding none of them cannot hold a secret. Key words come in three cases
/// (`secret`, `Secret`, `SECRET`): a case-sensitive search is several times faster,
/// and keys in odd mixed case (`pAsSwOrD`) are not worth it.
///
/// The literals are as long as the rules allow, because words such as
/// `key`, `auth` and `high` fill ordinary logs: a line that holds one is
/// scanned by the whole line regex, ~50 times slower than the prefilter.
/// `key` only counts after `api`, `access` or `private` (the key names end
/// `…i_key`, `…s-key`, `…eKey`), `auth` only as `authorization`, `pass`
/// only as `passw` (`password`, `passwd`: the rules know no other), and `gh`
/// only as the prefix of a GitHub token.
const PREFILTER_LITERALS: &[&str] = &[
    "AKIA",
    "ASIA",
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "github_pat_",
    "glpat-",
    "xox",
    "hooks.slack",
    "_live_",
    "sk-",
    "AIza",
    "eyJ",
    "://",
    "-----BEGIN",
    // password, passwd: a test run's `PASSED` and `passed` are no candidates
    "passw",
    "passW",
    "Passw",
    "PassW",
    "PASSw",
    "PASSW",
    "secret",
    "Secret",
    "SECRET",
    "token",
    "Token",
    "TOKEN",
    // api_key, api-key, apikey, access_key, accesskey, private_key, privatekey
    "_key",
    "-key",
    "ikey",
    "skey",
    "ekey",
    // apiKey, ApiKey, APIKey, accessKey, AccessKey, privateKey, api_Key
    "_Key",
    "-Key",
    "iKey",
    "IKey",
    "sKey",
    "SKey",
    "eKey",
    "EKey",
    // API_KEY, API-KEY, APIKEY, ACCESSKEY, PRIVATEKEY
    "_KEY",
    "-KEY",
    "IKEY",
    "SKEY",
    "EKEY",
    "credential",
    "Credential",
    "CREDENTIAL",
    "uthorization",
    "UTHORIZATION",
    "bearer",
    "Bearer",
    "BEARER",
];

/// The prefilter over [`PREFILTER_LITERALS`].
pub(super) static PREFILTER: LazyLock<AhoCorasick> = LazyLock::new(|| {
    #[allow(clippy::expect_used)] // constant literals; a test builds them
    AhoCorasick::builder()
        .match_kind(aho_corasick::MatchKind::LeftmostFirst)
        .build(PREFILTER_LITERALS)
        .expect("prefilter literals build")
});

/// Start of a private key block.
pub(super) static PEM_BEGIN: LazyLock<Regex> = LazyLock::new(|| pem_marker("BEGIN"));
/// End of a private key block.
pub(super) static PEM_END: LazyLock<Regex> = LazyLock::new(|| pem_marker("END"));

fn pem_marker(which: &str) -> Regex {
    #[allow(clippy::expect_used)] // constant pattern; a test builds it
    Regex::new(&format!(
        r"(?-u)-----{which} [A-Z0-9 ]{{0,40}}PRIVATE KEY(?: BLOCK)?-----"
    ))
    .expect("PEM marker pattern compiles")
}

/// Bytes that may follow a BEGIN marker on its own line as part of the key:
/// base64, the escapes of a JSON string (`\n`), headers (`Proc-Type: 4,ENCRYPTED`)
/// and the END marker itself.
pub(super) fn is_pem_run_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"+/=\\ \t\r:,-".contains(&b)
}

/// A line inside a multi-line key block: base64, blank, or a header.
pub(super) fn is_pem_body_line(line: &[u8]) -> bool {
    let line = line.trim_ascii();
    line.iter()
        .all(|b| b.is_ascii_alphanumeric() || b"+/=".contains(b))
        || line.starts_with(b"Proc-Type:")
        || line.starts_with(b"DEK-Info:")
        || line.starts_with(b"Comment:")
}

/// The kind to report for a matched secret, or `None` when the match is not
/// taken for one (a placeholder, an already redacted value, a slug, code).
/// `next` is the byte after the match, when there is one.
pub(super) fn accept(kind: Kind, specific: bool, secret: &[u8], next: Option<u8>) -> Option<Kind> {
    if is_placeholder(secret) {
        return None;
    }
    if !specific && secret.len() < 8 && secret.iter().all(u8::is_ascii_digit) {
        // A count, a port, an id: `max_token: 512`, `key=token:48213`.
        return None;
    }
    let statement_end = next == Some(b';') && is_identifier(secret);
    if !specific && (matches!(next, Some(b'(' | b'[')) || statement_end) {
        // An expression, not a value: `token = session.refresh(&key)`,
        // `password = os.environ["DB_PASSWORD"]`, `let session_token = buf;`
        // (code quotes its literals). Only a known token shape counts.
        let (found, _, _) = specific_token(secret)?;
        return accept(found, true, secret, None);
    }
    if kind == Kind::OpenaiKey && !mixed(secret.get(3..).unwrap_or_default()) {
        return None;
    }
    if specific {
        return Some(kind);
    }
    // A generic value that is a known token is reported as that token.
    match specific_token(secret) {
        Some((found, _, _)) => accept(found, true, secret, None).or(Some(kind)),
        None => Some(kind),
    }
}

/// True for what reads as a name in code: a letter or `_`, then letters,
/// digits, `_` and `.`, and either a `_` or `.` or no digit at all
/// (`cache_entry.token`, `buf`; not `hunter2abc`, which stays a secret).
fn is_identifier(s: &[u8]) -> bool {
    s.first()
        .is_some_and(|b| b.is_ascii_alphabetic() || *b == b'_')
        && s.iter()
            .all(|b| b.is_ascii_alphanumeric() || b"_.".contains(b))
        && (s.iter().any(|b| b"_.".contains(b)) || !s.iter().any(u8::is_ascii_digit))
}

/// True when `s` has upper- and lower-case letters and digits (real keys do, slugs rarely).
fn mixed(s: &[u8]) -> bool {
    s.iter().any(u8::is_ascii_uppercase)
        && s.iter().any(u8::is_ascii_lowercase)
        && s.iter().any(u8::is_ascii_digit)
}

/// Values that stand for a secret rather than being one.
fn is_placeholder(value: &[u8]) -> bool {
    const WORDS: &[&str] = &[
        "null",
        "nil",
        "none",
        "true",
        "false",
        "undefined",
        "redacted",
        "hidden",
        "masked",
        "empty",
        "string",
        "required",
        "optional",
        "password",
        "secret",
        "token",
        "example",
        "changeme",
        "your_password",
        "your-password",
        "<password>",
    ];
    let trimmed = value.trim_ascii();
    if trimmed.is_empty()
        || trimmed.starts_with(b"[REDACTED")
        || [b'$', b'<', b'%', b'{', b'*', b'('].contains(&trimmed[0])
    {
        return true;
    }
    if trimmed.iter().all(|b| *b == trimmed[0]) {
        return true; // xxxxxxxx, ********, ........
    }
    WORDS
        .iter()
        .any(|w| trimmed.eq_ignore_ascii_case(w.as_bytes()))
}
