//! `GET /v1/fetch?uri=mem://…`: resolving pointers to slices.

use axum::http::StatusCode;
use serde_json::Value;

use crate::helpers::{TestApp, enc, in_both_layouts};

fn numbered(n: u32) -> String {
    (1..=n).map(|i| format!("pointer line {i}\n")).collect()
}

async fn fetch(app: &TestApp, uri: &str) -> Value {
    let resp = app.get(&format!("/v1/fetch?uri={}", enc(uri))).await;
    assert_eq!(
        resp.status,
        StatusCode::OK,
        "{uri}: {}",
        String::from_utf8_lossy(&resp.body)
    );
    resp.json()
}

in_both_layouts!(
    a_bare_pointer_gives_the_first_lines,
    a_line_pointer_gives_those_lines,
    a_byte_pointer_gives_those_bytes,
    pointers_may_use_a_unique_prefix_in_any_case,
    the_pointers_a_put_and_a_slice_answer_resolve,
    bad_pointers_are_a_400_invalid_uri,
    a_pointer_with_a_bad_id_is_a_400_invalid_id,
    a_pointer_to_an_unknown_memory_is_a_404,
    ranges_in_pointers_are_checked_like_slices,
    a_missing_uri_parameter_is_a_400_invalid_query,
    fetch_answers_raw_bytes_when_asked,
);

async fn a_bare_pointer_gives_the_first_lines(app: &TestApp) {
    let content = numbered(300);
    let id = app.put_id(content.clone()).await;
    let body = fetch(app, &format!("mem://{id}")).await;
    let lines = app.get(&format!("/v1/memories/{id}/lines")).await.json();
    assert_eq!(body, lines, "a bare pointer is the default line slice");
    assert_eq!(body["start"], 1);
    assert_eq!(body["end"], 200);
    assert_eq!(
        body["next"],
        format!("mem://{id}#L201-300"),
        "the next range is clipped to the 300 lines"
    );
    assert_eq!(body["text"], numbered(200));
}

async fn a_line_pointer_gives_those_lines(app: &TestApp) {
    let content = numbered(50);
    let id = app.put_id(content).await;
    let body = fetch(app, &format!("mem://{id}#L10-12")).await;
    assert_eq!(
        body["text"],
        "pointer line 10\npointer line 11\npointer line 12\n"
    );
    assert_eq!(body["uri"], format!("mem://{id}#L10-12"));
    assert_eq!(body["next"], format!("mem://{id}#L13-15"));
    let body = fetch(app, &format!("mem://{id}#L7")).await;
    assert_eq!(body["text"], "pointer line 7\n", "#L<n> is one line");
    let body = fetch(app, &format!("mem://{id}#L10-L11")).await;
    assert_eq!(
        body["text"], "pointer line 10\npointer line 11\n",
        "GitHub style #L<a>-L<b>"
    );
    let body = fetch(app, &format!("mem://{id}#L49-60")).await;
    assert_eq!(body["end"], 50, "clipped at the last line");
    // The `#` sent URL-encoded by hand, as the documentation says.
    let resp = app.get(&format!("/v1/fetch?uri=mem://{id}%23L2-3")).await;
    assert_eq!(resp.json()["text"], "pointer line 2\npointer line 3\n");
}

async fn a_byte_pointer_gives_those_bytes(app: &TestApp) {
    let content = numbered(50);
    let id = app.put_id(content.clone()).await;
    let body = fetch(app, &format!("mem://{id}?offset=5&len=20")).await;
    assert_eq!(body["text"], &content[5..25]);
    assert_eq!(body["offset"], 5);
    assert_eq!(body["uri"], format!("mem://{id}?offset=5&len=20"));
    assert_eq!(body["next"], format!("mem://{id}?offset=25&len=20"));
    let body = fetch(app, &format!("mem://{id}?offset=100")).await;
    assert_eq!(body["text"], &content[100..], "without len: up to the cap");
    assert!(body["next"].is_null());
    let body = fetch(app, &format!("mem://{id}?len=3&offset=1")).await;
    assert_eq!(body["text"], &content[1..4], "parameters in any order");
    let body = fetch(app, &format!("mem://{id}?offset=1&length=4")).await;
    assert_eq!(
        body["text"],
        &content[1..5],
        "`length` is accepted for `len`"
    );
    // `?` and `&` sent URL-encoded by hand.
    let resp = app
        .get(&format!("/v1/fetch?uri=mem://{id}%3Foffset=2%26len=3"))
        .await;
    assert_eq!(resp.json()["text"], &content[2..5]);
}

async fn pointers_may_use_a_unique_prefix_in_any_case(app: &TestApp) {
    let id = app.put_id(numbered(20)).await;
    for name in [
        id[..12].to_owned(),
        id[..40].to_ascii_uppercase(),
        id.to_ascii_uppercase(),
    ] {
        let body = fetch(app, &format!("mem://{name}#L3-4")).await;
        assert_eq!(body["id"], id.as_str());
        assert_eq!(body["text"], "pointer line 3\npointer line 4\n");
        let body = fetch(app, &format!("mem://{name}?offset=0&len=4")).await;
        assert_eq!(body["text"], "poin");
        assert_eq!(
            fetch(app, &format!("mem://{name}")).await["id"],
            id.as_str()
        );
    }
    assert_eq!(
        fetch(app, &format!("mem://{id}/")).await["id"],
        id.as_str(),
        "a trailing slash is allowed"
    );
}

async fn the_pointers_a_put_and_a_slice_answer_resolve(app: &TestApp) {
    let put = app.put_text(&numbered(500), serde_json::json!({})).await;
    let body = fetch(app, put["uri"].as_str().unwrap()).await;
    let next = body["next"].as_str().unwrap();
    let body = fetch(app, next).await;
    assert_eq!(body["start"], 201);
    let again = fetch(app, body["uri"].as_str().unwrap()).await;
    assert_eq!(again, body, "a slice's own uri names exactly that slice");
    let bytes = app
        .get(&format!(
            "/v1/memories/{}/bytes?offset=10&length=10",
            put["id"].as_str().unwrap()
        ))
        .await
        .json();
    assert_eq!(fetch(app, bytes["uri"].as_str().unwrap()).await, bytes);
    assert_eq!(
        fetch(app, bytes["next"].as_str().unwrap()).await["offset"],
        20
    );
}

async fn bad_pointers_are_a_400_invalid_uri(app: &TestApp) {
    let id = app.put_id(numbered(20)).await;
    for uri in [
        "http://example.com/x".to_owned(),
        "mem:/abc".to_owned(),
        String::new(),
        id.clone(),
        format!("mem://{id}#10-20"),
        format!("mem://{id}#La-b"),
        format!("mem://{id}#L-3"),
        format!("mem://{id}#"),
        format!("mem://{id}?len=5"),
        format!("mem://{id}?offset=x"),
        format!("mem://{id}?offset=-1"),
        format!("mem://{id}?offset=1&foo=2"),
        format!("mem://{id}?"),
    ] {
        app.get(&format!("/v1/fetch?uri={}", enc(&uri)))
            .await
            .assert_error(StatusCode::BAD_REQUEST, "invalid_uri");
    }
}

async fn a_pointer_with_a_bad_id_is_a_400_invalid_id(app: &TestApp) {
    let id = app.put_id(numbered(20)).await;
    for uri in [
        "mem://".to_owned(),
        "mem://xyz".to_owned(),
        format!("mem://{}", &id[..11]),
        format!("mem://{id}0"),
        format!("mem://{}#L1-2", &id[..8]),
    ] {
        app.get(&format!("/v1/fetch?uri={}", enc(&uri)))
            .await
            .assert_error(StatusCode::BAD_REQUEST, "invalid_id");
    }
}

async fn a_pointer_to_an_unknown_memory_is_a_404(app: &TestApp) {
    app.put_id(numbered(20)).await;
    let unknown = crate::helpers::sha256_hex(b"nothing");
    for uri in [
        format!("mem://{unknown}"),
        format!("mem://{}#L1-2", &unknown[..12]),
        format!("mem://{unknown}?offset=0"),
    ] {
        app.get(&format!("/v1/fetch?uri={}", enc(&uri)))
            .await
            .assert_error(StatusCode::NOT_FOUND, "not_found");
    }
}

async fn ranges_in_pointers_are_checked_like_slices(app: &TestApp) {
    let id = app.put_id(numbered(20)).await;
    for uri in [
        format!("mem://{id}#L0-3"),
        format!("mem://{id}#L5-4"),
        format!("mem://{id}#L21"),
        format!("mem://{id}?offset=100000"),
    ] {
        app.get(&format!("/v1/fetch?uri={}", enc(&uri)))
            .await
            .assert_error(StatusCode::BAD_REQUEST, "invalid_range");
    }
    let error = app
        .get(&format!(
            "/v1/fetch?uri={}",
            enc(&format!("mem://{id}#L1-2001"))
        ))
        .await
        .assert_error(StatusCode::BAD_REQUEST, "slice_too_large");
    assert_eq!(error["limit"], "max_slice_lines");
    let error = app
        .get(&format!(
            "/v1/fetch?uri={}",
            enc(&format!("mem://{id}?offset=0&len=65537"))
        ))
        .await
        .assert_error(StatusCode::BAD_REQUEST, "slice_too_large");
    assert_eq!(error["limit"], "max_slice_bytes");
}

async fn a_missing_uri_parameter_is_a_400_invalid_query(app: &TestApp) {
    app.get("/v1/fetch")
        .await
        .assert_error(StatusCode::BAD_REQUEST, "invalid_query");
    app.get("/v1/fetch?url=mem://x")
        .await
        .assert_error(StatusCode::BAD_REQUEST, "invalid_query");
}

async fn fetch_answers_raw_bytes_when_asked(app: &TestApp) {
    let content = numbered(30);
    let id = app.put_id(content.clone()).await;
    let resp = app
        .get_with(
            &format!("/v1/fetch?uri={}", enc(&format!("mem://{id}#L2-3"))),
            &[("accept", "application/octet-stream")],
        )
        .await;
    assert_eq!(resp.status, StatusCode::OK);
    assert_eq!(resp.text(), "pointer line 2\npointer line 3\n");
    assert_eq!(resp.header("x-cairn-start"), Some("2"));
    assert_eq!(resp.header("x-cairn-end"), Some("3"));
    assert_eq!(
        resp.header("x-cairn-next"),
        Some(format!("mem://{id}#L4-5").as_str())
    );
    let resp = app
        .get_with(
            &format!(
                "/v1/fetch?uri={}",
                enc(&format!("mem://{id}?offset=3&len=4"))
            ),
            &[("accept", "application/octet-stream")],
        )
        .await;
    assert_eq!(&resp.body[..], &content.as_bytes()[3..7]);
    assert_eq!(resp.header("x-cairn-offset"), Some("3"));
}
