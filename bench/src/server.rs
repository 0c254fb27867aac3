//! The Cairn server under test: spawned on a free loopback port over a fresh
//! data directory, stopped at the end, and killed if dropped while running.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

/// How long the server may take to answer `/healthz` after its start.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// A running `cairn serve`; killed (SIGKILL) on drop if still running.
pub struct Server {
    child: Child,
    /// `http://127.0.0.1:PORT`.
    pub base_url: String,
    /// Where the server's stdout and stderr go.
    pub log_path: PathBuf,
    /// The version `/healthz` reported.
    pub version: String,
}

impl Server {
    /// Starts `binary serve` with `data_dir` on a free loopback port and waits
    /// until `/healthz` answers.
    pub async fn start(
        binary: &Path,
        data_dir: &Path,
        log_path: &Path,
        client: &reqwest::Client,
    ) -> anyhow::Result<Self> {
        if !binary.is_file() {
            bail!(
                "no server binary at {} (build it with `cargo build --release -p cairn`, or pass --server)",
                binary.display()
            );
        }
        let address = free_port()?;
        let log = File::create(log_path)
            .with_context(|| format!("cannot create {}", log_path.display()))?;
        let log_err = log.try_clone().context("cannot share the server log")?;
        let child = Command::new(binary)
            .arg("serve")
            .arg("--listen")
            .arg(address.to_string())
            .arg("--data-dir")
            .arg(data_dir)
            .env_remove("CAIRN_API_KEYS")
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log_err)
            .spawn()
            .with_context(|| format!("cannot start {}", binary.display()))?;
        let mut server = Self {
            child,
            base_url: format!("http://{address}"),
            log_path: log_path.to_owned(),
            version: String::new(),
        };
        match server.wait_healthy(client).await {
            Ok(version) => server.version = version,
            Err(e) => bail!(
                "{e:#}; the end of its log:\n{}",
                server.log_tail(20).join("\n")
            ),
        }
        Ok(server)
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Fails when the server process has exited.
    pub fn check_alive(&mut self) -> anyhow::Result<()> {
        match self
            .child
            .try_wait()
            .context("cannot poll the server process")?
        {
            Some(status) => bail!("the server exited ({status})"),
            None => Ok(()),
        }
    }

    async fn wait_healthy(&mut self, client: &reqwest::Client) -> anyhow::Result<String> {
        let url = format!("{}/healthz", self.base_url);
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            self.check_alive()?;
            if let Ok(response) = client.get(&url).send().await
                && response.status().is_success()
            {
                let health = crate::api::json_body(response).await?;
                return Ok(health["version"].as_str().unwrap_or("?").to_owned());
            }
            if Instant::now() > deadline {
                bail!("the server did not answer {url} within {START_TIMEOUT:?}");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Asks the server to stop (SIGTERM) and waits up to `grace`; kills it
    /// after that. Returns how it ended, for the report.
    pub async fn stop(mut self, grace: Duration) -> anyhow::Result<String> {
        let pid = self.pid().to_string();
        let sent = Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .context("cannot run kill")?;
        if !sent.success() {
            bail!("kill -TERM {pid} failed");
        }
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            if let Some(status) = self.child.try_wait().context("cannot poll the server")? {
                return Ok(format!("stopped on SIGTERM ({status})"));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        self.child.kill().context("cannot kill the server")?;
        Ok(format!("did not stop within {grace:?} of SIGTERM; killed"))
    }

    /// Lines of the server log that look like warnings or errors (at most `max`).
    pub fn log_problems(&self, max: usize) -> Vec<String> {
        let Ok(file) = File::open(&self.log_path) else {
            return Vec::new();
        };
        BufReader::new(file)
            .lines()
            .map_while(Result::ok)
            .filter(|line| {
                ["WARN", "ERROR", "panic"]
                    .iter()
                    .any(|word| line.contains(word))
            })
            .take(max)
            .collect()
    }

    /// The last `count` lines of the server log.
    pub fn log_tail(&self, count: usize) -> Vec<String> {
        let Ok(file) = File::open(&self.log_path) else {
            return Vec::new();
        };
        let lines: Vec<String> = BufReader::new(file).lines().map_while(Result::ok).collect();
        lines[lines.len().saturating_sub(count)..].to_vec()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            // Best effort: the process may have exited meanwhile.
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}

/// A loopback address with a port nobody listens on right now.
fn free_port() -> anyhow::Result<SocketAddr> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).context("no free port")?;
    listener.local_addr().context("no local address")
}
