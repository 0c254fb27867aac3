//! The kinds of secret and the rules that recognise them: what the pattern
//! table ([`super::patterns`]) lists and the combined regex
//! ([`super::alternatives`]) reports.

/// A kind of secret; its name appears in the marker `[REDACTED:<name>]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    /// A PEM private key block (RSA, EC, DSA, OPENSSH, ENCRYPTED, PKCS#8, PGP).
    PrivateKey,
    /// AWS access key id (`AKIA…`, `ASIA…`).
    AwsAccessKeyId,
    /// AWS secret access key, in an `aws_secret_access_key`-style assignment.
    AwsSecretAccessKey,
    /// GitHub token (`ghp_`, `gho_`, `ghu_`, `ghs_`, `ghr_`, `github_pat_`).
    GithubToken,
    /// GitLab personal access token (`glpat-`).
    GitlabToken,
    /// Slack token (`xoxb-`, `xoxp-`, …).
    SlackToken,
    /// The secret path of a Slack webhook URL.
    SlackWebhook,
    /// Stripe live key (`sk_live_`, `rk_live_`).
    StripeKey,
    /// Anthropic API key (`sk-ant-`).
    AnthropicKey,
    /// OpenAI API key (`sk-…`, `sk-proj-…`).
    OpenaiKey,
    /// Google API key (`AIza…`).
    GoogleApiKey,
    /// JSON Web Token.
    Jwt,
    /// The password of a `scheme://user:password@host` URL.
    UrlPassword,
    /// The credentials of an `Authorization:` header.
    Authorization,
    /// A `Bearer <token>` credential.
    BearerToken,
    /// The value of a `password=`/`secret:`/`api_key=`-style assignment.
    GenericSecret,
}

impl Kind {
    /// Every kind, in order.
    pub const ALL: [Kind; 16] = [
        Kind::PrivateKey,
        Kind::AwsAccessKeyId,
        Kind::AwsSecretAccessKey,
        Kind::GithubToken,
        Kind::GitlabToken,
        Kind::SlackToken,
        Kind::SlackWebhook,
        Kind::StripeKey,
        Kind::AnthropicKey,
        Kind::OpenaiKey,
        Kind::GoogleApiKey,
        Kind::Jwt,
        Kind::UrlPassword,
        Kind::Authorization,
        Kind::BearerToken,
        Kind::GenericSecret,
    ];

    /// The name used in markers and reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::PrivateKey => "private_key",
            Kind::AwsAccessKeyId => "aws_access_key_id",
            Kind::AwsSecretAccessKey => "aws_secret_access_key",
            Kind::GithubToken => "github_token",
            Kind::GitlabToken => "gitlab_token",
            Kind::SlackToken => "slack_token",
            Kind::SlackWebhook => "slack_webhook",
            Kind::StripeKey => "stripe_key",
            Kind::AnthropicKey => "anthropic_key",
            Kind::OpenaiKey => "openai_key",
            Kind::GoogleApiKey => "google_api_key",
            Kind::Jwt => "jwt",
            Kind::UrlPassword => "url_password",
            Kind::Authorization => "authorization",
            Kind::BearerToken => "bearer_token",
            Kind::GenericSecret => "generic_secret",
        }
    }

    /// The text that replaces a secret of this kind.
    pub fn marker(self) -> String {
        format!("[REDACTED:{}]", self.as_str())
    }
}

/// One alternative of the line regex: its kind, whether it recognises a token
/// by its own shape (then a value of a generic rule that is such a token is
/// reported as this kind), and its pattern, in which the group `(?P<s>…)`
/// marks the part to replace.
pub(super) struct Rule {
    pub(super) kind: Kind,
    pub(super) specific: bool,
    pub(super) pattern: &'static str,
}
