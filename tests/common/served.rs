//! The real `cairn serve` binary in a test: a free loopback port, the
//! command that serves a data directory on it, and the wait until it is
//! ready. Each test adds its own settings to the command.

#![allow(dead_code)]

use std::collections::BTreeSet;
use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// A loopback port that was free when asked and that this process has not
/// handed out before: the tests of one binary run at once, and a port one
/// test was given but has not bound yet is free to the kernel, which may
/// give it to the next test that asks.
pub fn free_port() -> u16 {
    static GIVEN: Mutex<BTreeSet<u16>> = Mutex::new(BTreeSet::new());
    let mut given = GIVEN.lock().unwrap();
    loop {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        if given.insert(port) {
            return port;
        }
    }
}

/// `cairn serve` on `port` over `data`: warnings on stderr, stdout dropped.
pub fn serve(data: &Path, port: u16) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_cairn"));
    command
        .args(["serve", "--listen", &format!("127.0.0.1:{port}")])
        .arg("--data-dir")
        .arg(data)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::inherit());
    command
}

/// Waits until `{base}/readyz` answers 200; panics after `within`.
pub async fn wait_ready(client: &reqwest::Client, base: &str, within: Duration) {
    let deadline = Instant::now() + within;
    loop {
        if let Ok(r) = client.get(format!("{base}/readyz")).send().await
            && r.status().is_success()
        {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "cairn at {base} was not ready within {within:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A `cairn serve` child over a fresh data directory; killed when dropped.
pub struct Served {
    /// `http://127.0.0.1:<port>`.
    pub url: String,
    child: Child,
    _dir: tempfile::TempDir,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `cairn serve` with default settings and waits (at most 30 s)
/// until it answers `/readyz` with 200.
pub fn start() -> Served {
    start_with(&[])
}

/// Starts `cairn serve` with the settings `env` (e.g. a test's backends)
/// and waits (at most 30 s) until it answers `/readyz` with 200.
///
/// A bare TCP connect is no proof that this child listens: a port free
/// when asked can be taken by something else before the child binds it
/// (the child then exits), and a connect retried to a loopback port can
/// connect to itself while nothing listens (TCP simultaneous open). So
/// readiness is an HTTP 200 from `/readyz` while the child still runs, and
/// a child that exited (its port taken) is started again on another port.
pub fn start_with(env: &[(&str, String)]) -> Served {
    let dir = tempfile::tempdir().unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    for _attempt in 0..3 {
        let port = free_port();
        let mut command = serve(dir.path(), port);
        command.envs(env.iter().map(|(k, v)| (k, v)));
        let mut child = command.spawn().unwrap();
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                eprintln!("cairn on port {port} exited ({status}) before it was ready");
                break;
            }
            if answers_ready(port) {
                return Served {
                    url: format!("http://127.0.0.1:{port}"),
                    child,
                    _dir: dir,
                };
            }
            if Instant::now() >= deadline {
                let _ = child.kill();
                let _ = child.wait();
                panic!("cairn on port {port} was not ready within 30 s");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    panic!("cairn exited before it was ready, three times");
}

/// Whether `127.0.0.1:port` answers `GET /readyz` with 200, over a
/// connection that is not connected to itself.
pub fn answers_ready(port: u16) -> bool {
    use std::io::{Read, Write};
    let Ok(mut stream) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    if stream.local_addr().ok() == stream.peer_addr().ok() {
        return false;
    }
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let request = "GET /readyz HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n\r\n";
    if stream.write_all(request.as_bytes()).is_err() {
        return false;
    }
    let mut head = [0_u8; 12];
    stream.read_exact(&mut head).is_ok() && head.starts_with(b"HTTP/1.1 200")
}
