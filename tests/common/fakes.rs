//! Fake secrets for redaction tests, assembled at run time so that the
//! repository holds nothing that looks like a live key.

/// `len` pseudo-random characters of `alphabet`, different for each seed.
pub fn random(seed: u64, len: usize, alphabet: &[u8]) -> String {
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

const ALNUM: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
const B64URL: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
const B64: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// A fake secret on a realistic line: (kind reported, line, the secret itself).
pub struct Fake {
    pub kind: &'static str,
    pub line: String,
    pub secret: String,
}

/// One fake secret of every kind (and a private key), different for each seed.
pub fn fakes(seed: u64) -> Vec<Fake> {
    let r = |n: u64, len: usize, alphabet: &[u8]| random(seed * 100 + n, len, alphabet);
    let fake = |kind, line: String, secret: &str| Fake {
        kind,
        line,
        secret: secret.to_owned(),
    };
    let aws_id = ["AK", "IA", &r(1, 16, b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")].concat();
    let aws_secret = r(2, 40, B64);
    let ghp = ["gh", "p_", &r(3, 36, ALNUM)].concat();
    let pat = ["github", "_pat_", &r(4, 22, ALNUM), "_", &r(5, 59, ALNUM)].concat();
    let glpat = ["gl", "pat-", &r(6, 20, ALNUM)].concat();
    let slack = [
        "xo",
        "xp-",
        &r(7, 12, b"0123456789"),
        "-",
        &r(8, 13, b"0123456789"),
        "-",
        &r(9, 32, ALNUM),
    ]
    .concat();
    let hook = [
        "T0",
        &r(10, 8, ALNUM),
        "/B0",
        &r(11, 8, ALNUM),
        "/",
        &r(12, 24, ALNUM),
    ]
    .concat();
    let stripe = ["rk", "_live_", &r(13, 30, ALNUM)].concat();
    let anthropic = ["sk-", "ant-api03-", &r(14, 93, B64URL), "AA"].concat();
    let openai = ["sk-", "proj-", &r(15, 60, B64URL), "Q7x"].concat();
    let google = ["AI", "za", &r(16, 35, B64URL)].concat();
    let jwt = [
        "ey",
        "JhbGciOiJSUzI1NiJ9.",
        "eyJpc3MiOiJhdXRoIn0",
        &r(17, 30, B64URL),
        ".",
        &r(18, 86, B64URL),
    ]
    .concat();
    let url_password = ["pw", &r(19, 14, ALNUM)].concat();
    let generic = ["Tr0ub4dor", &r(20, 6, ALNUM)].concat();
    let key_body: Vec<String> = (0..25).map(|i| r(30 + i, 64, B64)).collect();
    let key = format!(
        "{}\n{}\n{}",
        ["-----BEGIN ", "RSA PRIVATE", " KEY-----"].concat(),
        key_body.join("\n"),
        ["-----END ", "RSA PRIVATE", " KEY-----"].concat()
    );
    vec![
        fake(
            "aws_access_key_id",
            format!("export AWS_ACCESS_KEY_ID={aws_id}"),
            &aws_id,
        ),
        fake(
            "aws_secret_access_key",
            format!("aws_secret_access_key = {aws_secret}"),
            &aws_secret,
        ),
        fake(
            "github_token",
            format!("ERROR push rejected for {ghp}: bad credentials"),
            &ghp,
        ),
        fake("github_token", format!("using fine-grained {pat}"), &pat),
        fake(
            "gitlab_token",
            format!("git clone https://oauth2@gitlab.com/x.git # {glpat}"),
            &glpat,
        ),
        fake("slack_token", format!("SlackClient(token={slack})"), &slack),
        fake(
            "slack_webhook",
            format!("notify: https://hooks.slack.com/services/{hook}"),
            &hook,
        ),
        fake("stripe_key", format!("stripe.Key({stripe})"), &stripe),
        fake(
            "anthropic_key",
            format!("WARN retrying with key {anthropic}"),
            &anthropic,
        ),
        fake(
            "openai_key",
            format!("client = OpenAI(api_key=\"{openai}\")"),
            &openai,
        ),
        fake(
            "google_api_key",
            format!("GET /geocode/json?address=x&key={google} 200"),
            &google,
        ),
        fake("jwt", format!("set-cookie: session={jwt}; HttpOnly"), &jwt),
        fake(
            "url_password",
            format!("FATAL could not connect to mysql://root:{url_password}@10.1.2.3:3306/prod"),
            &url_password,
        ),
        fake(
            "generic_secret",
            format!("SMTP_PASSWORD='{generic}'"),
            &generic,
        ),
        fake("private_key", key, &key_body[7]),
    ]
}

/// Ordinary lines that must come back unchanged.
pub fn ordinary() -> String {
    [
        "GET https://example.com/docs/index.html?lang=en 200 12ms".to_owned(),
        format!("commit {}", random(1, 40, b"0123456789abcdef")),
        "trace 7d444840-9dc0-11d1-b245-5ffdce74fad2 done".to_owned(),
        format!("blob {}", random(2, 200, B64)),
        "payload eyJ0eXBlIjogImV2ZW50IiwgImlkIjogNDJ9 queued".to_owned(),
        "max_tokens=2048 prompt_tokens: 311".to_owned(),
        "Enter your password: click Continue to go on".to_owned(),
        "ssh://git@github.com/owner/repo.git".to_owned(),
    ]
    .join("\n")
        + "\n"
}
