//! Durability: SIGKILL the real server while puts are in flight, restart it on
//! the same data directory, and every acknowledged put reads back identically.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[path = "common/served.rs"]
mod served;

use served::free_port;

/// How long a start or a restart may take.
const READY_WITHIN: Duration = Duration::from_secs(30);

/// Content `n`: small (inline), medium (compressed inline) or large (blob file).
fn content(n: usize) -> Vec<u8> {
    let lines = match n % 3 {
        0 => 1,
        1 => 400,
        _ => 40_000,
    };
    (0..lines)
        .map(|i| {
            format!(
                "put {n} line {i} {}\n",
                (n * 7919 + i * 104_729) % 1_000_003
            )
        })
        .collect::<String>()
        .into_bytes()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn puts_acknowledged_before_a_sigkill_survive_it() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let client = reqwest::Client::new();
    let mut server = served::serve(dir.path(), port).spawn().unwrap();
    served::wait_ready(&client, &base, READY_WITHIN).await;

    let acknowledged: Arc<Mutex<Vec<(String, usize)>>> = Arc::default();
    let mut workers = Vec::new();
    for worker in 0..16 {
        let (client, base, acknowledged) = (client.clone(), base.clone(), acknowledged.clone());
        workers.push(tokio::spawn(async move {
            for round in 0.. {
                let n = round * 16 + worker;
                let sent = client
                    .post(format!("{base}/v1/memories"))
                    .header("content-type", "text/plain")
                    .body(content(n))
                    .send()
                    .await;
                match sent {
                    Ok(r) if r.status().is_success() => {
                        let Ok(body) = r.json::<serde_json::Value>().await else {
                            break;
                        };
                        let id = body["id"].as_str().unwrap().to_owned();
                        acknowledged.lock().unwrap().push((id, n));
                    }
                    _ => break, // the server is gone
                }
            }
        }));
    }
    // Let puts run, then kill without warning while others are in flight.
    let deadline = Instant::now() + Duration::from_secs(20);
    while acknowledged.lock().unwrap().len() < 60 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    server.kill().unwrap(); // SIGKILL
    server.wait().unwrap();
    for worker in workers {
        worker.await.unwrap();
    }
    let acknowledged = acknowledged.lock().unwrap().clone();
    assert!(
        acknowledged.len() >= 60,
        "only {} puts were acknowledged",
        acknowledged.len()
    );
    assert!(
        acknowledged.iter().any(|(_, n)| n % 3 == 2),
        "no large put was acknowledged"
    );

    // A leftover such as a crash leaves; start-up must remove it.
    std::fs::write(dir.path().join("tmp").join("put-leftover"), b"partial").unwrap();
    let mut server = served::serve(dir.path(), port).spawn().unwrap();
    served::wait_ready(&client, &base, READY_WITHIN).await;
    let leftovers: Vec<_> = std::fs::read_dir(dir.path().join("tmp")).unwrap().collect();
    assert!(
        leftovers.is_empty(),
        "tmp/ not emptied at start-up: {leftovers:?}"
    );
    for (id, n) in &acknowledged {
        let r = client
            .get(format!("{base}/v1/memories/{id}/content"))
            .send()
            .await
            .unwrap();
        assert!(
            r.status().is_success(),
            "acknowledged put {n} ({id}) lost: {}",
            r.status()
        );
        let body = r.bytes().await.unwrap();
        assert!(
            body[..] == content(*n)[..],
            "put {n} ({id}) reads back different bytes"
        );
    }
    server.kill().unwrap();
    server.wait().unwrap();
}
