//! Optional backends for tests: PostgreSQL metadata, S3 objects, Redis cache.
//!
//! Each service's URL comes from a variable `.ci/run` sets:
//! `CAIRN_TEST_DATABASE_URL` (`postgres://postgres@127.0.0.1:5432/test`),
//! `CAIRN_TEST_S3_ENDPOINT` (`http://127.0.0.1:5000`, moto's server) and
//! `CAIRN_TEST_REDIS_URL` (`redis://127.0.0.1:6379`). A service that is not
//! configured or does not answer fails the test under CI (`CI` set); elsewhere
//! the test says it was skipped and why, once per process.
//!
//! Every provisioned set is private to one test: a fresh PostgreSQL schema
//! (through libpq's `options=-c search_path=…` in the URL; dropped again when
//! the set is dropped), a fresh bucket, a unique Redis key prefix.

#![allow(dead_code)]

use std::net::{TcpStream, ToSocketAddrs};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use cairn::config::Config;

/// Key prefix of the objects in a test bucket.
pub const S3_PREFIX: &str = "cairn";

/// Which optional backends `CAIRN_TEST_BACKEND` asks for: a `+`-separated
/// set of `postgres`, `s3`, `redis`; unset or `sqlite`: none (SQLite + files).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Selection {
    pub postgres: bool,
    pub s3: bool,
    pub redis: bool,
}

impl Selection {
    /// The selection of `CAIRN_TEST_BACKEND` (panics on an unknown name).
    pub fn from_env() -> Selection {
        static SELECTION: OnceLock<Selection> = OnceLock::new();
        *SELECTION.get_or_init(|| {
            let value = std::env::var("CAIRN_TEST_BACKEND").unwrap_or_default();
            Selection::parse(&value).unwrap_or_else(|e| panic!("CAIRN_TEST_BACKEND: {e}"))
        })
    }

    pub fn parse(value: &str) -> Result<Selection, String> {
        let mut selection = Selection::default();
        for part in value.split('+').map(str::trim).filter(|p| !p.is_empty()) {
            match part {
                "sqlite" | "files" => {}
                "postgres" => selection.postgres = true,
                "s3" => selection.s3 = true,
                "redis" => selection.redis = true,
                other => {
                    return Err(format!(
                        "unknown backend `{other}` (a `+`-separated set of postgres, s3, redis; or sqlite)"
                    ));
                }
            }
        }
        Ok(selection)
    }

    /// All three, for tests that need every shared service.
    pub fn all() -> Selection {
        Selection {
            postgres: true,
            s3: true,
            redis: true,
        }
    }
}

/// A service that is not there: fails under CI, otherwise says it is skipped.
fn unavailable(why: &str, what_instead: &str) {
    assert!(
        std::env::var_os("CI").is_none(),
        "{why}, and CI must run this test (.ci/run provides the service)"
    );
    eprintln!("skipped: {why}; {what_instead}");
}

/// A name no other test (in this or another process) uses.
fn unique(prefix: &str, separator: char) -> String {
    static SEQ: AtomicU32 = AtomicU32::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!(
        "{prefix}{separator}{:x}{separator}{}{separator}{}",
        nanos,
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    )
}

/// Whether something accepts TCP connections at `url`'s host and port.
fn tcp_answers(url: &str, default_port: u16) -> Result<(), String> {
    let parsed = reqwest::Url::parse(url).map_err(|e| format!("{url} is no URL: {e}"))?;
    let host = parsed.host_str().ok_or(format!("{url} names no host"))?;
    let port = parsed.port().unwrap_or(default_port);
    let addrs = (host, port)
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve {host}:{port}: {e}"))?;
    let mut last = format!("{host}:{port} has no address");
    for addr in addrs {
        match TcpStream::connect_timeout(&addr, Duration::from_secs(3)) {
            Ok(_) => return Ok(()),
            Err(e) => last = format!("nothing answers at {addr}: {e}"),
        }
    }
    Err(last)
}

/// Runs `sql` with `psql` on `url`.
fn psql(url: &str, sql: &str) -> Result<(), String> {
    let output = Command::new("psql")
        .args(["-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", url, "-c", sql])
        .env("PGCONNECT_TIMEOUT", "5")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run psql (the PostgreSQL client): {e}"))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(format!(
            "psql on {url} failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        ))
    }
}

/// The PostgreSQL server URL, if configured and answering (checked once).
pub fn postgres_url() -> Option<String> {
    static URL: OnceLock<Result<String, String>> = OnceLock::new();
    let found = URL.get_or_init(|| {
        let url = std::env::var("CAIRN_TEST_DATABASE_URL").map_err(|_| {
            "CAIRN_TEST_DATABASE_URL is not set (e.g. postgres://postgres@127.0.0.1:5432/test)"
                .to_owned()
        })?;
        psql(&url, "SELECT 1")?;
        Ok(url)
    });
    match found {
        Ok(url) => Some(url.clone()),
        Err(why) => {
            report_once(0, why);
            None
        }
    }
}

/// The S3 endpoint, if configured and answering (checked once).
pub fn s3_endpoint() -> Option<String> {
    static ENDPOINT: OnceLock<Result<String, String>> = OnceLock::new();
    let found = ENDPOINT.get_or_init(|| {
        let endpoint = std::env::var("CAIRN_TEST_S3_ENDPOINT").map_err(|_| {
            "CAIRN_TEST_S3_ENDPOINT is not set (e.g. `python3 -m moto.server -p 5000` and http://127.0.0.1:5000)"
                .to_owned()
        })?;
        tcp_answers(&endpoint, 80).map_err(|e| format!("the S3 endpoint {endpoint}: {e}"))?;
        Ok(endpoint.trim_end_matches('/').to_owned())
    });
    match found {
        Ok(endpoint) => Some(endpoint.clone()),
        Err(why) => {
            report_once(1, why);
            None
        }
    }
}

/// The Redis URL, if configured and answering (checked once).
pub fn redis_url() -> Option<String> {
    static URL: OnceLock<Result<String, String>> = OnceLock::new();
    let found = URL.get_or_init(|| {
        let url = std::env::var("CAIRN_TEST_REDIS_URL").map_err(|_| {
            "CAIRN_TEST_REDIS_URL is not set (e.g. redis://127.0.0.1:6379)".to_owned()
        })?;
        tcp_answers(&url, 6379).map_err(|e| format!("Redis at {url}: {e}"))?;
        Ok(url)
    });
    match found {
        Ok(url) => Some(url.clone()),
        Err(why) => {
            report_once(2, why);
            None
        }
    }
}

/// Fails under CI; otherwise prints the skip message of service `slot` once.
fn report_once(slot: usize, why: &str) {
    static REPORTED: [OnceLock<()>; 3] = [OnceLock::new(), OnceLock::new(), OnceLock::new()];
    let instead = "the API suite runs without it (metadata in SQLite, objects in files, no Redis); tests that need it skip";
    if std::env::var_os("CI").is_some() {
        unavailable(why, instead);
    }
    REPORTED[slot].get_or_init(|| unavailable(why, instead));
}

/// A PostgreSQL schema private to one test, dropped with it.
pub struct PgSchema {
    /// The server URL, without the schema.
    pub server_url: String,
    pub schema: String,
}

impl PgSchema {
    pub fn create(server_url: &str) -> PgSchema {
        let schema = unique("cairn_test", '_');
        psql(server_url, &format!("CREATE SCHEMA \"{schema}\""))
            .unwrap_or_else(|e| panic!("cannot create schema {schema}: {e}"));
        PgSchema {
            server_url: server_url.to_owned(),
            schema,
        }
    }

    /// The metadata URL: the server's, searching only this schema.
    pub fn url(&self) -> String {
        let separator = if self.server_url.contains('?') {
            '&'
        } else {
            '?'
        };
        format!(
            "{}{separator}options=-c%20search_path%3D{}",
            self.server_url, self.schema
        )
    }
}

impl Drop for PgSchema {
    fn drop(&mut self) {
        // Best effort: a schema left behind only takes space. Not waited for:
        // the app's pool may still hold a transaction in the schema (the
        // indexer's), which ends only once this drop returns and the app goes,
        // and a single-threaded test runtime blocked here would never get there.
        let (url, sql) = (
            self.server_url.clone(),
            format!("DROP SCHEMA IF EXISTS \"{}\" CASCADE", self.schema),
        );
        std::thread::spawn(move || psql(&url, &sql));
    }
}

/// A bucket private to one test.
pub struct S3Bucket {
    pub endpoint: String,
    pub bucket: String,
}

impl S3Bucket {
    pub async fn create(endpoint: &str) -> S3Bucket {
        let bucket = unique("cairn", '-');
        let answer = reqwest::Client::new()
            .put(format!("{endpoint}/{bucket}"))
            .send()
            .await
            .unwrap_or_else(|e| panic!("cannot create bucket {bucket} on {endpoint}: {e}"));
        assert!(
            answer.status().is_success(),
            "cannot create bucket {bucket} on {endpoint}: {answer:?}"
        );
        S3Bucket {
            endpoint: endpoint.to_owned(),
            bucket,
        }
    }

    /// The blob URL, endpoint and (moto's) credentials in the query.
    pub fn blob_url(&self) -> String {
        format!(
            "s3://{}/{S3_PREFIX}/?endpoint={}&allow_http=true&region=us-east-1&access_key_id=testing&secret_access_key=testing",
            self.bucket, self.endpoint
        )
    }

    /// A client of the bucket, to look at what Cairn stored.
    pub fn client(&self) -> object_store::aws::AmazonS3 {
        object_store::aws::AmazonS3Builder::new()
            .with_endpoint(&self.endpoint)
            .with_allow_http(true)
            .with_region("us-east-1")
            .with_bucket_name(&self.bucket)
            .with_access_key_id("testing")
            .with_secret_access_key("testing")
            .build()
            .unwrap()
    }

    /// The key of the object of `id`.
    pub fn object_key(id: &str) -> object_store::path::Path {
        object_store::path::Path::from(format!("{S3_PREFIX}/blobs/{}/{id}.zst", &id[..2]))
    }

    /// Keys of all stored objects (`blobs/`), sorted.
    pub async fn object_keys(&self) -> Vec<String> {
        use futures::TryStreamExt;
        use object_store::ObjectStore;
        let prefix = object_store::path::Path::from(format!("{S3_PREFIX}/blobs"));
        let mut keys: Vec<String> = self
            .client()
            .list(Some(&prefix))
            .map_ok(|meta| meta.location.to_string())
            .try_collect()
            .await
            .unwrap();
        keys.sort();
        keys
    }

    /// The size of the object of `id`, if there is one.
    pub async fn object_size(&self, id: &str) -> Option<u64> {
        use object_store::ObjectStore;
        match self.client().head(&Self::object_key(id)).await {
            Ok(meta) => Some(meta.size),
            Err(object_store::Error::NotFound { .. }) => None,
            Err(e) => panic!("cannot look at object {id}: {e}"),
        }
    }
}

/// A Redis key prefix private to one test.
pub struct RedisPrefix {
    pub url: String,
    pub prefix: String,
}

/// The services one test uses, each private to it.
#[derive(Default)]
pub struct Backends {
    pub postgres: Option<PgSchema>,
    pub s3: Option<S3Bucket>,
    pub redis: Option<RedisPrefix>,
}

impl Backends {
    /// Provisions what `selection` asks for; a service that is not there
    /// fails under CI and is left out (with a message) elsewhere.
    pub async fn provision(selection: Selection) -> Backends {
        let mut backends = Backends::default();
        if selection.postgres
            && let Some(url) = postgres_url()
        {
            backends.postgres = Some(PgSchema::create(&url));
        }
        if selection.s3
            && let Some(endpoint) = s3_endpoint()
        {
            backends.s3 = Some(S3Bucket::create(&endpoint).await);
        }
        if selection.redis
            && let Some(url) = redis_url()
        {
            backends.redis = Some(RedisPrefix {
                url,
                prefix: unique("cairn-test", '-'),
            });
        }
        backends
    }

    /// Points `config` at these services.
    pub fn apply(&self, config: &mut Config) {
        if let Some(pg) = &self.postgres {
            config.database_url = Some(pg.url());
        }
        if let Some(s3) = &self.s3 {
            config.blob_url = Some(s3.blob_url());
        }
        if let Some(redis) = &self.redis {
            config.redis_url = Some(redis.url.clone());
            config.redis_prefix = redis.prefix.clone();
        }
    }

    /// The settings that point a `cairn serve` process at these services.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        let mut env = Vec::new();
        if let Some(pg) = &self.postgres {
            env.push(("CAIRN_DATABASE_URL", pg.url()));
        }
        if let Some(s3) = &self.s3 {
            env.push(("CAIRN_BLOB_URL", s3.blob_url()));
        }
        if let Some(redis) = &self.redis {
            env.push(("CAIRN_REDIS_URL", redis.url.clone()));
            env.push(("CAIRN_REDIS_PREFIX", redis.prefix.clone()));
        }
        env
    }

    /// A short description, e.g. `postgres+s3+redis` or `sqlite+files`.
    pub fn describe(&self) -> String {
        let mut parts = vec![if self.postgres.is_some() {
            "postgres"
        } else {
            "sqlite"
        }];
        parts.push(if self.s3.is_some() { "s3" } else { "files" });
        if self.redis.is_some() {
            parts.push("redis");
        }
        parts.join("+")
    }
}
