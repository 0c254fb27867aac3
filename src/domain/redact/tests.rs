//! Unit tests of redaction. Fake secrets are assembled at run time so that
//! the repository holds nothing that looks like a live key.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use proptest::prelude::*;

use super::*;

pub(super) const ALNUM: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/// `len` pseudo-random characters of `alphabet`, different for each seed.
pub(super) fn random(seed: u64, len: usize, alphabet: &[u8]) -> String {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            alphabet[(state % alphabet.len() as u64) as usize] as char
        })
        .collect()
}

/// Fake secrets of every kind, each with the kind it must be reported as.
pub fn fakes(seed: u64) -> Vec<(Kind, String, String)> {
    let r = |n: u64, len: usize| random(seed * 100 + n, len, ALNUM);
    let upper =
        |n: u64, len: usize| random(seed * 100 + n, len, b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567");
    let b64url = |n: u64, len: usize| {
        random(
            seed * 100 + n,
            len,
            b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_",
        )
    };
    let aws_id = ["AK", "IA", &upper(1, 16)].concat();
    let aws_secret = random(
        seed * 100 + 2,
        40,
        b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789/+",
    );
    let ghp = ["gh", "p_", &r(3, 36)].concat();
    let pat = ["github", "_pat_", &r(4, 22), "_", &r(5, 59)].concat();
    let glpat = ["gl", "pat-", &r(6, 20)].concat();
    let slack = ["xo", "xb-", &r(7, 12), "-", &r(8, 12), "-", &r(9, 24)].concat();
    let hook = ["T", &upper(10, 8), "/B", &upper(11, 8), "/", &r(12, 24)].concat();
    let stripe = ["sk", "_live_", &r(13, 24)].concat();
    let anthropic = ["sk-", "ant-api03-", &b64url(14, 93), "AA"].concat();
    let openai = [
        "sk-",
        "proj-",
        &b64url(15, 40),
        "T3Blbk",
        "FJ",
        &b64url(16, 40),
        "a1B",
    ]
    .concat();
    let google = ["AI", "za", &b64url(17, 35)].concat();
    let jwt = [
        "ey",
        "JhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.",
        "eyJzdWIiOiIxMjM0NTY3ODkwIiwi",
        &b64url(18, 20),
        ".",
        &b64url(19, 43),
    ]
    .concat();
    let password = ["hunter", &r(20, 6)].concat();
    vec![
        (
            Kind::AwsAccessKeyId,
            format!("aws_access_key_id = {aws_id}"),
            aws_id.clone(),
        ),
        (
            Kind::AwsSecretAccessKey,
            format!("aws_secret_access_key = {aws_secret}"),
            aws_secret.clone(),
        ),
        (
            Kind::AwsSecretAccessKey,
            format!("    \"SecretAccessKey\": \"{aws_secret}\","),
            aws_secret,
        ),
        (
            Kind::GithubToken,
            format!("remote: https://github.com/o/r using {ghp} ok"),
            ghp.clone(),
        ),
        (Kind::GithubToken, format!("using fine-grained {pat}"), pat),
        (
            Kind::GenericSecret,
            format!("DB_PASSWORD={password}; ./migrate"),
            password.clone(),
        ),
        (Kind::GithubToken, format!("export GITHUB_TOKEN={ghp}"), ghp),
        (Kind::GitlabToken, format!("token {glpat} expired"), glpat),
        (
            Kind::SlackToken,
            format!("slack client init {slack}"),
            slack,
        ),
        (
            Kind::SlackWebhook,
            format!("POST https://hooks.slack.com/services/{hook}"),
            hook,
        ),
        (
            Kind::StripeKey,
            format!("Stripe.api_key_is({stripe})"),
            stripe,
        ),
        (
            Kind::AnthropicKey,
            format!("x-api-key: {anthropic}"),
            anthropic,
        ),
        (
            Kind::OpenaiKey,
            format!("OPENAI_API_KEY=\"{openai}\""),
            openai,
        ),
        (
            Kind::GoogleApiKey,
            format!("https://maps.googleapis.com/maps/api/js?key={google}&v=3"),
            google,
        ),
        (
            Kind::Jwt,
            format!("session cookie {jwt}; Path=/"),
            jwt.clone(),
        ),
        (Kind::Jwt, format!("Authorization: Bearer {jwt}"), jwt),
        (
            Kind::UrlPassword,
            format!("DATABASE_URL=postgres://app:{password}@db.internal:5432/app"),
            password.clone(),
        ),
        (
            Kind::GenericSecret,
            format!("db.password = {password}x"),
            format!("{password}x"),
        ),
        (
            Kind::GenericSecret,
            format!("  \"client_secret\": \"{password}y\","),
            format!("{password}y"),
        ),
        (
            Kind::GenericSecret,
            format!("mysql --password {password}z -h db"),
            format!("{password}z"),
        ),
        (
            Kind::BearerToken,
            format!("curl -H 'X-Auth: Bearer {}'", r(21, 32)),
            r(21, 32),
        ),
    ]
}

/// A PEM private key of `body_lines` lines with this label.
pub(super) fn pem(label: &str, body_lines: usize, seed: u64) -> (String, Vec<String>) {
    let mut text = format!("-----BEGIN {label}PRIVATE KEY-----\n");
    let mut lines = Vec::new();
    for i in 0..body_lines {
        let line = random(
            seed * 1000 + i as u64,
            64,
            b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/",
        );
        text.push_str(&line);
        text.push('\n');
        lines.push(line);
    }
    text.push_str(&format!("-----END {label}PRIVATE KEY-----\n"));
    (text, lines)
}

pub(super) fn redact_with(content: &[u8], limits: Limits, pieces: &[usize]) -> (Vec<u8>, Report) {
    let mut redactor = Redactor::new(limits);
    let mut out = Vec::new();
    let mut rest = content;
    for &n in pieces {
        let n = n.min(rest.len());
        redactor.push(&rest[..n], &mut out);
        rest = &rest[n..];
    }
    redactor.push(rest, &mut out);
    redactor.finish(&mut out);
    (out, redactor.report().clone())
}

pub(super) fn contains(haystack: &[u8], needle: &str) -> bool {
    memchr::memmem::find(haystack, needle.as_bytes()).is_some()
}

#[test]
fn every_kind_is_found_replaced_and_counted() {
    for (kind, line, secret) in fakes(1) {
        let (out, report) = redact_text(&format!("{line}\n"));
        assert!(!out.contains(&secret), "{kind:?} left in: {out}");
        assert!(out.contains(&kind.marker()), "{kind:?} not marked: {out}");
        assert_eq!(report.total, 1, "{kind:?} in {line}: {report:?}");
        assert_eq!(report.count(kind), 1, "{kind:?} in {line}: {report:?}");
    }
}

#[test]
fn the_url_password_goes_and_the_user_and_host_stay() {
    let password = ["s3cr", "et-", &random(7, 10, ALNUM)].concat();
    let (out, report) = redact_text(&format!(
        "connecting to redis://cache:{password}@10.0.0.7:6379/0 ok\n"
    ));
    assert_eq!(
        out,
        "connecting to redis://cache:[REDACTED:url_password]@10.0.0.7:6379/0 ok\n"
    );
    assert_eq!(report.count(Kind::UrlPassword), 1);
}

#[test]
fn pem_blocks_of_every_label_become_one_marker() {
    for label in ["", "RSA ", "EC ", "DSA ", "OPENSSH ", "ENCRYPTED "] {
        let (key, lines) = pem(label, 26, 3);
        let text = format!("before\n{key}after\n");
        let (out, report) = redact_text(&text);
        assert_eq!(
            out, "before\n[REDACTED:private_key]\nafter\n",
            "label {label:?}"
        );
        assert_eq!(report.count(Kind::PrivateKey), 1);
        assert!(lines.iter().all(|l| !out.contains(l.as_str())));
    }
}

#[test]
fn an_encrypted_pem_with_headers_is_swallowed_whole() {
    let (key, lines) = pem("RSA ", 12, 4);
    let key = key.replacen(
        "-----\n",
        "-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,0A1B2C3D4E5F60718293A4B5C6D7E8F9\n\n",
        1,
    );
    let (out, report) = redact_text(&format!("{key}done\n"));
    assert_eq!(out, "[REDACTED:private_key]\ndone\n");
    assert_eq!(report.total, 1);
    assert!(lines.iter().all(|l| !out.contains(l.as_str())));
}

#[test]
fn a_pem_inside_a_json_string_is_replaced_in_place() {
    let (key, lines) = pem("", 20, 5);
    let escaped = key.replace('\n', "\\n");
    let text = format!(
        "{{\"type\": \"service_account\", \"private_key\": \"{escaped}\", \"client_email\": \"a@b.iam\"}}\n"
    );
    let (out, report) = redact_text(&text);
    assert_eq!(
        out,
        "{\"type\": \"service_account\", \"private_key\": \"[REDACTED:private_key]\\n\", \"client_email\": \"a@b.iam\"}\n"
    );
    assert_eq!(report.total, 1, "{report:?}");
    assert!(lines.iter().all(|l| !out.contains(l.as_str())));
}

#[test]
fn a_truncated_pem_ends_at_the_first_line_that_is_not_key() {
    let (key, lines) = pem("OPENSSH ", 10, 6);
    let truncated: String = key.lines().take(6).map(|l| format!("{l}\n")).collect();
    let (out, report) = redact_text(&format!("{truncated}$ ls -la\ntotal 0\n"));
    assert_eq!(out, "[REDACTED:private_key]\n$ ls -la\ntotal 0\n");
    assert_eq!(report.total, 1);
    assert!(lines.iter().all(|l| !out.contains(l.as_str())));
}

#[test]
fn ordinary_text_is_left_alone() {
    let sha = random(8, 40, b"0123456789abcdef");
    let uuid = "123e4567-e89b-42d3-a456-426614174000";
    let blob = random(
        9,
        120,
        b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/",
    );
    let json_b64 = "eyJrZXkiOiAidmFsdWUiLCAibGlzdCI6IFsxLCAyLCAzXX0=";
    let text = [
        "GET https://example.com/api/v1/items?page=2&sort=asc 200".to_owned(),
        format!("commit {sha}"),
        format!("request id {uuid}"),
        format!("data: {blob}"),
        format!("payload {json_b64}"),
        "Forgot your password: click the link below to reset it".to_owned(),
        "max_tokens=4096 total_tokens: 1234 token_count=7".to_owned(),
        "password_hint=first pet, secret_name: db-creds".to_owned(),
        "password: ${DB_PASSWORD}".to_owned(),
        "password = \"********\"".to_owned(),
        "token: null".to_owned(),
        "PWD=/home/agent OLDPWD=/tmp".to_owned(),
        "sk-learn-is-a-python-library-for-ml-in-general".to_owned(),
        "ssh git@github.com:owner/repo.git".to_owned(),
        "see http://user@example.com/path".to_owned(),
        "Bearer realm=\"api\"".to_owned(),
        // Code: an assigned expression is not a secret value.
        "let token = session.refresh(&key, 123)?;".to_owned(),
        "    let secret = config.secret_key();".to_owned(),
        "password = os.environ[\"DB_PASSWORD\"]".to_owned(),
        "api_token=get_token(user)".to_owned(),
        "let session_token = cache_entry.token;".to_owned(),
        // Short numbers: counts and ids, not secrets.
        "cache hit key=token:48213".to_owned(),
        "max_token: 512, refresh_token=7".to_owned(),
    ]
    .join("\n");
    let (out, report) = redact_text(&text);
    assert_eq!(report.total, 0, "{report:?}\n{out}");
    assert_eq!(out, text);
}

#[test]
fn redacting_twice_changes_nothing_more() {
    let text: String = fakes(2)
        .iter()
        .map(|(_, line, _)| format!("{line}\n"))
        .collect();
    let (once, first) = redact_text(&text);
    let (twice, second) = redact_text(&once);
    assert_eq!(first.total, fakes(2).len() as u64);
    assert_eq!(second.total, 0, "{second:?}\n{once}");
    assert_eq!(twice, once);
}

#[test]
fn invalid_utf8_passes_through_untouched() {
    let secret = ["gh", "p_", &random(10, 36, ALNUM)].concat();
    let mut content = vec![0xff, 0xfe, b'\n', 0x80];
    content.extend_from_slice(format!(" token {secret} ").as_bytes());
    content.extend_from_slice(&[0xc3, 0x28, b'\n', 0xff]);
    let (out, report) = redact_bytes(&content);
    let mut expected = vec![0xff, 0xfe, b'\n', 0x80];
    expected.extend_from_slice(b" token [REDACTED:github_token] ");
    expected.extend_from_slice(&[0xc3, 0x28, b'\n', 0xff]);
    assert_eq!(out, expected);
    assert_eq!(report.total, 1);
}

/// Small bounds, so that tests reach the windows of long lines.
fn small() -> Limits {
    Limits {
        max_line: 640,
        overlap: 320,
        pem_max: 64,
    }
}

#[test]
fn a_secret_anywhere_in_a_long_line_is_caught() {
    // Put a token at every offset around the first window cuts of a long line.
    let secret = ["gh", "p_", &random(11, 36, ALNUM)].concat();
    for offset in 250..400 {
        let mut line = random(12, offset, b"abc ").into_bytes();
        line.extend_from_slice(b" ");
        line.extend_from_slice(secret.as_bytes());
        line.extend_from_slice(b" ");
        line.extend_from_slice(random(13, 2000, b"abc ").as_bytes());
        line.push(b'\n');
        let (out, report) = redact_with(&line, small(), &[]);
        assert!(!contains(&out, &secret), "missed at offset {offset}");
        assert_eq!(report.total, 1);
        assert_eq!(
            out.len(),
            line.len() - secret.len() + Kind::GithubToken.marker().len()
        );
    }
}

#[test]
fn lines_longer_than_the_window_keep_every_byte_that_is_not_secret() {
    let text = random(14, 10_000, b"abcdef \n").repeat(3);
    let (out, report) = redact_with(text.as_bytes(), small(), &[]);
    assert_eq!(report.total, 0);
    assert_eq!(out, text.as_bytes());
    let long = "x".repeat(5000);
    let (out, _) = redact_with(long.as_bytes(), small(), &[7, 900, 1]);
    assert_eq!(out, long.as_bytes());
}

#[test]
fn media_types_that_are_binary_are_not_scanned() {
    for mime in [
        "image/png",
        "video/mp4",
        "application/octet-stream",
        "application/zip",
        "application/gzip",
        "application/pdf",
        "Audio/ogg; codecs=opus",
    ] {
        assert!(!scans_media_type(mime), "{mime}");
    }
    for mime in [
        "text/plain",
        "application/json",
        "text/html; charset=utf-8",
        "application/x-ndjson",
        "application/yaml",
    ] {
        assert!(scans_media_type(mime), "{mime}");
    }
}

/// Text mixing ordinary lines, secrets, key blocks and long lines.
pub(super) fn corpus() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        4 => (0u64..1000, 0usize..120).prop_map(|(s, n)| format!("{}\n", random(s, n, b"abc XYZ:=/.-_\"'"))),
        3 => (0u64..1000, 0usize..20).prop_map(|(s, i)| {
            let fakes = fakes(s);
            let (_, line, _) = &fakes[i % fakes.len()];
            format!("{line}\n")
        }),
        1 => (0u64..1000, 0usize..12).prop_map(|(s, n)| pem("RSA ", n, s).0),
        1 => (0u64..1000, 600usize..2500).prop_map(|(s, n)| {
            let secret = ["gh", "o_", &random(s, 36, ALNUM)].concat();
            let cut = (s as usize * 7) % n;
            let filler = random(s + 1, n, b"ab cd");
            format!("{} {secret} {}\n", &filler[..cut], &filler[cut..])
        }),
        1 => Just("\n".to_owned()),
    ];
    proptest::collection::vec(piece, 0..24).prop_map(|parts| parts.concat().into_bytes())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn any_split_gives_the_same_output_as_the_whole(
        content in corpus(),
        cuts in proptest::collection::vec(0usize..4000, 0..40),
        small_limits in any::<bool>(),
        trim in 0usize..50,
    ) {
        let content = &content[..content.len().saturating_sub(trim)]; // may end mid-line or mid-secret
        let limits = if small_limits { small() } else { Limits::default() };
        let whole = redact_with(content, limits, &[]);
        let split = redact_with(content, limits, &cuts);
        prop_assert_eq!(&split.1, &whole.1);
        prop_assert!(split.0 == whole.0, "split output differs");
        let bytewise = redact_with(content, limits, &vec![1; content.len().min(3000)]);
        prop_assert!(bytewise.0 == whole.0, "byte-by-byte output differs");
    }
}

#[test]
fn a_split_through_each_secret_changes_nothing() {
    let text: String = fakes(3)
        .iter()
        .map(|(_, line, _)| format!("{line}\n"))
        .collect();
    let (key, _) = pem("EC ", 8, 3);
    let text = format!("{text}{key}tail\n");
    let whole = redact_with(text.as_bytes(), Limits::default(), &[]);
    assert_eq!(whole.1.total, fakes(3).len() as u64 + 1);
    for cut in 0..text.len() {
        let split = redact_with(text.as_bytes(), Limits::default(), &[cut]);
        assert!(split.0 == whole.0, "cut at {cut} differs");
        assert_eq!(split.1, whole.1);
    }
}
