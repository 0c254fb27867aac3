//! How a memory is named in a path: full id, unique prefix, any case; and what is not an id.
//!
//! Ambiguous prefixes (409 `ambiguous_id`) cannot be produced through the API:
//! two SHA-256 ids sharing a 12-hex-character prefix would take about 2^24
//! puts to find by chance. That path is covered by a unit test of the domain.

use axum::http::StatusCode;

use crate::helpers::{TestApp, sha256_hex, spawn_app};

/// Every endpoint that names a memory in its path.
const PATHS: [&str; 6] = [
    "",
    "/lines",
    "/bytes",
    "/chunks/0",
    "/content",
    "/lines?start=1&end=1",
];

async fn put_three(app: &TestApp) -> Vec<String> {
    let mut ids = Vec::new();
    for n in 0..3 {
        ids.push(
            app.put_id(format!("memory number {n}\nsecond line\n"))
                .await,
        );
    }
    ids
}

#[tokio::test]
async fn a_full_id_names_the_memory_on_every_endpoint() {
    let app = spawn_app().await;
    let ids = put_three(&app).await;
    for id in &ids {
        for path in PATHS {
            let resp = app.get(&format!("/v1/memories/{id}{path}")).await;
            assert_eq!(
                resp.status,
                StatusCode::OK,
                "{path}: {}",
                String::from_utf8_lossy(&resp.body)
            );
        }
        assert_eq!(
            app.get(&format!("/v1/memories/{id}")).await.json()["id"],
            id.as_str()
        );
    }
}

#[tokio::test]
async fn a_unique_prefix_of_12_or_more_characters_names_the_memory() {
    let app = spawn_app().await;
    let ids = put_three(&app).await;
    for id in &ids {
        for len in [12, 13, 32, 63] {
            let prefix = &id[..len];
            let resp = app.get(&format!("/v1/memories/{prefix}")).await;
            assert_eq!(resp.status, StatusCode::OK, "prefix of {len}");
            assert_eq!(
                resp.json()["id"],
                id.as_str(),
                "the answer names the full id"
            );
        }
        for path in PATHS {
            let resp = app.get(&format!("/v1/memories/{}{path}", &id[..12])).await;
            assert_eq!(resp.status, StatusCode::OK, "{path}");
        }
        let lines = app
            .get(&format!("/v1/memories/{}/lines", &id[..12]))
            .await
            .json();
        assert_eq!(lines["id"], id.as_str());
        assert!(
            lines["uri"]
                .as_str()
                .unwrap()
                .starts_with(&format!("mem://{id}#"))
        );
    }
}

#[tokio::test]
async fn ids_and_prefixes_are_case_insensitive() {
    let app = spawn_app().await;
    let id = app.put_id("Case does not matter\n").await;
    let upper = id.to_ascii_uppercase();
    for name in [upper.as_str(), &upper[..12], &upper[..20]] {
        let resp = app.get(&format!("/v1/memories/{name}")).await;
        assert_eq!(resp.status, StatusCode::OK);
        assert_eq!(resp.json()["id"], id, "ids are answered in lower case");
    }
    let content = app.get(&format!("/v1/memories/{upper}/content")).await;
    assert_eq!(content.header("etag"), Some(format!("\"{id}\"").as_str()));
}

#[tokio::test]
async fn a_prefix_shorter_than_12_characters_is_a_400() {
    let app = spawn_app().await;
    let id = app.put_id("short prefixes are refused").await;
    for len in [1, 6, 11] {
        for path in PATHS {
            app.get(&format!("/v1/memories/{}{path}", &id[..len]))
                .await
                .assert_error(StatusCode::BAD_REQUEST, "invalid_id");
        }
    }
}

#[tokio::test]
async fn a_non_hex_id_is_a_400() {
    let app = spawn_app().await;
    let mut bad = sha256_hex(b"x");
    bad.replace_range(30..31, "g");
    for name in [
        bad.as_str(),
        "zzzzzzzzzzzzzzzz",
        "0123456789ab-def",
        "not-an-id-at-all%20x",
    ] {
        for path in PATHS {
            app.get(&format!("/v1/memories/{name}{path}"))
                .await
                .assert_error(StatusCode::BAD_REQUEST, "invalid_id");
        }
    }
}

#[tokio::test]
async fn an_id_longer_than_64_characters_is_a_400() {
    let app = spawn_app().await;
    let id = app.put_id("long ids are refused").await;
    let long = format!("{id}0");
    for path in PATHS {
        app.get(&format!("/v1/memories/{long}{path}"))
            .await
            .assert_error(StatusCode::BAD_REQUEST, "invalid_id");
    }
}

#[tokio::test]
async fn an_unknown_prefix_is_a_404() {
    let app = spawn_app().await;
    let id = app.put_id("known").await;
    // Flip the 12th character: same length, certainly another prefix.
    let mut other = id[..12].to_owned();
    let last = if other.ends_with('0') { "1" } else { "0" };
    other.replace_range(11..12, last);
    for path in PATHS {
        app.get(&format!("/v1/memories/{other}{path}"))
            .await
            .assert_error(StatusCode::NOT_FOUND, "not_found");
    }
}
