//! The real `cairn serve` binary in a test: a free loopback port, the
//! command that serves a data directory on it, and the wait until it is
//! ready. Each test adds its own settings to the command.

#![allow(dead_code)]

use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A loopback port that was free when asked.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
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
/// until it accepts connections.
pub fn start() -> Served {
    start_with(&[])
}

/// Starts `cairn serve` with the settings `env` (e.g. a test's backends)
/// and waits (at most 30 s) until it accepts connections.
pub fn start_with(env: &[(&str, String)]) -> Served {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let mut command = serve(dir.path(), port);
    command.envs(env.iter().map(|(k, v)| (k, v)));
    let child = command.spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "cairn did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    Served {
        url: format!("http://127.0.0.1:{port}"),
        child,
        _dir: dir,
    }
}
