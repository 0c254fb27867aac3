//! Shutdown of the real binary with a stream under way: SIGTERM stops new
//! connections, lets the stream finish within the grace period
//! (`CAIRN_SHUTDOWN_GRACE_SECS`), and cuts it when the grace runs out, so
//! that Cairn always exits.

use std::process::{Child, Command};
use std::time::{Duration, Instant};

use serde_json::json;

use super::{served, upstream};

/// The `cairn` binary serving the proxy in front of `upstream_url`.
struct Binary {
    child: Child,
    base: String,
    _dir: tempfile::TempDir,
}

impl Drop for Binary {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn start(upstream_url: &str, grace_secs: u64) -> Binary {
    let dir = tempfile::tempdir().unwrap();
    let port = served::free_port();
    let child = served::serve(dir.path(), port)
        .args(["--upstream-openai-url", &format!("{upstream_url}/v1")])
        .args(["--shutdown-grace-secs", &grace_secs.to_string()])
        .spawn()
        .unwrap();
    let base = format!("http://127.0.0.1:{port}");
    served::wait_ready(&reqwest::Client::new(), &base, Duration::from_secs(30)).await;
    Binary {
        child,
        base,
        _dir: dir,
    }
}

/// Opens a stream the stand-in spreads over ~12 s and reads its first bytes.
async fn open_slow_stream(base: &str) -> reqwest::Response {
    let mut answer = reqwest::Client::new()
        .post(format!("{base}/v1/chat/completions"))
        .header("authorization", "Bearer sk-test")
        .header("x-test-scenario", "slow")
        .json(&json!({"model": "gpt-4o", "stream": true,
            "messages": [{"role": "user", "content": "hi"}]}))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);
    assert!(answer.chunk().await.unwrap().is_some());
    answer
}

fn sigterm(child: &Child) {
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

/// The rest of a stream as text, and whether it ended in an error.
async fn read_rest(mut answer: reqwest::Response) -> (String, bool) {
    let mut text = String::new();
    loop {
        match answer.chunk().await {
            Ok(Some(chunk)) => text.push_str(&String::from_utf8_lossy(&chunk)),
            Ok(None) => return (text, false),
            Err(_) => return (text, true),
        }
    }
}

/// Waits for the process to exit; answers its exit status and when it ended.
async fn exited(child: &mut Child, within: Duration) -> (std::process::ExitStatus, Instant) {
    let deadline = Instant::now() + within;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return (status, Instant::now());
        }
        assert!(Instant::now() < deadline, "cairn did not exit");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_stream_under_way_finishes_after_sigterm_and_then_cairn_exits() {
    let up = upstream();
    let mut cairn = start(&up.url, 30).await;
    let answer = open_slow_stream(&cairn.base).await;
    sigterm(&cairn.child);
    // No new connection is taken once the signal is in.
    let deadline = Instant::now() + Duration::from_secs(5);
    while reqwest::get(format!("{}/healthz", cairn.base))
        .await
        .is_ok()
    {
        assert!(
            Instant::now() < deadline,
            "still accepting connections after SIGTERM"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (rest, failed) = read_rest(answer).await;
    assert!(!failed, "the stream was cut: {rest}");
    assert!(rest.contains("data: [DONE]"), "{rest}");
    let (status, _) = exited(&mut cairn.child, Duration::from_secs(10)).await;
    assert!(status.success(), "{status}");
}

#[tokio::test]
async fn a_stream_longer_than_the_grace_period_is_cut_and_cairn_exits() {
    let up = upstream();
    let mut cairn = start(&up.url, 1).await;
    let answer = open_slow_stream(&cairn.base).await;
    let signalled = Instant::now();
    sigterm(&cairn.child);
    let reader = tokio::spawn(read_rest(answer));
    // The stream would run ~11 s more: Cairn exits after the 1 s grace.
    let (status, at) = exited(&mut cairn.child, Duration::from_secs(8)).await;
    assert!(status.success(), "{status}");
    let took = at - signalled;
    assert!(
        took >= Duration::from_millis(900) && took < Duration::from_secs(6),
        "exited {took:?} after SIGTERM with a 1 s grace"
    );
    let (rest, _) = reader.await.unwrap();
    assert!(!rest.contains("[DONE]"), "the stream was not cut: {rest}");
}
