//! `/v1/admin/prune`, `/v1/admin/gc`, `/v1/admin/verify`, pinned and ttl memories.

use std::sync::Arc;
use std::time::Duration;

use axum::http::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{Resp, TestApp, noise_lines, sha256_hex, spawn_app, spawn_app_with};

impl TestApp {
    /// POST an admin endpoint with a JSON body (no key: the open default caller).
    async fn admin(&self, path: &str, body: Value) -> Resp {
        self.post(path, Some("application/json"), &[], body.to_string())
            .await
    }

    /// Ids of the namespace's memories, newest first.
    async fn ids(&self) -> Vec<String> {
        let resp = self.get("/v1/memories?limit=200").await;
        assert_eq!(resp.status, StatusCode::OK);
        resp.json()["memories"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["id"].as_str().unwrap().to_owned())
            .collect()
    }

    /// Puts text with fields; answers the id.
    async fn put_with(&self, content: &str, fields: Value) -> String {
        self.put_text(content, fields).await["id"]
            .as_str()
            .unwrap()
            .to_owned()
    }
}

fn removed_ids(answer: &Value) -> Vec<String> {
    answer["removed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_owned())
        .collect()
}

/// Three memories a, b, c created in that order (distinct milliseconds).
async fn three(app: &TestApp) -> [String; 3] {
    let mut ids = Vec::new();
    for (n, text) in [
        "alpha memory",
        "bravo memory body",
        "charlie memory content",
    ]
    .iter()
    .enumerate()
    {
        let tag = if n == 1 { "keep-me" } else { "scratch" };
        ids.push(app.put_with(text, json!({ "tags": [tag] })).await);
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    ids.try_into().unwrap()
}

#[tokio::test]
async fn prune_by_entries_bytes_days_and_filter() {
    let app = spawn_app().await;
    let [a, b, c] = three(&app).await;

    // keep_entries: the oldest goes first.
    let resp = app
        .admin("/v1/admin/prune", json!({"keep_entries": 2}))
        .await;
    assert_eq!(resp.status, StatusCode::OK);
    let answer = resp.json();
    assert_eq!(removed_ids(&answer), [a.as_str()]);
    assert_eq!(answer["removed_count"], 1);
    assert_eq!(answer["removed_bytes"], "alpha memory".len());
    assert_eq!(answer["kept_count"], 2);
    assert_eq!(answer["removed"][0]["access_count"], 0);
    assert_eq!(app.ids().await, [c.as_str(), b.as_str()]);

    // max_bytes: remove oldest until the rest fits.
    let limit = "charlie memory content".len();
    let answer = app
        .admin("/v1/admin/prune", json!({"max_bytes": limit}))
        .await
        .json();
    assert_eq!(removed_ids(&answer), [b.as_str()]);
    assert_eq!(app.ids().await, [c.as_str()]);

    // keep_days: nothing is a day old; 0 days removes everything older than now.
    let answer = app
        .admin("/v1/admin/prune", json!({"keep_days": 1}))
        .await
        .json();
    assert_eq!(answer["removed_count"], 0);
    assert_eq!(answer["kept_count"], 1);
    tokio::time::sleep(Duration::from_millis(3)).await;
    let answer = app
        .admin("/v1/admin/prune", json!({"keep_days": 0}))
        .await
        .json();
    assert_eq!(removed_ids(&answer), [c]);
    assert!(app.ids().await.is_empty());

    // Filters narrow what is looked at: only `scratch` memories go.
    let [a, b, c] = three(&app).await;
    let answer = app
        .admin(
            "/v1/admin/prune",
            json!({"keep_entries": 0, "tag": "scratch"}),
        )
        .await
        .json();
    let mut removed = removed_ids(&answer);
    removed.sort();
    let mut expected = vec![a, c];
    expected.sort();
    assert_eq!(removed, expected);
    assert_eq!(app.ids().await, [b.as_str()]);
    let answer = app
        .admin(
            "/v1/admin/prune",
            json!({"keep_entries": 0, "type": "web_scrape"}),
        )
        .await
        .json();
    assert_eq!(answer["removed_count"], 0, "no WEB_SCRAPE memory");
    assert_eq!(app.ids().await, [b.as_str()]);

    // The time window of a listing too: `until` an hour ago selects nothing,
    // `since` an hour ago everything; a bad time is a 400 naming it.
    let hour_ago = (chrono::Utc::now() - chrono::Duration::hours(1)).timestamp();
    let answer = app
        .admin(
            "/v1/admin/prune",
            json!({"keep_entries": 0, "until": hour_ago.to_string()}),
        )
        .await
        .json();
    assert_eq!(answer["removed_count"], 0, "{answer}");
    let answer = app
        .admin(
            "/v1/admin/prune",
            json!({"keep_entries": 0, "since": hour_ago.to_string()}),
        )
        .await
        .json();
    assert_eq!(removed_ids(&answer), [b]);
    let error = app
        .admin(
            "/v1/admin/prune",
            json!({"keep_entries": 0, "since": "yesterday"}),
        )
        .await
        .assert_error(StatusCode::BAD_REQUEST, "invalid_request");
    assert_eq!(error["field"], "since");
}

#[tokio::test]
async fn prune_rejects_bad_requests() {
    let app = spawn_app().await;
    app.admin("/v1/admin/prune", json!({}))
        .await
        .assert_error(StatusCode::BAD_REQUEST, "invalid_request");
    app.admin(
        "/v1/admin/prune",
        json!({"keep_entries": 1, "order": "newest"}),
    )
    .await
    .assert_error(StatusCode::UNPROCESSABLE_ENTITY, "invalid_json");
    app.admin("/v1/admin/prune", json!({"keep_entries": -1}))
        .await
        .assert_error(StatusCode::UNPROCESSABLE_ENTITY, "invalid_json");
    app.post(
        "/v1/admin/prune",
        Some("application/json"),
        &[],
        "{not json",
    )
    .await
    .assert_error(StatusCode::BAD_REQUEST, "invalid_json");
}

#[tokio::test]
async fn oldest_and_least_accessed_orders_differ() {
    let app = spawn_app().await;
    let [a, b, c] = three(&app).await;
    // a read three times, b once, c never.
    for _ in 0..3 {
        assert_eq!(
            app.get(&format!("/v1/memories/{a}/lines")).await.status,
            StatusCode::OK
        );
    }
    assert_eq!(
        app.get(&format!("/v1/memories/{b}/lines")).await.status,
        StatusCode::OK
    );
    // Read counts are flushed once a second.
    tokio::time::sleep(Duration::from_millis(1300)).await;
    let oldest = app
        .admin(
            "/v1/admin/prune",
            json!({"keep_entries": 1, "dry_run": true}),
        )
        .await
        .json();
    assert_eq!(removed_ids(&oldest), [a.as_str(), b.as_str()]);
    let least = app
        .admin(
            "/v1/admin/prune",
            json!({"keep_entries": 1, "order": "least_accessed", "dry_run": true}),
        )
        .await
        .json();
    assert_eq!(removed_ids(&least), [c.as_str(), b.as_str()]);
    assert_eq!(least["removed"][1]["access_count"], 1);
    assert!(least["removed"][1]["last_accessed_at"].is_string());
    let done = app
        .admin(
            "/v1/admin/prune",
            json!({"keep_entries": 1, "order": "least_accessed"}),
        )
        .await
        .json();
    assert_eq!(done["dry_run"], false);
    assert_eq!(app.ids().await, [a]);
}

#[tokio::test]
async fn dry_run_changes_nothing() {
    let app = spawn_app().await;
    let ids = three(&app).await;
    let before = app.get("/v1/memories").await.json();
    let answer = app
        .admin(
            "/v1/admin/prune",
            json!({"keep_entries": 0, "dry_run": true}),
        )
        .await
        .json();
    assert_eq!(answer["removed_count"], 3);
    assert_eq!(answer["kept_count"], 0);
    assert_eq!(answer["dry_run"], true);
    assert_eq!(app.get("/v1/memories").await.json(), before);
    for id in ids {
        assert_eq!(
            app.get(&format!("/v1/memories/{id}")).await.status,
            StatusCode::OK
        );
    }
}

#[tokio::test]
async fn pinned_memories_are_never_pruned() {
    let app = spawn_app().await;
    let pinned = app
        .put_with("pinned content", json!({"pinned": true}))
        .await;
    let loose = app.put_with("loose content", json!({})).await;
    let view = app.get(&format!("/v1/memories/{pinned}")).await.json();
    assert_eq!(view["pinned"], true);
    assert_eq!(view["expires_at"], Value::Null);
    assert_eq!(view["corrupt"], Value::Null);
    // Raw puts take `pinned` as a query parameter.
    let raw = app.put_raw("pinned=true", "raw pinned").await;
    assert_eq!(raw.json()["pinned"], true);
    let answer = app
        .admin(
            "/v1/admin/prune",
            json!({"keep_entries": 0, "keep_days": 0, "max_bytes": 0}),
        )
        .await
        .json();
    assert_eq!(removed_ids(&answer), [loose]);
    assert_eq!(answer["kept_count"], 2);
    assert_eq!(app.ids().await.len(), 2);
}

#[tokio::test]
async fn ttl_memories_vanish_and_are_swept() {
    let app = spawn_app_with(|c| c.retention_interval_secs = 1).await;
    let content = "short-lived content";
    let answer = app.put_text(content, json!({"ttl_seconds": 1})).await;
    let id = answer["id"].as_str().unwrap().to_owned();
    assert!(answer["expires_at"].is_string());
    let keep = app.put_with("long-lived content", json!({})).await;
    assert_eq!(
        app.get(&format!("/v1/memories/{id}/lines")).await.status,
        StatusCode::OK
    );
    app.put_json(json!({"content": "x", "ttl_seconds": 0}))
        .await
        .assert_error(StatusCode::BAD_REQUEST, "invalid_field");
    app.put_raw("ttl_seconds=abc", "x")
        .await
        .assert_error(StatusCode::BAD_REQUEST, "invalid_query");

    tokio::time::sleep(Duration::from_millis(1100)).await;
    // Expired: invisible at once, whatever the sweeper has done.
    app.get(&format!("/v1/memories/{id}"))
        .await
        .assert_error(StatusCode::NOT_FOUND, "not_found");
    app.get(&format!("/v1/memories/{id}/lines"))
        .await
        .assert_error(StatusCode::NOT_FOUND, "not_found");
    assert_eq!(app.ids().await, [keep]);
    // The sweeper (every second here) deletes the row: a new put is a new memory.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let again = app.put_json(json!({"content": content})).await;
    assert_eq!(again.status, StatusCode::CREATED);
    assert_eq!(again.json()["expires_at"], Value::Null);
}

#[tokio::test]
async fn admin_endpoints_need_an_admin_key() {
    let app = spawn_app_with(|c| {
        c.api_keys = Some("user-key-0001:alpha,admin-key-001:alpha:admin".into());
    })
    .await;
    for path in ["/v1/admin/prune", "/v1/admin/gc", "/v1/admin/verify"] {
        let body = json!({"keep_entries": 0}).to_string();
        let user = app
            .post(
                path,
                Some("application/json"),
                &[("authorization", "Bearer user-key-0001")],
                body.clone(),
            )
            .await;
        user.assert_error(StatusCode::FORBIDDEN, "forbidden");
        let body = if path.ends_with("prune") {
            body
        } else {
            "{}".to_owned()
        };
        let admin = app
            .post(
                path,
                Some("application/json"),
                &[("authorization", "Bearer admin-key-001")],
                body,
            )
            .await;
        assert_eq!(admin.status, StatusCode::OK, "{path}: {}", admin.text());
        let anonymous = app.post(path, Some("application/json"), &[], "{}").await;
        assert_eq!(anonymous.status, StatusCode::UNAUTHORIZED);
    }
}

/// Content large enough (poorly compressible) to be stored as a blob file.
fn blob_content(seed: u64) -> Vec<u8> {
    noise_lines(seed, 300_000)
}

#[tokio::test]
async fn gc_keeps_recent_orphans_and_removes_old_ones() {
    let app = spawn_app().await;
    let content = blob_content(1);
    let id = app.put_id(content.clone()).await;
    let kept = app.put_id(blob_content(2)).await;
    assert!(app.object_exists(&id).await);
    assert_eq!(
        app.delete(&format!("/v1/memories/{id}")).await.status,
        StatusCode::NO_CONTENT
    );

    let answer = app.admin("/v1/admin/gc", json!({})).await.json();
    assert_eq!(answer["removed_objects"], 0);
    assert_eq!(
        answer["kept_recent"], 1,
        "within the default grace of an hour"
    );
    assert!(app.object_exists(&id).await);

    tokio::time::sleep(Duration::from_millis(5)).await;
    let dry = app
        .admin("/v1/admin/gc", json!({"grace_seconds": 0, "dry_run": true}))
        .await
        .json();
    assert_eq!(dry["removed_objects"], 1);
    assert!(app.object_exists(&id).await, "dry run removes nothing");

    let answer = app
        .admin("/v1/admin/gc", json!({"grace_seconds": 0}))
        .await
        .json();
    assert_eq!(answer["removed_objects"], 1);
    assert!(answer["removed_bytes"].as_u64().unwrap() > 64 << 10);
    assert!(!app.object_exists(&id).await);
    assert!(app.object_exists(&kept).await, "referenced objects stay");

    // The content can be stored again afterwards, in full.
    assert_eq!(app.put_id(content.clone()).await, id);
    let back = app.get(&format!("/v1/memories/{id}/content")).await;
    assert_eq!(back.status, StatusCode::OK);
    assert_eq!(&back.body[..], &content[..]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn gc_racing_puts_of_the_same_content_never_loses_an_acknowledged_put() {
    let app = Arc::new(spawn_app().await);
    let contents: Vec<Vec<u8>> = (0..3).map(|n| blob_content(100 + n)).collect();
    for round in 0..40 {
        let content = &contents[round % contents.len()];
        let id = sha256_hex(content);
        app.put_id(content.clone()).await;
        assert_eq!(
            app.delete(&format!("/v1/memories/{id}")).await.status,
            StatusCode::NO_CONTENT
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
        // Now unreferenced and past a zero grace: GC and two puts race.
        let gc = {
            let app = app.clone();
            tokio::spawn(
                async move { app.admin("/v1/admin/gc", json!({"grace_seconds": 0})).await },
            )
        };
        let puts: Vec<_> = (0..2)
            .map(|_| {
                let (app, content) = (app.clone(), content.clone());
                tokio::spawn(async move { app.put_raw("", content).await })
            })
            .collect();
        assert_eq!(gc.await.unwrap().status, StatusCode::OK);
        for put in puts {
            let put = put.await.unwrap();
            assert!(put.status.is_success(), "put failed: {}", put.text());
        }
        let back = app.get(&format!("/v1/memories/{id}/content")).await;
        assert_eq!(
            back.status,
            StatusCode::OK,
            "round {round}: {}",
            String::from_utf8_lossy(&back.body)
        );
        assert_eq!(back.body.len(), content.len(), "round {round}");
        assert!(
            back.body[..] == content[..],
            "round {round}: content differs"
        );
    }
    let report = app.admin("/v1/admin/verify", json!({})).await.json();
    assert_eq!(report["corrupt"], json!([]));
    assert_eq!(report["missing"], json!([]));
}

#[tokio::test]
async fn verify_finds_a_bit_flip_a_missing_file_and_orphans() {
    let app = spawn_app_with(|c| {
        c.frame_bytes = 16 << 10;
        c.inline_object_max_bytes = 0;
    })
    .await;
    let flipped = app.put_id(blob_content(7)).await;
    let deleted = app.put_id(blob_content(8)).await;
    let healthy = app.put_id(blob_content(9)).await;
    app.put_text("small inline content", json!({})).await;

    let clean = app.admin("/v1/admin/verify", json!({})).await.json();
    assert_eq!(clean["checked_objects"], 4);
    assert_eq!(clean["ok"], 4);
    if app.skip_without_object_files("verify_finds_a_bit_flip_a_missing_file_and_orphans") {
        return;
    }

    let path = app.blob_path(&flipped);
    let mut bytes = std::fs::read(&path).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x10;
    std::fs::write(&path, bytes).unwrap();
    std::fs::remove_file(app.blob_path(&deleted)).unwrap();
    let stray = "ab".repeat(32);
    std::fs::create_dir_all(app.blob_path(&stray).parent().unwrap()).unwrap();
    std::fs::write(app.blob_path(&stray), b"not an object").unwrap();

    let report = app.admin("/v1/admin/verify", json!({})).await.json();
    assert_eq!(report["checked_objects"], 4);
    assert_eq!(report["ok"], 2);
    assert_eq!(report["missing"], json!([deleted]));
    assert_eq!(report["corrupt"].as_array().unwrap().len(), 1);
    assert_eq!(report["corrupt"][0]["id"], flipped.as_str());
    assert!(
        report["corrupt"][0]["detail"]
            .as_str()
            .unwrap()
            .contains("frame")
    );
    assert_eq!(report["orphaned_files"], json!([stray]));
    assert_eq!(report["orphaned_rows"], json!([]));
    assert_eq!(report["quarantined"], 0);
    assert!(path.is_file(), "without repair nothing moves");

    let repaired = app
        .admin("/v1/admin/verify", json!({"repair": true}))
        .await
        .json();
    assert_eq!(repaired["quarantined"], 1);
    assert_eq!(
        repaired["marked_memories"], 2,
        "the corrupt and the missing one"
    );
    assert!(!path.exists());
    assert!(
        app.dir
            .path()
            .join("blobs/quarantine")
            .join(format!("{flipped}.zst"))
            .is_file()
    );
    let view = app.get(&format!("/v1/memories/{flipped}")).await.json();
    assert!(view["corrupt"].as_str().unwrap().contains("frame"));
    app.get(&format!("/v1/memories/{flipped}/lines"))
        .await
        .assert_error(StatusCode::INTERNAL_SERVER_ERROR, "integrity_error");
    assert_eq!(
        app.get(&format!("/v1/memories/{healthy}/lines"))
            .await
            .status,
        StatusCode::OK
    );
}

#[tokio::test]
async fn background_policy_prunes_every_namespace() {
    let app = spawn_app_with(|c| {
        c.retention_interval_secs = 1;
        c.retention_keep_entries = Some(1);
        c.api_keys = Some("key-alpha-01:alpha,key-beta-001:beta".into());
    })
    .await;
    for key in ["key-alpha-01", "key-beta-001"] {
        for text in ["first", "second", "third"] {
            let resp = app
                .put_json_as(key, json!({"content": format!("{key} {text}")}))
                .await;
            assert_eq!(resp.status, StatusCode::CREATED);
            tokio::time::sleep(Duration::from_millis(3)).await;
        }
    }
    tokio::time::sleep(Duration::from_millis(2500)).await;
    for key in ["key-alpha-01", "key-beta-001"] {
        let list = app.get_as("/v1/memories", key).await.json();
        let memories = list["memories"].as_array().unwrap();
        assert_eq!(memories.len(), 1, "{key}: {list}");
        assert_eq!(
            memories[0]["id"],
            sha256_hex(format!("{key} third").as_bytes())
        );
    }
}
