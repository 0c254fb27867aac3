//! The console at `/ui` through the real router: a key signs in for a
//! cookie, pages show only the signed-in namespace, stored content is
//! escaped, a delete needs the form's CSRF token, and every answer carries
//! a policy with no inline script. (The browser test, tests/console, drives
//! the same pages in Chromium.)

use axum::http::StatusCode;
use serde_json::json;

use crate::helpers::{Resp, TestApp, spawn_app, spawn_app_with};

const ALPHA: &str = "console-alpha-1";
const BETA: &str = "console-beta-22";
const ADMIN: &str = "console-admin-3";

async fn spawn_with_keys() -> TestApp {
    spawn_app_with(|c| {
        c.api_keys = Some(format!("{ALPHA}:alpha,{BETA}:beta,{ADMIN}:ops:admin"));
    })
    .await
}

/// Signs in with `key`; answers the cookie pair to send back.
async fn sign_in(app: &TestApp, key: &str) -> String {
    let resp = app
        .post(
            "/ui/login",
            Some("application/x-www-form-urlencoded"),
            &[],
            format!("key={key}"),
        )
        .await;
    assert_eq!(resp.status, StatusCode::SEE_OTHER, "{}", text(&resp));
    assert_eq!(resp.header("location"), Some("/ui/"));
    let cookie = resp.header("set-cookie").unwrap().to_owned();
    for attribute in ["HttpOnly", "SameSite=Strict", "Path=/ui"] {
        assert!(cookie.contains(attribute), "{cookie}");
    }
    assert!(!cookie.contains(key), "the key itself is never the cookie");
    cookie.split(';').next().unwrap().to_owned()
}

fn text(resp: &Resp) -> String {
    String::from_utf8_lossy(&resp.body).into_owned()
}

async fn page(app: &TestApp, uri: &str, cookie: &str) -> Resp {
    app.get_with(uri, &[("cookie", cookie)]).await
}

/// The CSRF token of a page's forms.
fn csrf(html: &str) -> String {
    let at = html.find("name=\"csrf\" value=\"").unwrap() + "name=\"csrf\" value=\"".len();
    html[at..at + 64].to_owned()
}

#[tokio::test]
async fn pages_need_a_signed_in_key_and_answer_with_a_strict_policy() {
    let app = spawn_with_keys().await;
    let id = app
        .put_json_as(
            ALPHA,
            json!({"content": "alpha only\n", "title": "alpha title"}),
        )
        .await
        .json()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    for uri in [
        "/ui/",
        "/ui/memories",
        &format!("/ui/memories/{id}"),
        "/ui/savings",
    ] {
        let resp = app.get(uri).await;
        assert_eq!(resp.status, StatusCode::SEE_OTHER, "{uri}");
        assert_eq!(resp.header("location"), Some("/ui/login"), "{uri}");
        assert!(!text(&resp).contains("alpha"), "{uri}");
    }
    let bogus = page(&app, "/ui/", "cairn_console=00ff").await;
    assert_eq!(bogus.status, StatusCode::SEE_OTHER);
    let wrong = app
        .post(
            "/ui/login",
            Some("application/x-www-form-urlencoded"),
            &[],
            "key=nope-nope-nope",
        )
        .await;
    assert_eq!(wrong.status, StatusCode::UNAUTHORIZED);
    assert!(wrong.header("set-cookie").is_none());

    let cookie = sign_in(&app, ALPHA).await;
    for uri in [
        "/ui/",
        "/ui/memories",
        &format!("/ui/memories/{id}"),
        "/ui/savings",
    ] {
        let resp = page(&app, uri, &cookie).await;
        assert_eq!(resp.status, StatusCode::OK, "{uri}: {}", text(&resp));
        let policy = resp.header("content-security-policy").unwrap();
        assert!(policy.contains("script-src 'self'"), "{policy}");
        assert!(!policy.contains("unsafe-inline"), "{policy}");
        assert_eq!(resp.header("x-content-type-options"), Some("nosniff"));
        // Browsers send the console's own forms with `Origin: null` under `no-referrer`.
        assert_eq!(resp.header("referrer-policy"), Some("same-origin"));
        assert_eq!(resp.header("cache-control"), Some("no-store"));
    }
    let memory = text(&page(&app, &format!("/ui/memories/{id}"), &cookie).await);
    assert!(
        memory.contains("alpha title") && memory.contains("alpha only"),
        "{memory}"
    );

    // Signing out ends the session: the same cookie no longer opens a page.
    let token = csrf(&memory);
    let out = app
        .post(
            "/ui/logout",
            Some("application/x-www-form-urlencoded"),
            &[("cookie", &cookie)],
            format!("csrf={token}"),
        )
        .await;
    assert_eq!(out.status, StatusCode::SEE_OTHER);
    assert_eq!(
        page(&app, "/ui/", &cookie).await.status,
        StatusCode::SEE_OTHER
    );
}

#[tokio::test]
async fn another_namespace_shows_nothing_and_only_an_admin_may_switch() {
    let app = spawn_with_keys().await;
    let put = app
        .put_json_as(
            ALPHA,
            json!({"content": "alpha secret line\n", "title": "alpha secret"}),
        )
        .await;
    let id = put.json()["id"].as_str().unwrap().to_owned();
    let beta = sign_in(&app, BETA).await;
    let resp = page(&app, &format!("/ui/memories/{id}"), &beta).await;
    assert_eq!(resp.status, StatusCode::NOT_FOUND);
    assert!(!text(&resp).contains("alpha secret"));
    let list = text(&page(&app, "/ui/memories", &beta).await);
    assert!(!list.contains("alpha secret"), "{list}");
    let download = page(&app, &format!("/ui/memories/{id}/download"), &beta).await;
    assert_eq!(download.status, StatusCode::NOT_FOUND);
    let switch = page(&app, "/ui/memories?ns=alpha", &beta).await;
    assert_eq!(switch.status, StatusCode::FORBIDDEN);
    assert!(!text(&switch).contains("alpha secret"));

    let admin = sign_in(&app, ADMIN).await;
    let seen = text(&page(&app, "/ui/memories?ns=alpha", &admin).await);
    assert!(seen.contains("alpha secret"), "{seen}");
    assert!(
        seen.contains(&format!("/ui/memories/{id}?ns=alpha")),
        "links keep the namespace: {seen}"
    );
    let own = text(&page(&app, "/ui/memories", &admin).await);
    assert!(!own.contains("alpha secret"));
}

#[tokio::test]
async fn stored_markup_is_shown_as_text() {
    let app = spawn_with_keys().await;
    let title = "<script>window.__pwned=1</script><img src=x onerror=\"window.__pwned=2\">";
    let content =
        "<script>window.__pwned=3</script>\n<a href=\"javascript:window.__pwned=5\">x</a>\n";
    let put = app
        .put_json_as(
            ALPHA,
            json!({"content": content, "title": title, "tags": ["<b>tag</b>"]}),
        )
        .await;
    let id = put.json()["id"].as_str().unwrap().to_owned();
    let cookie = sign_in(&app, ALPHA).await;
    for uri in [
        format!("/ui/memories/{id}"),
        format!("/ui/memories/{id}?grep=pwned"),
        "/ui/memories".to_owned(),
    ] {
        let html = text(&page(&app, &uri, &cookie).await);
        assert_eq!(
            html.matches("<script").count(),
            1,
            "{uri}: only the console's own script: {html}"
        );
        assert!(html.contains("<script src=\"/ui/assets/console.js\""));
        assert!(!html.contains("<img"), "{uri}");
        assert!(!html.contains("<b>tag"), "{uri}");
        assert!(!html.contains("href=\"javascript:"), "{uri}");
        assert!(
            html.contains("&lt;script&gt;window.__pwned="),
            "{uri}: {html}"
        );
    }
}

#[tokio::test]
async fn a_delete_needs_the_forms_csrf_token() {
    let app = spawn_with_keys().await;
    let put = app
        .put_json_as(ALPHA, json!({"content": "to delete\n"}))
        .await;
    let id = put.json()["id"].as_str().unwrap().to_owned();
    let cookie = sign_in(&app, ALPHA).await;
    let form = "application/x-www-form-urlencoded";
    let uri = format!("/ui/memories/{id}/delete");
    for body in ["", "csrf=", &format!("csrf={}", "0".repeat(64))] {
        let refused = app
            .post(&uri, Some(form), &[("cookie", &cookie)], body.to_owned())
            .await;
        assert_eq!(refused.status, StatusCode::FORBIDDEN, "{body}");
    }
    assert_eq!(
        app.get_as(&format!("/v1/memories/{id}"), ALPHA)
            .await
            .status,
        StatusCode::OK
    );
    let token = csrf(&text(
        &page(&app, &format!("/ui/memories/{id}"), &cookie).await,
    ));
    // Another session's token is not this one's.
    let other = sign_in(&app, ALPHA).await;
    let theirs = csrf(&text(&page(&app, "/ui/", &other).await));
    assert_ne!(token, theirs);
    let refused = app
        .post(
            &uri,
            Some(form),
            &[("cookie", &cookie)],
            format!("csrf={theirs}"),
        )
        .await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN);
    let done = app
        .post(
            &uri,
            Some(form),
            &[("cookie", &cookie)],
            format!("csrf={token}"),
        )
        .await;
    assert_eq!(done.status, StatusCode::SEE_OTHER, "{}", text(&done));
    assert_eq!(
        app.get_as(&format!("/v1/memories/{id}"), ALPHA)
            .await
            .status,
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn a_memory_pages_by_line_greps_and_downloads() {
    let app = spawn_app().await;
    let content: String = (1..=1_000)
        .map(|n| format!("row {n} of the log\n"))
        .collect();
    let id = app.put_id(content.clone()).await;
    let html = text(&app.get(&format!("/ui/memories/{id}?from=401")).await);
    assert!(
        html.contains("<tr id=\"L401\">") && html.contains("row 401 of the log"),
        "{html}"
    );
    assert!(html.contains("<tr id=\"L600\">") && !html.contains("id=\"L601\""));
    assert!(
        html.contains(&format!("/ui/memories/{id}?from=601")),
        "a next link"
    );
    assert!(
        html.contains(&format!("/ui/memories/{id}?from=201")),
        "a previous link"
    );
    let bad = text(&app.get(&format!("/ui/memories/{id}?from=x")).await);
    assert!(bad.contains("A line number is a whole number"), "{bad}");
    let grep = text(
        &app.get(&format!(
            "/ui/memories/{id}?grep=%5Erow+77%5B0-9%5D+&context=1"
        ))
        .await,
    );
    assert!(grep.contains("10 matching lines"), "{grep}");
    assert!(
        grep.contains(&format!("/ui/memories/{id}?from=770#L770")),
        "{grep}"
    );
    let download = app.get(&format!("/ui/memories/{id}/download")).await;
    assert_eq!(download.status, StatusCode::OK);
    assert_eq!(download.body, content.as_bytes());
    assert!(
        download
            .header("content-disposition")
            .unwrap()
            .starts_with("attachment")
    );
    // Without keys the console is open, but not to another site's page.
    let foreign = app
        .get_with("/ui/", &[("origin", "https://evil.example")])
        .await;
    assert_eq!(foreign.status, StatusCode::FORBIDDEN);
    let missing = app.get(&format!("/ui/memories/{}", "ab".repeat(32))).await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn the_memory_list_takes_the_filters_of_the_api() {
    let app = spawn_app().await;
    for (content, subtype, directory) in [
        ("pytest run\n", "pytest", "/repo/a"),
        ("cargo run\n", "cargo", "/repo/b"),
    ] {
        let fields = json!({"title": format!("{subtype} output"), "subtype": subtype, "directory": directory});
        app.put_text(content, fields).await;
    }
    let html = text(&app.get("/ui/memories?subtype=pytest").await);
    assert!(
        html.contains("pytest output") && !html.contains("cargo output"),
        "{html}"
    );
    let html = text(&app.get("/ui/memories?directory=%2Frepo%2Fb&type=").await);
    assert!(
        html.contains("cargo output") && !html.contains("pytest output"),
        "{html}"
    );
    let bad = app.get("/ui/memories?since=yesterday").await;
    assert!(text(&bad).contains("since"), "a bad filter is named");
}
