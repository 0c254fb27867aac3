//! `GET /openapi.json` is the committed `openapi/openapi.json`.
//!
//! After changing the API, refresh the committed file with
//! `UPDATE_OPENAPI=1 cargo test --test api openapi` (the same bytes as
//! `cargo run -- openapi > openapi/openapi.json`).

use std::path::PathBuf;

use axum::http::StatusCode;
use serde_json::Value;

use crate::helpers::spawn_app;

fn committed_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("openapi")
        .join("openapi.json")
}

#[tokio::test]
async fn the_served_document_equals_the_committed_file() {
    let app = spawn_app().await;
    let resp = app.get("/openapi.json").await;
    assert_eq!(resp.status, StatusCode::OK);
    assert!(
        resp.header("content-type")
            .is_some_and(|t| t.starts_with("application/json"))
    );
    let served = resp.json();
    let generated = cairn::http::openapi_document().to_pretty_json().unwrap();
    assert_eq!(
        served,
        serde_json::from_str::<Value>(&generated).unwrap(),
        "the served document is the one `cairn openapi` prints"
    );
    let path = committed_path();
    if std::env::var("UPDATE_OPENAPI").is_ok_and(|v| v == "1") {
        std::fs::write(&path, format!("{generated}\n")).unwrap();
        eprintln!("wrote {}", path.display());
        return;
    }
    let committed: Value = serde_json::from_str(
        &std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display())),
    )
    .unwrap();
    assert!(
        served == committed,
        "openapi/openapi.json is stale: run `UPDATE_OPENAPI=1 cargo test --test api openapi` and commit the file"
    );
}

#[tokio::test]
async fn the_document_lists_every_endpoint() {
    let app = spawn_app().await;
    let doc = app.get("/openapi.json").await.json();
    assert!(
        doc["openapi"]
            .as_str()
            .is_some_and(|v| v.starts_with("3.1")),
        "OpenAPI 3.1"
    );
    let paths = doc["paths"].as_object().unwrap();
    for (path, methods) in [
        ("/v1/memories", &["post", "get"][..]),
        ("/v1/memories/{id}", &["get", "delete"]),
        ("/v1/memories/{id}/content", &["get"]),
        ("/v1/memories/{id}/lines", &["get"]),
        ("/v1/memories/{id}/bytes", &["get"]),
        ("/v1/memories/{id}/chunks/{n}", &["get"]),
        ("/v1/fetch", &["get"]),
        ("/v1/memories/{id}/grep", &["get"]),
        ("/v1/grep", &["get"]),
        ("/v1/memories/{id}/query", &["get"]),
        ("/healthz", &["get"]),
        ("/readyz", &["get"]),
    ] {
        let item = paths
            .get(path)
            .unwrap_or_else(|| panic!("{path} is not documented"));
        for method in methods {
            assert!(
                item.get(*method).is_some(),
                "{method} {path} is not documented"
            );
        }
    }
    // /v1 routes declare the bearer scheme; health does not.
    assert!(doc["components"]["securitySchemes"]["bearer"].is_object());
    assert!(paths["/v1/memories"]["get"]["security"].is_array());
    assert!(paths["/healthz"]["get"].get("security").is_none());
}

#[tokio::test]
async fn operation_ids_are_unique() {
    let doc = serde_json::to_value(cairn::http::openapi_document()).unwrap();
    let mut ids: Vec<&str> = doc["paths"]
        .as_object()
        .unwrap()
        .values()
        .flat_map(|item| item.as_object().unwrap().values())
        .filter_map(|op| op["operationId"].as_str())
        .collect();
    let count = ids.len();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), count, "an operationId is used twice: {ids:?}");
}

/// Where `value` breaks `schema` (resolving `$ref`s in `doc`): keys the
/// schema does not name, required keys missing, recursively. Enough to tell
/// a component that stands for another type (two types with one name).
fn mismatches(doc: &Value, schema: &Value, value: &Value, at: &str, out: &mut Vec<String>) {
    if let Some(reference) = schema["$ref"].as_str() {
        let name = reference.rsplit('/').next().unwrap();
        return mismatches(doc, &doc["components"]["schemas"][name], value, at, out);
    }
    for key in ["oneOf", "anyOf"] {
        if let Some(options) = schema[key].as_array() {
            let fits = options.iter().any(|o| {
                let mut inner = Vec::new();
                mismatches(doc, o, value, at, &mut inner);
                inner.is_empty()
            });
            if !fits && !value.is_null() {
                out.push(format!("{at}: fits none of {key}"));
            }
            return;
        }
    }
    let types: Vec<&str> = match &schema["type"] {
        Value::String(one) => vec![one.as_str()],
        Value::Array(many) => many.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    if !types.is_empty() && !types.iter().any(|t| is_of_type(t, value)) {
        out.push(format!("{at}: {value} is not of type {}", schema["type"]));
        return;
    }
    match value {
        Value::Object(map) if schema["properties"].is_object() => {
            let properties = schema["properties"].as_object().unwrap();
            for required in schema["required"].as_array().into_iter().flatten() {
                if !map.contains_key(required.as_str().unwrap()) {
                    out.push(format!("{at}: missing required `{required}`"));
                }
            }
            for (key, inner) in map {
                match properties.get(key) {
                    Some(property) => mismatches(doc, property, inner, &format!("{at}.{key}"), out),
                    None if schema["additionalProperties"] == Value::Bool(true) => {}
                    None => out.push(format!("{at}: `{key}` is not in the schema")),
                }
            }
        }
        Value::Array(items) if schema["items"].is_object() => {
            for (i, item) in items.iter().enumerate() {
                mismatches(doc, &schema["items"], item, &format!("{at}[{i}]"), out);
            }
        }
        _ => {}
    }
}

/// Whether `value` is of JSON Schema type `name`.
fn is_of_type(name: &str, value: &Value) -> bool {
    match name {
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "boolean" => value.is_boolean(),
        "null" => value.is_null(),
        "number" => value.is_number(),
        "integer" => value.is_i64() || value.is_u64(),
        _ => true,
    }
}

#[tokio::test]
async fn live_answers_fit_the_schemas_their_operations_document() {
    let app = spawn_app().await;
    let doc = app.get("/openapi.json").await.json();
    let put = app
        .post(
            "/v1/memories",
            Some("text/plain"),
            &[],
            "alpha beta\ngamma\n".to_owned(),
        )
        .await;
    let id = put.json()["id"].as_str().unwrap().to_owned();
    let json = Some("application/json");
    // A jq program's outputs are any JSON values, numbers among them.
    let numbers = app.put_id("[1, 2.5, 3]").await;
    let answers = [
        ("/v1/memories", "post", "201", put),
        ("/v1/stats", "get", "200", app.get("/v1/stats").await),
        ("/v1/memories", "get", "200", app.get("/v1/memories").await),
        (
            "/v1/memories/{id}",
            "get",
            "200",
            app.get(&format!("/v1/memories/{id}")).await,
        ),
        (
            "/v1/memories/{id}/lines",
            "get",
            "200",
            app.get(&format!("/v1/memories/{id}/lines")).await,
        ),
        (
            "/v1/memories/{id}/grep",
            "get",
            "200",
            app.get(&format!("/v1/memories/{id}/grep?pattern=gam&context=1"))
                .await,
        ),
        (
            "/v1/memories/{id}/query",
            "get",
            "422",
            app.get(&format!("/v1/memories/{id}/query?jq=length")).await,
        ),
        (
            "/v1/memories/{id}/query",
            "get",
            "200",
            app.get(&format!("/v1/memories/{numbers}/query?jq=.%5B%5D"))
                .await,
        ),
        (
            "/v1/grep",
            "get",
            "200",
            app.get("/v1/grep?pattern=gam&context=1&memories=2").await,
        ),
        (
            "/v1/memories/{id}/lines",
            "get",
            "200",
            app.get(&format!("/v1/memories/{id}/lines?max_tokens=20"))
                .await,
        ),
        (
            "/v1/governor",
            "post",
            "200",
            app.post("/v1/governor", json, &[], r#"{"tokens": 25000}"#.to_owned())
                .await,
        ),
        (
            "/v1/tokens",
            "post",
            "200",
            app.post("/v1/tokens", json, &[], r#"{"text": "hello"}"#.to_owned())
                .await,
        ),
        (
            "/v1/usage",
            "post",
            "200",
            app.post(
                "/v1/usage",
                json,
                &[],
                r#"{"model": "gpt-4o", "input_tokens": 5, "output_tokens": 1}"#.to_owned(),
            )
            .await,
        ),
        (
            "/v1/search",
            "get",
            "200",
            app.get("/v1/search?q=alpha").await,
        ),
    ];
    let mut found = Vec::new();
    for (path, method, status, resp) in answers {
        assert_eq!(resp.status.as_str(), status, "{method} {path}");
        let schema = &doc["paths"][path][method]["responses"][status]["content"]["application/json"]
            ["schema"];
        assert!(
            schema.is_object(),
            "{method} {path} documents no {status} schema"
        );
        mismatches(
            &doc,
            schema,
            &resp.json(),
            &format!("{method} {path}"),
            &mut found,
        );
    }
    assert!(
        found.is_empty(),
        "answers that break their schema:\n{}",
        found.join("\n")
    );
    app.shutdown().await;
}

/// The rules the document states that the derives could not (see
/// `http/openapi.rs::constrain`) are the server's: what the document's
/// pattern or bound refuses, the server refuses, and what it admits, the
/// server takes (schemathesis's negative and positive checks, by hand).
#[tokio::test]
async fn the_server_holds_fields_to_the_rules_the_document_states() {
    let app = spawn_app().await;
    let doc = app.get("/openapi.json").await.json();
    let since = doc["paths"]["/v1/memories"]["get"]["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "since")
        .unwrap()["schema"]["pattern"]
        .as_str()
        .unwrap()
        .to_owned();
    let since = regex::Regex::new(&since).unwrap();
    for (time, documented) in [
        ("1700000000", true),
        ("2024-02-29T00:00:00Z", true),
        ("2026-01-31T12:00:00.123+05:30", true),
        ("2026-02-29T00:00:00Z", false),
        ("2026-02-30T00:00:00Z", false),
        ("2026-01-31t12:00:00z", false),
        ("-5", false),
        ("9999999999999999999", false),
    ] {
        assert_eq!(since.is_match(time), documented, "{time}");
        let status = app
            .get(&format!("/v1/memories?since={}", crate::helpers::enc(time)))
            .await
            .status;
        let expected = if documented {
            StatusCode::OK
        } else {
            StatusCode::BAD_REQUEST
        };
        assert_eq!(status, expected, "since={time}");
    }
    let id_pattern = doc["paths"]["/v1/memories/{id}"]["get"]["parameters"][0]["schema"]["pattern"]
        .as_str()
        .unwrap();
    assert_eq!(id_pattern, "^[0-9a-fA-F]{12,64}$");
    // Tags: at most 64 as given (blank ones count), each without a comma.
    let put = |body: Value| app.put_json(body);
    let blank_tags = vec![""; 65];
    put(serde_json::json!({"content": "tags", "tags": blank_tags}))
        .await
        .assert_error(StatusCode::BAD_REQUEST, "invalid_field");
    // A whole number written with a fraction is the integer it is.
    let stored = put(serde_json::json!({"content": "ttl as 60.0", "ttl_seconds": 60.0})).await;
    assert_eq!(stored.status, StatusCode::CREATED, "{}", stored.text());
    // A query-string field is checked even where the JSON body's wins.
    let body = serde_json::json!({"content": "both", "type": "LOG"}).to_string();
    app.post(
        "/v1/memories?type=%3Cbad%3E",
        Some("application/json"),
        &[],
        body,
    )
    .await
    .assert_error(StatusCode::BAD_REQUEST, "invalid_field");
    // Beyond int64 (how the document writes these integers) is refused.
    let gc = |body: Value| {
        app.post(
            "/v1/admin/gc",
            Some("application/json"),
            &[],
            body.to_string(),
        )
    };
    assert_eq!(
        gc(serde_json::json!({"grace_seconds": 315_360_001_u64, "dry_run": true}))
            .await
            .status,
        StatusCode::BAD_REQUEST
    );
    assert_eq!(
        gc(serde_json::json!({"grace_seconds": 60, "dry_run": true}))
            .await
            .status,
        StatusCode::OK
    );
    let prune = app
        .post(
            "/v1/admin/prune",
            Some("application/json"),
            &[],
            serde_json::json!({"keep_entries": 9_223_372_036_854_775_808_u64, "dry_run": true})
                .to_string(),
        )
        .await;
    assert!(prune.status.is_client_error(), "{}", prune.text());
    // A model name as written is at most 128 characters.
    let long = format!("{}/gpt-4o", "a".repeat(130));
    app.post(
        "/v1/usage",
        Some("application/json"),
        &[],
        serde_json::json!({"model": long, "input_tokens": 1, "output_tokens": 1}).to_string(),
    )
    .await
    .assert_error(StatusCode::BAD_REQUEST, "invalid_field");
}
