//! A client generated from the committed OpenAPI document by
//! `openapi-python-client` puts, reads a slice and searches against a live
//! server: a schema that does not match the server is a broken client.
//! Without python3 and the generator the test says it was skipped, except
//! under CI (`CI` set), where it fails.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

use serde_json::Value;

#[path = "common/in_process.rs"]
mod in_process;

const KEY: &str = "client-key-0001";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_generated_python_client_puts_fetches_a_slice_and_searches() {
    let generator = Command::new("openapi-python-client")
        .arg("--version")
        .output();
    if !generator.is_ok_and(|o| o.status.success()) {
        assert!(
            std::env::var_os("CI").is_none(),
            "openapi-python-client is missing, and CI must run this test (pip install openapi-python-client==0.29.1)"
        );
        eprintln!("skipped: openapi-python-client is not installed");
        return;
    }
    let out = tempfile::tempdir().unwrap();
    let package = out.path().join("cairn_client");
    let generated = Command::new("python3")
        .args([
            "-m",
            "openapi_python_client",
            "generate",
            "--meta",
            "none",
            "--path",
        ])
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/openapi/openapi.json"))
        .arg("--output-path")
        .arg(&package)
        .output()
        .unwrap();
    assert!(
        generated.status.success(),
        "generation failed:\n{}",
        String::from_utf8_lossy(&generated.stdout)
    );

    let server =
        in_process::listen(|config| config.api_keys = Some(format!("{KEY}:clients"))).await;
    let url = server.base.clone();

    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/openapi_client/client_check.py"
    );
    let run = tokio::process::Command::new("python3")
        .args([script, &url, KEY])
        .env("PYTHONPATH", out.path())
        .output()
        .await
        .unwrap();
    assert!(
        run.status.success(),
        "client_check.py failed:\n{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let seen: Value = serde_json::from_str(String::from_utf8_lossy(&run.stdout).trim()).unwrap();
    assert_eq!(seen["lines"], serde_json::json!([10, 12]));
    assert!(!seen["hits"].as_array().unwrap().is_empty());
    drop(server);
}
