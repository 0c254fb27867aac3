//! Test harness: the real router in-process over a temp data directory.

use axum::Router;
use axum::body::Body;
use axum::http::{Method, Request, StatusCode, header};
use bytes::Bytes;
use cairn::app::App;
use cairn::config::Config;
use http_body_util::BodyExt;
use serde_json::Value;
use tower::ServiceExt;

#[path = "../common/backends.rs"]
pub mod backends;

use backends::{Backends, Selection};

/// Whether the apps of this run keep objects on S3 (`CAIRN_TEST_BACKEND`
/// names `s3` and the endpoint answers).
pub fn s3_selected() -> bool {
    Selection::from_env().s3 && backends::s3_endpoint().is_some()
}

/// A running application with its data directory and the optional backends
/// (`CAIRN_TEST_BACKEND`, see `tests/common/backends.rs`) it uses.
pub struct TestApp {
    pub router: Router,
    pub app: Option<App>,
    pub dir: tempfile::TempDir,
    /// Dropped after the app: its PostgreSQL schema goes last.
    pub backends: Backends,
}

/// An answer, fully read.
#[derive(Debug)]
pub struct Resp {
    pub status: StatusCode,
    pub headers: axum::http::HeaderMap,
    pub body: Bytes,
}

impl Resp {
    /// The body as JSON (panics with the body text when it is not).
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }

    /// `error.code` of an error answer.
    pub fn error_code(&self) -> String {
        self.json()["error"]["code"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

/// An app with default settings.
pub async fn spawn_app() -> TestApp {
    spawn_app_with(|_| {}).await
}

/// An app whose settings `tune` adjusts (e.g. tiny frames to exercise many
/// frames), on the backends `CAIRN_TEST_BACKEND` selects: `tune` runs after
/// they are set, so a test may still choose its own (e.g. its own Redis).
pub async fn spawn_app_with(tune: impl FnOnce(&mut Config)) -> TestApp {
    let backends = Backends::provision(Selection::from_env()).await;
    let dir = tempfile::tempdir().unwrap();
    let mut config = Config::with_data_dir(dir.path());
    backends.apply(&mut config);
    // jq runs in a worker process: this test binary is not `cairn`.
    config.jq_worker = Some(env!("CARGO_BIN_EXE_cairn").into());
    tune(&mut config);
    let app = App::build(&config).await.unwrap();
    TestApp {
        router: app.router(),
        app: Some(app),
        dir,
        backends,
    }
}

impl TestApp {
    /// Sends a request through the router.
    pub async fn send(&self, request: Request<Body>) -> Resp {
        let response = self.router.clone().oneshot(request).await.unwrap();
        let status = response.status();
        let headers = response.headers().clone();
        let body = response.into_body().collect().await.unwrap().to_bytes();
        Resp {
            status,
            headers,
            body,
        }
    }

    pub async fn get(&self, uri: &str) -> Resp {
        self.send(Request::get(uri).body(Body::empty()).unwrap())
            .await
    }

    /// GET with extra headers.
    pub async fn get_with(&self, uri: &str, headers: &[(&str, &str)]) -> Resp {
        let mut request = Request::get(uri);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        self.send(request.body(Body::empty()).unwrap()).await
    }

    pub async fn delete(&self, uri: &str) -> Resp {
        self.send(
            Request::builder()
                .method(Method::DELETE)
                .uri(uri)
                .body(Body::empty())
                .unwrap(),
        )
        .await
    }

    /// POST /v1/memories with a JSON body.
    pub async fn put_json(&self, body: Value) -> Resp {
        self.send(
            Request::post("/v1/memories")
                .header(header::CONTENT_TYPE, "application/json")
                .body(Body::from(body.to_string()))
                .unwrap(),
        )
        .await
    }

    /// POST /v1/memories with a raw body; `query` is appended after `?` if not empty.
    pub async fn put_raw(&self, query: &str, content: impl Into<Bytes>) -> Resp {
        let uri = if query.is_empty() {
            "/v1/memories".to_owned()
        } else {
            format!("/v1/memories?{query}")
        };
        self.send(
            Request::post(uri)
                .header(header::CONTENT_TYPE, "application/octet-stream")
                .body(Body::from(content.into()))
                .unwrap(),
        )
        .await
    }

    /// Puts raw content and returns its id (asserting 201 or 200).
    pub async fn put_id(&self, content: impl Into<Bytes>) -> String {
        let resp = self.put_raw("", content).await;
        assert!(resp.status.is_success(), "put failed: {resp:?}");
        resp.json()["id"].as_str().unwrap().to_owned()
    }

    /// Closes the stores (flushes batched statistics).
    pub async fn shutdown(mut self) {
        if let Some(app) = self.app.take() {
            app.shutdown().await;
        }
    }
}

/// Settings that make objects multi-frame blobs even for small test content.
pub fn tiny_frames(config: &mut Config) {
    config.frame_bytes = 64;
    config.inline_max_bytes = 16;
    config.inline_object_max_bytes = 0;
}

// ---------------------------------------------------------------------------
// Additions for the API test modules (the functions above keep their behaviour).
// ---------------------------------------------------------------------------

/// The id Cairn gives `content`: its SHA-256 in lowercase hex.
pub fn sha256_hex(content: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    hex::encode(Sha256::digest(content))
}

/// Percent-encodes `text` for use as one query-parameter value.
pub fn enc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || b"-_.~".contains(&byte) {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// Deterministic, poorly compressible text: lines of pseudo-random hex of
/// varying length (some empty), `len` bytes in all, ending with a newline.
pub fn noise_lines(seed: u64, len: usize) -> Vec<u8> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut out = Vec::with_capacity(len);
    while out.len() < len {
        let line_len = (next() % 160) as usize;
        for _ in 0..line_len {
            out.push(b"0123456789abcdef"[(next() % 16) as usize]);
        }
        out.push(b'\n');
    }
    out.truncate(len);
    if let Some(last) = out.last_mut() {
        *last = b'\n';
    }
    out
}

/// The lines of `content` as Cairn counts them: each ends after its `\n`; a
/// last line without `\n` still counts.
pub fn split_lines(content: &[u8]) -> Vec<&[u8]> {
    content.split_inclusive(|b| *b == b'\n').collect()
}

impl Resp {
    /// Asserts an error answer: this status, a JSON body
    /// `{"error": {"code": <code>, "message": <non-empty>}}`; returns `error`.
    #[track_caller]
    pub fn assert_error(&self, status: StatusCode, code: &str) -> Value {
        assert_eq!(
            self.status,
            status,
            "expected {status} {code}, got {}: {}",
            self.status,
            String::from_utf8_lossy(&self.body)
        );
        let content_type = self.header("content-type").unwrap_or_default();
        assert!(
            content_type.starts_with("application/json"),
            "error answers are JSON, got content type `{content_type}`"
        );
        let body = self.json();
        let error = body["error"].clone();
        assert_eq!(error["code"], code, "unexpected error body: {body}");
        assert!(
            error["message"].as_str().is_some_and(|m| !m.is_empty()),
            "error without a message: {body}"
        );
        error
    }

    /// The body as text (panics when it is not UTF-8).
    pub fn text(&self) -> &str {
        std::str::from_utf8(&self.body).expect("body is not UTF-8")
    }
}

impl TestApp {
    /// The memory `id` once its count has settled (`tokens_settling` is
    /// false; polled for 5 s at most).
    pub async fn settled(&self, id: &str) -> Value {
        for _ in 0..100 {
            let got = self.get(&format!("/v1/memories/{id}")).await.json();
            if got["tokens_settling"] == false {
                return got;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        panic!("the count of {id} did not settle within 5 s");
    }

    /// Runs one SQL statement on the metadata database itself (the SQLite
    /// file or PostgreSQL), as an operator's tool would: for the states a
    /// crash leaves, which the API cannot make.
    pub async fn execute_on_metadata(&self, statement: &str) {
        let mut config = Config::with_data_dir(self.dir.path());
        self.backends.apply(&mut config);
        let url = config.database_url();
        if url.starts_with("sqlite:") {
            let pool = sqlx::SqlitePool::connect(&url).await.unwrap();
            sqlx::query(statement).execute(&pool).await.unwrap();
            pool.close().await;
        } else {
            let pool = sqlx::PgPool::connect(&url).await.unwrap();
            sqlx::query(statement).execute(&pool).await.unwrap();
            pool.close().await;
        }
    }

    /// Whether objects are files under the data directory (not on S3):
    /// tests that read or damage those files directly need them.
    pub fn objects_on_local_files(&self) -> bool {
        self.backends.s3.is_none()
    }

    /// Whether metadata is in the SQLite file under the data directory (not
    /// in PostgreSQL).
    pub fn metadata_in_local_file(&self) -> bool {
        self.backends.postgres.is_none()
    }

    /// True (after saying why) when `test` must stop because it works on
    /// object files and objects are on S3.
    pub fn skip_without_object_files(&self, test: &str) -> bool {
        if self.objects_on_local_files() {
            return false;
        }
        eprintln!("skipped (objects on S3): {test} works on object files");
        true
    }

    /// Whether the object of `id` is stored, wherever objects are.
    pub async fn object_exists(&self, id: &str) -> bool {
        self.object_size(id).await.is_some()
    }

    /// The stored size of the object of `id`, if there is one, wherever objects are.
    pub async fn object_size(&self, id: &str) -> Option<u64> {
        match &self.backends.s3 {
            Some(s3) => s3.object_size(id).await,
            None => std::fs::metadata(self.blob_path(id))
                .ok()
                .filter(|m| m.is_file())
                .map(|m| m.len()),
        }
    }

    /// Where the file blob store keeps the object of `id`.
    pub fn blob_path(&self, id: &str) -> std::path::PathBuf {
        self.dir
            .path()
            .join("blobs")
            .join(&id[..2])
            .join(format!("{id}.zst"))
    }

    /// POST `uri` with a body and, if given, a Content-Type and extra headers.
    pub async fn post(
        &self,
        uri: &str,
        content_type: Option<&str>,
        headers: &[(&str, &str)],
        body: impl Into<Bytes>,
    ) -> Resp {
        let mut request = Request::post(uri);
        if let Some(content_type) = content_type {
            request = request.header(header::CONTENT_TYPE, content_type);
        }
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        self.send(request.body(Body::from(body.into())).unwrap())
            .await
    }

    /// POST /v1/memories with a JSON body sent as the caller with API key `key`.
    pub async fn put_json_as(&self, key: &str, body: Value) -> Resp {
        let bearer = format!("Bearer {key}");
        self.post(
            "/v1/memories",
            Some("application/json"),
            &[("authorization", &bearer)],
            body.to_string(),
        )
        .await
    }

    /// GET as the caller with API key `key`.
    pub async fn get_as(&self, uri: &str, key: &str) -> Resp {
        let bearer = format!("Bearer {key}");
        self.get_with(uri, &[("authorization", &bearer)]).await
    }

    /// DELETE as the caller with API key `key`.
    pub async fn delete_as(&self, uri: &str, key: &str) -> Resp {
        self.send(
            Request::builder()
                .method(Method::DELETE)
                .uri(uri)
                .header(header::AUTHORIZATION, format!("Bearer {key}"))
                .body(Body::empty())
                .unwrap(),
        )
        .await
    }

    /// Puts `content` as a JSON body with extra fields; asserts 201 and returns the answer.
    pub async fn put_text(&self, content: &str, fields: Value) -> Value {
        let mut body = serde_json::json!({ "content": content });
        if let (Some(body), Some(fields)) = (body.as_object_mut(), fields.as_object()) {
            body.extend(fields.clone());
        }
        let resp = self.put_json(body).await;
        assert_eq!(
            resp.status,
            StatusCode::CREATED,
            "put failed: {}",
            String::from_utf8_lossy(&resp.body)
        );
        resp.json()
    }
}

/// Generates, for each named `async fn(&TestApp)` of the calling module, one
/// test with default settings (`default_layout::<name>`) and one where every
/// object is a multi-frame blob (`multi_frame_layout::<name>`).
macro_rules! in_both_layouts {
    ($($name:ident),+ $(,)?) => {
        mod default_layout {
            $(
                #[tokio::test]
                async fn $name() {
                    let app = crate::helpers::spawn_app().await;
                    super::$name(&app).await;
                }
            )+
        }
        mod multi_frame_layout {
            $(
                #[tokio::test]
                async fn $name() {
                    let app = crate::helpers::spawn_app_with(crate::helpers::tiny_frames).await;
                    super::$name(&app).await;
                }
            )+
        }
    };
}
pub(crate) use in_both_layouts;

impl TestApp {
    /// Shuts the application down (flushing batched statistics) and builds a
    /// new one over the same data directory, with settings `tune` adjusts.
    pub async fn restart_with(mut self, tune: impl FnOnce(&mut Config)) -> TestApp {
        if let Some(app) = self.app.take() {
            app.shutdown().await;
        }
        let mut config = Config::with_data_dir(self.dir.path());
        self.backends.apply(&mut config);
        tune(&mut config);
        let app = App::build(&config).await.unwrap();
        TestApp {
            router: app.router(),
            app: Some(app),
            dir: self.dir,
            backends: self.backends,
        }
    }
}
