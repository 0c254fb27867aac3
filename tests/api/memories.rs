//! `POST /v1/memories`, `GET /v1/memories/{id}` and `DELETE /v1/memories/{id}`.

use axum::http::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{enc, noise_lines, sha256_hex, spawn_app, spawn_app_with};

/// The reference o200k_base count (tiktoken).
fn o200k(text: &str) -> u64 {
    tiktoken_rs::o200k_base_singleton()
        .encode_ordinary(text)
        .len() as u64
}

const EMPTY_ID: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

// ----- put: JSON ------------------------------------------------------------

#[tokio::test]
async fn a_json_put_answers_201_with_the_content_hash_as_id() {
    let app = spawn_app().await;
    let content = "line one\nline two\nline three";
    let resp = app
        .put_json(json!({
            "content": content,
            "type": "TOOL_OUTPUT",
            "subtype": "pytest",
            "mime": "text/x-log",
            "title": "test run",
            "tags": ["ci", "python"],
            "thread": "thread-1",
            "checkpoint": "cp-1",
            "directory": "/src/app",
        }))
        .await;
    assert_eq!(resp.status, StatusCode::CREATED);
    let body = resp.json();
    let id = sha256_hex(content.as_bytes());
    assert_eq!(body["id"], id);
    assert_eq!(body["uri"], format!("mem://{id}"));
    assert_eq!(body["bytes"], content.len());
    assert_eq!(body["lines"], 3);
    assert!(body["stored_bytes"].as_u64().unwrap() > 0);
    assert_eq!(body["tokens"], o200k(content));
    assert_eq!(body["token_method"], "exact:o200k_base");
    assert_eq!(body["chunks"], 1);
    assert!(body["summary"].as_str().is_some_and(|s| !s.is_empty()));
    assert_eq!(body["deduplicated"], false);
    assert!(body["tokens_saved"].is_u64());
    assert_eq!(body["type"], "TOOL_OUTPUT");
    assert_eq!(body["subtype"], "pytest");
    assert_eq!(body["mime"], "text/x-log");
    assert_eq!(body["title"], "test run");
    assert_eq!(body["tags"], json!(["ci", "python"]));
    assert_eq!(body["thread"], "thread-1");
    assert_eq!(body["checkpoint"], "cp-1");
    assert_eq!(body["directory"], "/src/app");
    assert_eq!(
        resp.header("location"),
        Some(format!("/v1/memories/{id}").as_str())
    );
}

#[tokio::test]
async fn a_json_put_without_fields_gets_the_defaults() {
    let app = spawn_app().await;
    let body = app.put_text("hello\n", json!({})).await;
    assert_eq!(body["type"], "TOOL_OUTPUT");
    assert_eq!(body["mime"], "text/plain");
    assert_eq!(body["tags"], json!([]));
    for field in ["subtype", "title", "thread", "checkpoint", "directory"] {
        assert!(body[field].is_null(), "{field} should be null: {body}");
    }
}

#[tokio::test]
async fn non_ascii_json_content_is_hashed_as_utf8() {
    let app = spawn_app().await;
    let resp = app
        .post(
            "/v1/memories",
            Some("application/json"),
            &[],
            r#"{"content": "caf\u00e9 \u20ac"}"#,
        )
        .await;
    assert_eq!(resp.status, StatusCode::CREATED);
    let body = resp.json();
    assert_eq!(body["id"], sha256_hex("café €".as_bytes()));
    assert_eq!(body["bytes"], "café €".len());
}

#[tokio::test]
async fn the_type_is_upper_cased() {
    let app = spawn_app().await;
    let body = app.put_text("scraped", json!({"type": "web_scrape"})).await;
    assert_eq!(body["type"], "WEB_SCRAPE");
}

#[tokio::test]
async fn tags_are_trimmed_sorted_and_deduplicated() {
    let app = spawn_app().await;
    let body = app
        .put_text("tagged", json!({"tags": ["zeta", " alpha ", "zeta", ""]}))
        .await;
    assert_eq!(body["tags"], json!(["alpha", "zeta"]));
}

#[tokio::test]
async fn empty_content_is_allowed_and_has_no_lines() {
    let app = spawn_app().await;
    let resp = app.put_json(json!({"content": ""})).await;
    assert_eq!(resp.status, StatusCode::CREATED);
    let body = resp.json();
    assert_eq!(body["id"], EMPTY_ID);
    assert_eq!(body["bytes"], 0);
    assert_eq!(body["lines"], 0);
    assert_eq!(body["chunks"], 0);
    assert_eq!(body["tokens"], 0);
    let got = app.get(&format!("/v1/memories/{EMPTY_ID}")).await;
    assert_eq!(got.status, StatusCode::OK);
    assert_eq!(got.json()["bytes"], 0);
}

#[tokio::test]
async fn large_content_saves_tokens_but_never_more_than_it_has() {
    let app = spawn_app().await;
    let content = noise_lines(1, 100_000);
    let resp = app.put_raw("", content.clone()).await;
    assert_eq!(resp.status, StatusCode::CREATED);
    let body = resp.json();
    let tokens = body["tokens"].as_u64().unwrap();
    let saved = body["tokens_saved"].as_u64().unwrap();
    assert_eq!(tokens, o200k(std::str::from_utf8(&content).unwrap()));
    assert!(
        saved > 0 && saved < tokens,
        "tokens_saved {saved} of {tokens}"
    );
    // The summary names the pointer: it is all the caller keeps.
    let summary = body["summary"].as_str().unwrap();
    assert!(summary.contains(body["uri"].as_str().unwrap()));
    assert_eq!(saved, tokens - o200k(summary));
    assert_eq!(body["chunks"], 100_000_u64.div_ceil(32 * 1024));
}

#[tokio::test]
async fn json_puts_may_give_fields_as_query_parameters_and_the_body_wins() {
    let app = spawn_app().await;
    let resp = app
        .post(
            "/v1/memories?thread=from-query&title=query-title&tags=q1,q2",
            Some("application/json; charset=utf-8"),
            &[],
            json!({"content": "mixed", "title": "body-title"}).to_string(),
        )
        .await;
    assert_eq!(resp.status, StatusCode::CREATED);
    let body = resp.json();
    assert_eq!(body["thread"], "from-query");
    assert_eq!(body["title"], "body-title");
    assert_eq!(body["tags"], json!(["q1", "q2"]));
    assert_eq!(body["mime"], "text/plain");
}

// ----- put: raw ----------------------------------------------------------------

#[tokio::test]
async fn a_raw_put_takes_its_fields_from_the_query() {
    let app = spawn_app().await;
    let content = b"raw\xffbytes\n".to_vec();
    let query = format!(
        "type=file_list&subtype=ls&mime={}&title={}&tags=b,a&thread=t-9&checkpoint=c-9&directory={}",
        enc("application/x-listing"),
        enc("a listing"),
        enc("/home/me")
    );
    let resp = app.put_raw(&query, content.clone()).await;
    assert_eq!(
        resp.status,
        StatusCode::CREATED,
        "{}",
        String::from_utf8_lossy(&resp.body)
    );
    let body = resp.json();
    let id = sha256_hex(&content);
    assert_eq!(body["id"], id);
    assert_eq!(body["type"], "FILE_LIST");
    assert_eq!(body["subtype"], "ls");
    assert_eq!(body["mime"], "application/x-listing");
    assert_eq!(body["title"], "a listing");
    assert_eq!(body["tags"], json!(["a", "b"]));
    assert_eq!(body["thread"], "t-9");
    assert_eq!(body["checkpoint"], "c-9");
    assert_eq!(body["directory"], "/home/me");
    assert_eq!(body["bytes"], content.len());
    assert_eq!(body["lines"], 1);
    assert_eq!(
        resp.header("location"),
        Some(format!("/v1/memories/{id}").as_str())
    );
}

#[tokio::test]
async fn a_raw_put_defaults_its_mime_to_the_request_content_type() {
    let app = spawn_app().await;
    let resp = app
        .post(
            "/v1/memories",
            Some("Text/Markdown; charset=utf-8"),
            &[],
            "# Title\n",
        )
        .await;
    assert_eq!(resp.status, StatusCode::CREATED);
    assert_eq!(resp.json()["mime"], "text/markdown");
    let octet = app.put_raw("", "some bytes").await;
    assert_eq!(octet.json()["mime"], "application/octet-stream");
}

#[tokio::test]
async fn a_raw_put_without_content_type_is_text_plain() {
    let app = spawn_app().await;
    let resp = app.post("/v1/memories", None, &[], "plain body\n").await;
    assert_eq!(resp.status, StatusCode::CREATED);
    let body = resp.json();
    assert_eq!(body["mime"], "text/plain");
    assert_eq!(body["id"], sha256_hex(b"plain body\n"));
}

#[tokio::test]
async fn a_raw_put_with_a_json_looking_body_is_stored_verbatim() {
    let app = spawn_app().await;
    let content = r#"{"content": "not parsed"}"#;
    let resp = app
        .post("/v1/memories", Some("text/plain"), &[], content)
        .await;
    assert_eq!(resp.status, StatusCode::CREATED);
    assert_eq!(resp.json()["id"], sha256_hex(content.as_bytes()));
}

#[tokio::test]
async fn a_raw_put_of_several_megabytes_is_streamed_and_counted() {
    let app = spawn_app().await;
    let content = noise_lines(7, 3 * 1024 * 1024 + 17);
    let resp = app.put_raw("type=transcript", content.clone()).await;
    assert_eq!(resp.status, StatusCode::CREATED);
    let body = resp.json();
    assert_eq!(body["id"], sha256_hex(&content));
    assert_eq!(body["bytes"], content.len());
    assert_eq!(
        body["lines"],
        content.iter().filter(|b| **b == b'\n').count()
    );
    assert_eq!(body["type"], "TRANSCRIPT");
}

// ----- put: deduplication ----------------------------------------------------

#[tokio::test]
async fn the_same_content_again_is_deduplicated_with_200() {
    let app = spawn_app().await;
    let first = app
        .put_text(
            "repeated output\n",
            json!({"title": "first title", "tags": ["a"], "subtype": "first-sub"}),
        )
        .await;
    let again = app
        .put_json(json!({
            "content": "repeated output\n",
            "title": "second title",
            "tags": ["b", "a"],
            "thread": "late-thread",
            "checkpoint": "late-cp",
            "directory": "/late",
            "subtype": "second-sub",
        }))
        .await;
    assert_eq!(again.status, StatusCode::OK);
    let body = again.json();
    assert_eq!(body["deduplicated"], true);
    assert_eq!(body["id"], first["id"]);
    assert_eq!(body["title"], "first title", "first values are kept");
    assert_eq!(body["subtype"], "first-sub", "first values are kept");
    assert_eq!(body["thread"], "late-thread", "missing fields are filled");
    assert_eq!(body["checkpoint"], "late-cp");
    assert_eq!(body["directory"], "/late");
    assert_eq!(body["tags"], json!(["a", "b"]), "tags are united");
    assert_eq!(body["created_at"], first["created_at"]);
    assert!(body["updated_at"].as_str() >= first["updated_at"].as_str());
    assert_eq!(
        again.header("location"),
        Some(format!("/v1/memories/{}", first["id"].as_str().unwrap()).as_str())
    );
    // The stored memory says the same, and there is still only one.
    let stored = app
        .get(&format!("/v1/memories/{}", first["id"].as_str().unwrap()))
        .await
        .json();
    assert_eq!(stored["tags"], json!(["a", "b"]));
    assert_eq!(stored["thread"], "late-thread");
    assert_eq!(stored["title"], "first title");
    let list = app.get("/v1/memories").await.json();
    assert_eq!(list["memories"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn a_json_put_and_a_raw_put_of_the_same_bytes_are_one_memory() {
    let app = spawn_app().await;
    let first = app.put_text("same bytes either way\n", json!({})).await;
    let raw = app.put_raw("tags=raw", "same bytes either way\n").await;
    assert_eq!(raw.status, StatusCode::OK);
    let body = raw.json();
    assert_eq!(body["deduplicated"], true);
    assert_eq!(body["id"], first["id"]);
    assert_eq!(body["tags"], json!(["raw"]));
    assert_eq!(body["mime"], "text/plain", "the first mime is kept");
}

#[tokio::test]
async fn different_content_is_never_deduplicated() {
    let app = spawn_app().await;
    let a = app.put_text("content a", json!({})).await;
    let b = app.put_json(json!({"content": "content b"})).await;
    assert_eq!(b.status, StatusCode::CREATED);
    assert_eq!(b.json()["deduplicated"], false);
    assert_ne!(a["id"], b.json()["id"]);
}

// ----- put: errors ---------------------------------------------------------------

#[tokio::test]
async fn malformed_json_is_a_400_invalid_json() {
    let app = spawn_app().await;
    for body in ["{", "not json", r#"{"content": "x"} trailing"#, ""] {
        let resp = app
            .post("/v1/memories", Some("application/json"), &[], body)
            .await;
        resp.assert_error(StatusCode::BAD_REQUEST, "invalid_json");
    }
}

#[tokio::test]
async fn json_with_an_unknown_field_is_a_422_invalid_json() {
    let app = spawn_app().await;
    let resp = app
        .put_json(json!({"content": "x", "colour": "blue"}))
        .await;
    let error = resp.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "invalid_json");
    assert!(
        error["message"].as_str().unwrap().contains("colour"),
        "{error}"
    );
}

#[tokio::test]
async fn json_without_content_is_a_422_invalid_json() {
    let app = spawn_app().await;
    let resp = app.put_json(json!({"title": "no content"})).await;
    let error = resp.assert_error(StatusCode::UNPROCESSABLE_ENTITY, "invalid_json");
    assert!(
        error["message"].as_str().unwrap().contains("content"),
        "{error}"
    );
}

#[tokio::test]
async fn json_whose_content_is_not_a_string_is_a_422() {
    let app = spawn_app().await;
    for body in [
        json!({"content": 42}),
        json!({"content": null}),
        json!({"content": "x", "tags": 5}),
        json!({"content": "x", "tags": [1, 2]}),
    ] {
        app.put_json(body)
            .await
            .assert_error(StatusCode::UNPROCESSABLE_ENTITY, "invalid_json");
    }
}

#[tokio::test]
async fn a_bad_type_is_a_400_naming_the_field() {
    let app = spawn_app().await;
    for kind in ["9x", "has space", "dash-ed", &"A".repeat(33)] {
        let resp = app.put_json(json!({"content": "x", "type": kind})).await;
        let error = resp.assert_error(StatusCode::BAD_REQUEST, "invalid_field");
        assert_eq!(error["field"], "type", "{kind}");
    }
    let raw = app.put_raw("type=9x", "x").await;
    assert_eq!(
        raw.assert_error(StatusCode::BAD_REQUEST, "invalid_field")["field"],
        "type"
    );
}

#[tokio::test]
async fn a_bad_mime_is_a_400_naming_the_field() {
    let app = spawn_app().await;
    let long = format!("text/{}", "x".repeat(128));
    for mime in ["plain", "text/\u{7}bell", long.as_str()] {
        let resp = app.put_json(json!({"content": "x", "mime": mime})).await;
        let error = resp.assert_error(StatusCode::BAD_REQUEST, "invalid_field");
        assert_eq!(error["field"], "mime", "{mime}");
    }
    let raw = app.put_raw("mime=plain", "x").await;
    assert_eq!(
        raw.assert_error(StatusCode::BAD_REQUEST, "invalid_field")["field"],
        "mime"
    );
}

#[tokio::test]
async fn a_tag_with_a_comma_is_a_400_naming_the_field() {
    let app = spawn_app().await;
    let resp = app
        .put_json(json!({"content": "x", "tags": ["ok", "a,b"]}))
        .await;
    let error = resp.assert_error(StatusCode::BAD_REQUEST, "invalid_field");
    assert_eq!(error["field"], "tags");
}

#[tokio::test]
async fn too_many_or_too_long_tags_are_a_400() {
    let app = spawn_app().await;
    let many: Vec<String> = (0..65).map(|n| format!("t{n}")).collect();
    let resp = app.put_json(json!({"content": "x", "tags": many})).await;
    assert_eq!(
        resp.assert_error(StatusCode::BAD_REQUEST, "invalid_field")["field"],
        "tags"
    );
    let resp = app
        .put_json(json!({"content": "x", "tags": ["t".repeat(129)]}))
        .await;
    assert_eq!(
        resp.assert_error(StatusCode::BAD_REQUEST, "invalid_field")["field"],
        "tags"
    );
}

#[tokio::test]
async fn text_fields_with_control_characters_or_too_long_are_a_400() {
    let app = spawn_app().await;
    let cases: [(&str, Value); 6] = [
        ("title", json!("bad\u{0}title")),
        ("title", json!("t".repeat(513))),
        ("subtype", json!("s".repeat(129))),
        ("thread", json!("line\nbreak")),
        ("checkpoint", json!("c".repeat(1025))),
        ("directory", json!("d".repeat(4097))),
    ];
    for (field, value) in cases {
        let mut body = json!({"content": "x"});
        body[field] = value;
        let resp = app.put_json(body).await;
        let error = resp.assert_error(StatusCode::BAD_REQUEST, "invalid_field");
        assert_eq!(error["field"], field);
    }
    // A tab is allowed.
    let ok = app.put_json(json!({"content": "x", "title": "a\tb"})).await;
    assert_eq!(ok.status, StatusCode::CREATED);
}

#[tokio::test]
async fn a_rejected_put_stores_nothing() {
    let app = spawn_app().await;
    app.put_json(json!({"content": "never stored", "type": "9x"}))
        .await
        .assert_error(StatusCode::BAD_REQUEST, "invalid_field");
    let list = app.get("/v1/memories").await.json();
    assert_eq!(list["memories"], json!([]));
    let id = sha256_hex(b"never stored");
    app.get(&format!("/v1/memories/{id}"))
        .await
        .assert_error(StatusCode::NOT_FOUND, "not_found");
}

#[tokio::test]
async fn a_json_body_over_max_json_bytes_is_a_413() {
    let app = spawn_app_with(|c| c.max_json_bytes = 200).await;
    let ok = app.put_json(json!({"content": "x".repeat(100)})).await;
    assert_eq!(ok.status, StatusCode::CREATED);
    let resp = app.put_json(json!({"content": "x".repeat(300)})).await;
    let error = resp.assert_error(StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large");
    assert_eq!(error["limit"], 200);
    // The same content as a raw body is fine: the JSON limit is for JSON only.
    let raw = app.put_raw("", "x".repeat(300)).await;
    assert_eq!(raw.status, StatusCode::CREATED);
}

#[tokio::test]
async fn a_raw_body_over_max_upload_bytes_is_a_413() {
    let app = spawn_app_with(|c| c.max_upload_bytes = Some(1000)).await;
    let at_limit = app.put_raw("", vec![b'a'; 1000]).await;
    assert_eq!(at_limit.status, StatusCode::CREATED);
    let over = app.put_raw("", vec![b'b'; 1001]).await;
    let error = over.assert_error(StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large");
    assert_eq!(error["limit"], 1000);
    let big = app.put_raw("", noise_lines(3, 200_000)).await;
    big.assert_error(StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large");
    // JSON puts are held to the upload limit too.
    let json = app.put_json(json!({"content": "c".repeat(1001)})).await;
    json.assert_error(StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large");
    let list = app.get("/v1/memories").await.json();
    assert_eq!(
        list["memories"].as_array().unwrap().len(),
        1,
        "only the put at the limit is stored"
    );
}

#[tokio::test]
async fn a_malformed_query_on_a_raw_put_is_a_400_invalid_query() {
    let app = spawn_app().await;
    let resp = app.put_raw("title=a&title=b", "x").await;
    resp.assert_error(StatusCode::BAD_REQUEST, "invalid_query");
}

// ----- get ---------------------------------------------------------------------

#[tokio::test]
async fn get_answers_metadata_and_summary_but_no_content() {
    let app = spawn_app().await;
    let content = "step 1 ok\nstep 2 ERROR: disk on fire\nstep 3 ok\n";
    let put = app
        .put_text(
            content,
            json!({"title": "build", "tags": ["ci"], "subtype": "make"}),
        )
        .await;
    let id = put["id"].as_str().unwrap();
    let resp = app.get(&format!("/v1/memories/{id}")).await;
    assert_eq!(resp.status, StatusCode::OK);
    let body = resp.json();
    for field in [
        "id",
        "uri",
        "type",
        "subtype",
        "mime",
        "title",
        "tags",
        "thread",
        "checkpoint",
        "directory",
        "bytes",
        "stored_bytes",
        "lines",
        "tokens",
        "token_method",
        "chunks",
        "summary",
        "created_at",
        "updated_at",
        "last_accessed_at",
        "access_count",
    ] {
        assert!(body.get(field).is_some(), "missing `{field}` in {body}");
        if !["thread", "checkpoint", "directory", "last_accessed_at"].contains(&field) {
            assert_eq!(
                body[field], put[field],
                "`{field}` differs from the put answer"
            );
        }
    }
    assert!(body.get("content").is_none() && body.get("text").is_none());
    assert!(body.get("deduplicated").is_none());
    assert_eq!(body["lines"], 3);
    let summary = body["summary"].as_str().unwrap();
    assert!(
        summary.contains("disk on fire"),
        "the summary shows error lines: {summary}"
    );
    assert!(
        chrono::DateTime::parse_from_rfc3339(body["created_at"].as_str().unwrap()).is_ok(),
        "created_at is RFC 3339"
    );
}

#[tokio::test]
async fn reads_are_counted_within_a_few_seconds() {
    let app = spawn_app().await;
    let id = app.put_id("counted\nread\n").await;
    let before = app.get(&format!("/v1/memories/{id}")).await.json();
    assert_eq!(before["access_count"], 0);
    assert!(before["last_accessed_at"].is_null());
    assert_eq!(
        app.get(&format!("/v1/memories/{id}/lines")).await.status,
        StatusCode::OK
    );
    assert_eq!(
        app.get(&format!("/v1/memories/{id}/content")).await.status,
        StatusCode::OK
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let now = app.get(&format!("/v1/memories/{id}")).await.json();
        if now["access_count"] == 2 {
            assert!(now["last_accessed_at"].is_string());
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "reads never counted: {now}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
}

#[tokio::test]
async fn an_unknown_id_is_a_404_not_found() {
    let app = spawn_app().await;
    app.put_id("something else").await;
    let id = sha256_hex(b"never stored");
    let error = app
        .get(&format!("/v1/memories/{id}"))
        .await
        .assert_error(StatusCode::NOT_FOUND, "not_found");
    assert_eq!(error["id"], id);
    app.get(&format!("/v1/memories/{}", &id[..12]))
        .await
        .assert_error(StatusCode::NOT_FOUND, "not_found");
}

// ----- delete --------------------------------------------------------------------

#[tokio::test]
async fn delete_answers_204_and_the_memory_is_gone() {
    let app = spawn_app().await;
    let id = app.put_id("to be deleted\n").await;
    let keep = app.put_id("to be kept\n").await;
    let resp = app.delete(&format!("/v1/memories/{id}")).await;
    assert_eq!(resp.status, StatusCode::NO_CONTENT);
    assert!(resp.body.is_empty());
    for path in ["", "/lines", "/bytes", "/content", "/chunks/0"] {
        app.get(&format!("/v1/memories/{id}{path}"))
            .await
            .assert_error(StatusCode::NOT_FOUND, "not_found");
    }
    app.get(&format!("/v1/fetch?uri={}", enc(&format!("mem://{id}"))))
        .await
        .assert_error(StatusCode::NOT_FOUND, "not_found");
    let list = app.get("/v1/memories").await.json();
    let ids: Vec<&str> = list["memories"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [keep.as_str()]);
    assert_eq!(
        app.get(&format!("/v1/memories/{keep}")).await.status,
        StatusCode::OK
    );
}

#[tokio::test]
async fn deleting_twice_is_a_404() {
    let app = spawn_app().await;
    let id = app.put_id("delete me twice").await;
    assert_eq!(
        app.delete(&format!("/v1/memories/{id}")).await.status,
        StatusCode::NO_CONTENT
    );
    app.delete(&format!("/v1/memories/{id}"))
        .await
        .assert_error(StatusCode::NOT_FOUND, "not_found");
}

#[tokio::test]
async fn deleting_an_unknown_id_is_a_404() {
    let app = spawn_app().await;
    let id = sha256_hex(b"unknown");
    app.delete(&format!("/v1/memories/{id}"))
        .await
        .assert_error(StatusCode::NOT_FOUND, "not_found");
}

#[tokio::test]
async fn delete_works_by_unique_prefix() {
    let app = spawn_app().await;
    let id = app.put_id("delete me by prefix").await;
    assert_eq!(
        app.delete(&format!("/v1/memories/{}", &id[..12]))
            .await
            .status,
        StatusCode::NO_CONTENT
    );
    app.get(&format!("/v1/memories/{id}"))
        .await
        .assert_error(StatusCode::NOT_FOUND, "not_found");
}

#[tokio::test]
async fn delete_with_a_malformed_id_is_a_400() {
    let app = spawn_app().await;
    app.delete("/v1/memories/abc")
        .await
        .assert_error(StatusCode::BAD_REQUEST, "invalid_id");
}

#[tokio::test]
async fn content_put_again_after_delete_is_new() {
    let app = spawn_app_with(crate::helpers::tiny_frames).await;
    let content = noise_lines(11, 5_000);
    let id = app.put_id(content.clone()).await;
    assert_eq!(
        app.delete(&format!("/v1/memories/{id}")).await.status,
        StatusCode::NO_CONTENT
    );
    let again = app.put_raw("title=again", content.clone()).await;
    assert_eq!(again.status, StatusCode::CREATED);
    assert_eq!(again.json()["deduplicated"], false);
    assert_eq!(again.json()["title"], "again");
    let back = app.get(&format!("/v1/memories/{id}/content")).await;
    assert_eq!(back.status, StatusCode::OK);
    assert_eq!(&back.body[..], &content[..]);
}

// ----- concurrency and restarts ---------------------------------------------------

#[tokio::test]
async fn concurrent_puts_of_the_same_content_store_one_memory() {
    for tune in [
        |_: &mut cairn::config::Config| {},
        crate::helpers::tiny_frames as fn(&mut cairn::config::Config),
    ] {
        let app = spawn_app_with(tune).await;
        let content = noise_lines(40, 3 * 1024 * 1024 / 8);
        let queries: Vec<String> = (0..6).map(|n| format!("tags=t{n}")).collect();
        let puts: Vec<_> = queries
            .iter()
            .map(|q| app.put_raw(q, content.clone()))
            .collect();
        let answers = futures::future::join_all(puts).await;
        let created = answers
            .iter()
            .filter(|r| r.status == StatusCode::CREATED)
            .count();
        let deduplicated = answers
            .iter()
            .filter(|r| r.status == StatusCode::OK)
            .count();
        assert_eq!(
            (created, deduplicated),
            (1, 5),
            "{:?}",
            answers.iter().map(|r| r.status).collect::<Vec<_>>()
        );
        for resp in &answers {
            assert_eq!(resp.json()["deduplicated"], resp.status == StatusCode::OK);
        }
        let id = sha256_hex(&content);
        let stored = app.get(&format!("/v1/memories/{id}")).await.json();
        assert_eq!(stored["tags"], json!(["t0", "t1", "t2", "t3", "t4", "t5"]));
        let back = app.get(&format!("/v1/memories/{id}/content")).await;
        assert!(back.body[..] == content[..]);
        assert_eq!(
            app.get("/v1/memories").await.json()["memories"]
                .as_array()
                .unwrap()
                .len(),
            1
        );
    }
}

#[tokio::test]
async fn concurrent_puts_of_different_content_are_all_stored() {
    let app = spawn_app_with(crate::helpers::tiny_frames).await;
    let contents: Vec<Vec<u8>> = (0..8).map(|n| noise_lines(100 + n, 20_000)).collect();
    let answers =
        futures::future::join_all(contents.iter().map(|c| app.put_raw("", c.clone()))).await;
    for (content, resp) in contents.iter().zip(&answers) {
        assert_eq!(resp.status, StatusCode::CREATED);
        let id = sha256_hex(content);
        assert_eq!(resp.json()["id"], id);
        let back = app.get(&format!("/v1/memories/{id}/content")).await;
        assert!(back.body[..] == content[..]);
    }
}

#[tokio::test]
async fn memories_and_read_counts_survive_a_restart() {
    let app = spawn_app().await;
    let small = app.put_id("small, stored inline\n").await;
    let large_content = noise_lines(41, 3 * 1024 * 1024);
    let large = app.put_id(large_content.clone()).await;
    assert_eq!(
        app.get(&format!("/v1/memories/{small}/lines")).await.status,
        StatusCode::OK
    );
    // Restart at once: the pending read count is flushed at shutdown.
    let app = app.restart_with(|_| {}).await;
    let meta = app.get(&format!("/v1/memories/{small}")).await.json();
    assert_eq!(
        meta["access_count"], 1,
        "the read before the restart was counted"
    );
    assert!(meta["last_accessed_at"].is_string());
    let back = app.get(&format!("/v1/memories/{large}/content")).await;
    assert!(back.body[..] == large_content[..]);
    assert_eq!(
        app.get(&format!("/v1/memories/{small}/content"))
            .await
            .text(),
        "small, stored inline\n"
    );
    assert_eq!(
        app.put_raw("", "small, stored inline\n").await.status,
        StatusCode::OK,
        "still deduplicated"
    );
    app.shutdown().await;
}

#[tokio::test]
async fn an_upload_refused_as_too_large_leaves_no_files_behind() {
    let app = spawn_app_with(|c| {
        crate::helpers::tiny_frames(c);
        c.max_upload_bytes = Some(10_000);
    })
    .await;
    // Streamed in pieces, so that frames are written before the limit is hit.
    let pieces: Vec<Result<bytes::Bytes, std::io::Error>> = noise_lines(60, 50_000)
        .chunks(1000)
        .map(|piece| Ok(bytes::Bytes::copy_from_slice(piece)))
        .collect();
    let request = axum::http::Request::post("/v1/memories")
        .header("content-type", "text/plain")
        .body(axum::body::Body::from_stream(futures::stream::iter(pieces)))
        .unwrap();
    let resp = app.send(request).await;
    resp.assert_error(StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large");
    assert!(app.dir.path().join("tmp").is_dir());
    let files = |dir: &str| -> Vec<std::path::PathBuf> {
        let mut found = Vec::new();
        let mut stack = vec![app.dir.path().join(dir)];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
                if entry.path().is_dir() {
                    stack.push(entry.path());
                } else {
                    found.push(entry.path());
                }
            }
        }
        found
    };
    assert_eq!(
        files("tmp"),
        Vec::<std::path::PathBuf>::new(),
        "no temp file is left"
    );
    assert_eq!(
        files("blobs"),
        Vec::<std::path::PathBuf>::new(),
        "no object is committed"
    );
    if let Some(s3) = &app.backends.s3 {
        assert_eq!(
            s3.object_keys().await,
            Vec::<String>::new(),
            "no object is committed to the bucket"
        );
    }
}
