//! Full-text search and refs: ranking, filters, phrases, prefixes, malformed
//! queries, hit line numbers across frames, namespace isolation, restarts.

use std::time::{Duration, Instant};

use axum::http::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{TestApp, enc, spawn_app, spawn_app_with, tiny_frames};

const ALPHA: &str = "key-alpha-0001";
const BETA: &str = "key-beta-00002";

/// Waits until the background indexer has nothing pending (or fails after
/// 180 s, saying what was still pending: `.ci/run` runs three API suites at
/// once on two cores, and a PostgreSQL replica's indexer also waits for
/// every write transaction other tests have running on the server; one CI
/// run saw a 2.7 MB memory on PostgreSQL + S3 + Redis miss a 60 s bound).
pub async fn wait_for_index(app: &TestApp, key: Option<&str>) {
    let started = Instant::now();
    let deadline = started + Duration::from_secs(180);
    loop {
        let resp = match key {
            Some(key) => app.get_as("/v1/stats", key).await,
            None => app.get("/v1/stats").await,
        };
        assert_eq!(resp.status, StatusCode::OK, "{}", resp.text());
        let index = resp.json()["search_index"].clone();
        if index["pending_objects"] == 0 {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the index did not catch up in {:?}: {index}",
            started.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn search(app: &TestApp, query: &str) -> Value {
    let resp = app.get(&format!("/v1/search?{query}")).await;
    assert_eq!(
        resp.status,
        StatusCode::OK,
        "{}",
        String::from_utf8_lossy(&resp.body)
    );
    resp.json()
}

fn ids(found: &Value) -> Vec<String> {
    found["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_owned())
        .collect()
}

async fn put(app: &TestApp, content: &str, fields: Value) -> String {
    app.put_text(content, fields).await["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[tokio::test]
async fn memories_are_ranked_by_bm25_with_their_matching_lines() {
    let app = spawn_app().await;
    let many = put(
        &app,
        "intro\nzebra zebra zebra crossing\nzebra again\n",
        json!({"title": "many"}),
    )
    .await;
    let once = put(
        &app,
        "a long text about horses\nand one zebra\nand more horses\n",
        json!({}),
    )
    .await;
    let none = put(&app, "nothing to see here\n", json!({})).await;
    wait_for_index(&app, None).await;
    let found = search(&app, "q=zebra").await;
    assert_eq!(ids(&found), [many.clone(), once.clone()]);
    assert!(!ids(&found).contains(&none));
    let first = &found["results"][0];
    assert_eq!(first["title"], "many");
    assert_eq!(first["type"], "TOOL_OUTPUT");
    assert_eq!(first["uri"], format!("mem://{many}"));
    assert!(first["score"].as_f64().unwrap() > found["results"][1]["score"].as_f64().unwrap());
    let hits = first["hits"].as_array().unwrap();
    assert_eq!(hits.len(), 2);
    assert_eq!(hits[0]["line"], 2);
    assert_eq!(hits[0]["text"], "zebra zebra zebra crossing");
    assert_eq!(hits[0]["uri"], format!("mem://{many}#L2-2"));
    assert_eq!(hits[1]["line"], 3);
    assert_eq!(found["results"][1]["hits"][0]["line"], 2);
}

#[tokio::test]
async fn phrases_prefixes_and_operators_select_what_they_say() {
    let app = spawn_app().await;
    let phrase = put(&app, "please open the file now\n", json!({})).await;
    let apart = put(&app, "the file is open\n", json!({})).await;
    let prefix = put(&app, "the parser crashed\n", json!({})).await;
    wait_for_index(&app, None).await;
    assert_eq!(
        ids(&search(&app, &format!("q={}", enc("\"open the file\""))).await),
        std::slice::from_ref(&phrase)
    );
    let both = ids(&search(&app, "q=open%20file").await);
    assert_eq!(both.len(), 2);
    assert!(both.contains(&apart));
    let found = search(&app, &format!("q={}", enc("pars*"))).await;
    assert_eq!(ids(&found), std::slice::from_ref(&prefix));
    assert_eq!(found["results"][0]["hits"][0]["text"], "the parser crashed");
    assert_eq!(found["results"][0]["match"], "exact");
    // A bare word is a whole word: `pars` alone matches nothing as given,
    // and only the looser retry finds the parser, marked as such.
    let loose = search(&app, "q=pars").await;
    assert_eq!(ids(&loose), [prefix]);
    assert_eq!(loose["results"][0]["match"], "fuzzy");
    assert_eq!(
        ids(&search(&app, &format!("q={}", enc("file NOT please"))).await),
        std::slice::from_ref(&apart)
    );
    let either = ids(&search(&app, &format!("q={}", enc("crashed OR please"))).await);
    assert_eq!(either.len(), 2);
    // A group beside a word is an AND (FTS5 only joins bare phrases implicitly).
    let grouped = format!("q={}", enc("the (crashed OR please) now"));
    assert_eq!(ids(&search(&app, &grouped).await), [phrase]);
    let grouped = format!("q={}", enc("(open) file NOT (please)"));
    assert_eq!(ids(&search(&app, &grouped).await), [apart]);
}

/// A phrase copied from a log line of long tokens (base64): one word past
/// the index's 255 bytes makes the phrase unmatchable, and its looser retry,
/// twice as long as the query, is still made and finds the line.
#[tokio::test]
async fn a_phrase_with_a_word_too_long_to_index_is_retried_loosely() {
    let app = spawn_app().await;
    let (a, b, c) = ("dgee".repeat(40), "vcaa".repeat(20), "Zq9x".repeat(85));
    let line = format!("blob {a} {b} {c} end");
    let id = put(&app, &format!("header\n{line}\n"), json!({})).await;
    wait_for_index(&app, None).await;
    let phrase = format!("\"{a} {b} {c}\"");
    assert!(phrase.len() < 1024, "within the query limit");
    let found = search(&app, &format!("q={}", enc(&phrase))).await;
    assert_eq!(ids(&found), [id]);
    assert_eq!(found["results"][0]["match"], "fuzzy");
    // The hit is the line (shown up to the hit-text cap).
    let hit = found["results"][0]["hits"][0]["text"].as_str().unwrap();
    assert!(hit.starts_with(&format!("blob {a} vcaa")), "{hit}");
}

#[tokio::test]
async fn a_query_that_finds_nothing_is_retried_loosely_and_says_so() {
    let app = spawn_app().await;
    let timeouts = put(
        &app,
        "connection timeouts while reading the config\n",
        json!({}),
    )
    .await;
    let other = put(&app, "the build finished cleanly\n", json!({})).await;
    wait_for_index(&app, None).await;
    // No memory holds both words as written: any of their stems will do.
    let found = search(&app, "q=timeout%20configs").await;
    assert_eq!(ids(&found), std::slice::from_ref(&timeouts));
    assert_eq!(found["results"][0]["match"], "fuzzy");
    assert_eq!(
        found["results"][0]["hits"][0]["text"],
        "connection timeouts while reading the config"
    );
    // A query that matches as given is not loosened.
    let exact = search(&app, "q=build%20finished").await;
    assert_eq!(ids(&exact), [other]);
    assert_eq!(exact["results"][0]["match"], "exact");
    // Nothing close: still nothing.
    assert!(ids(&search(&app, "q=zanzibar").await).is_empty());
    // Words under NOT are not looked for.
    assert!(ids(&search(&app, &format!("q={}", enc("zanzibar NOT timeouts"))).await).is_empty());
}

#[tokio::test]
async fn a_typo_inside_a_word_is_forgiven() {
    let app = spawn_app().await;
    let config = put(&app, "reading the configuration file failed\n", json!({})).await;
    put(&app, "the build finished cleanly\n", json!({})).await;
    wait_for_index(&app, None).await;
    // A letter swapped mid-word: no stem of it is a prefix of the word.
    let found = search(&app, "q=cofniguration").await;
    assert_eq!(ids(&found), std::slice::from_ref(&config));
    assert_eq!(found["results"][0]["match"], "fuzzy");
    assert_eq!(
        found["results"][0]["hits"][0]["text"],
        "reading the configuration file failed"
    );
    let asked = search(&app, &format!("q={}", enc("cofniguration~ file"))).await;
    assert_eq!(ids(&asked), [config]);
    assert_eq!(asked["results"][0]["match"], "exact");
    let refused = app.get(&format!("/v1/search?q={}", enc("conf*~"))).await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST);
    assert_eq!(refused.error_code(), "invalid_query");
}

#[tokio::test]
async fn accents_and_case_are_folded_both_ways() {
    let app = spawn_app().await;
    let french = put(&app, "intro\nLe Café est prêt, Ångström\nfin\n", json!({})).await;
    let plain = put(&app, "the cafe is closed\n", json!({})).await;
    put(&app, "nothing to see\n", json!({})).await;
    wait_for_index(&app, None).await;
    for query in ["cafe", "café", "CAFÉ"] {
        let found = search(&app, &format!("q={}", enc(query))).await;
        let mut got = ids(&found);
        got.sort();
        let mut want = vec![french.clone(), plain.clone()];
        want.sort();
        assert_eq!(got, want, "{query}");
    }
    for query in ["pret", "prêt", "angstrom", "\"cafe est pret\""] {
        let found = search(&app, &format!("q={}", enc(query))).await;
        assert_eq!(ids(&found), std::slice::from_ref(&french), "{query}");
        assert_eq!(
            found["results"][0]["hits"][0]["line"], 2,
            "{query}: {found}"
        );
    }
}

#[tokio::test]
async fn malformed_queries_are_400_invalid_query_with_the_reason() {
    let app = spawn_app().await;
    put(&app, "some text\n", json!({})).await;
    for query in [
        "\"unterminated",
        "NOT text",
        "text AND",
        "(text",
        "*",
        "!!!",
        "a OR OR b",
        "NEAR(",
        "col:",
        "\"\"",
    ] {
        let resp = app.get(&format!("/v1/search?q={}", enc(query))).await;
        if resp.status == StatusCode::OK {
            continue; // translated into something safe (e.g. `col:` → "col")
        }
        assert_eq!(
            resp.status,
            StatusCode::BAD_REQUEST,
            "{query}: {}",
            String::from_utf8_lossy(&resp.body)
        );
        assert_eq!(resp.error_code(), "invalid_query", "{query}");
        assert!(!resp.json()["error"]["message"].as_str().unwrap().is_empty());
    }
    for query in ["\"unterminated", "NOT text", "text AND", "*", ""] {
        let resp = app.get(&format!("/v1/search?q={}", enc(query))).await;
        assert_eq!(resp.status, StatusCode::BAD_REQUEST, "{query}");
    }
    assert_eq!(app.get("/v1/search").await.status, StatusCode::BAD_REQUEST);
    assert_eq!(
        app.get("/v1/search?q=a&limit=0").await.status,
        StatusCode::BAD_REQUEST
    );
    // Characters FTS5 would read as syntax are searched as words.
    assert_eq!(
        app.get(&format!("/v1/search?q={}", enc("col:text ^x + {a} -b")))
            .await
            .status,
        StatusCode::OK
    );
}

#[tokio::test]
async fn a_search_can_wait_for_the_puts_before_it() {
    let app = spawn_app().await;
    let mut last = String::new();
    for n in 0..12 {
        last = put(
            &app,
            &format!("batch line {n}\nsentinelword{n} here\n"),
            json!({}),
        )
        .await;
    }
    // Right after the puts' answers: the search waits for the index first.
    let found = search(&app, "q=sentinelword11&wait_ms=10000").await;
    assert_eq!(found["indexed"], true, "{found}");
    assert_eq!(ids(&found), vec![last]);
    // Without `wait_ms` the answer says nothing about the index.
    let plain = search(&app, "q=sentinelword11").await;
    assert!(plain.get("indexed").is_none(), "{plain}");
    let resp = app.get("/v1/search?q=batch&wait_ms=10001").await;
    assert_eq!(resp.status, StatusCode::BAD_REQUEST);
    assert_eq!(resp.json()["error"]["field"], "wait_ms", "{}", resp.json());
}

#[tokio::test]
async fn filters_narrow_the_results() {
    let app = spawn_app().await;
    let a = put(&app, "needle one\n", json!({"type": "WEB_SCRAPE", "subtype": "curl", "tags": ["x"], "thread": "t1", "checkpoint": "c1", "directory": "/d1"})).await;
    let b = put(&app, "needle two\n", json!({"type": "TOOL_OUTPUT", "subtype": "grep", "tags": ["y"], "thread": "t2", "checkpoint": "c2", "directory": "/d2"})).await;
    wait_for_index(&app, None).await;
    assert_eq!(ids(&search(&app, "q=needle").await).len(), 2);
    for (filter, want) in [
        ("type=web_scrape", &a),
        ("subtype=grep", &b),
        ("tag=x", &a),
        ("thread=t2", &b),
        ("checkpoint=c1", &a),
        ("directory=%2Fd2", &b),
    ] {
        assert_eq!(
            ids(&search(&app, &format!("q=needle&{filter}")).await),
            vec![want.clone()],
            "{filter}"
        );
    }
    assert_eq!(ids(&search(&app, "q=needle&limit=1").await).len(), 1);
    assert!(ids(&search(&app, "q=needle&since=4000000000").await).is_empty());
    assert!(ids(&search(&app, "q=needle&until=1000").await).is_empty());
    assert_eq!(ids(&search(&app, "q=needle&since=1000").await).len(), 2);
}

#[tokio::test]
async fn hit_line_numbers_are_right_in_multi_frame_objects() {
    let app = spawn_app_with(tiny_frames).await;
    let content: String = (1..=300)
        .map(|n| {
            if n % 97 == 0 {
                format!("line {n} has the marker word quokka in it\n")
            } else {
                format!("filler line number {n}\n")
            }
        })
        .collect();
    let id = put(&app, &content, json!({})).await;
    wait_for_index(&app, None).await;
    let found = search(&app, "q=quokka").await;
    assert_eq!(ids(&found), [id]);
    let lines: Vec<u64> = found["results"][0]["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["line"].as_u64().unwrap())
        .collect();
    assert_eq!(lines, [97, 194, 291]);
    assert_eq!(
        found["results"][0]["hits"][1]["text"],
        "line 194 has the marker word quokka in it"
    );
    // A word cut by a frame boundary is still found: every line is longer than a few bytes.
    let found = search(&app, &format!("q={}", enc("\"filler line number 150\""))).await;
    assert_eq!(found["results"][0]["hits"][0]["line"], 150);
}

#[tokio::test]
async fn search_never_shows_another_namespace_or_a_deleted_memory() {
    let app = spawn_app_with(|c| c.api_keys = Some(format!("{ALPHA}:alpha,{BETA}:beta"))).await;
    let body = json!({"content": "shared secret platypus\n"});
    assert_eq!(
        app.put_json_as(ALPHA, body.clone()).await.status,
        StatusCode::CREATED
    );
    let only_beta = app
        .put_json_as(BETA, json!({"content": "beta only platypus\n"}))
        .await
        .json()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    wait_for_index(&app, Some(ALPHA)).await;
    let alpha = app.get_as("/v1/search?q=platypus", ALPHA).await.json();
    assert_eq!(alpha["results"].as_array().unwrap().len(), 1);
    assert!(!ids(&alpha).contains(&only_beta));
    // Same content in both namespaces: one object, indexed once, found by both.
    assert_eq!(
        app.put_json_as(BETA, body).await.status,
        StatusCode::CREATED
    );
    let beta = app.get_as("/v1/search?q=platypus", BETA).await.json();
    assert_eq!(ids(&beta).len(), 2);
    // Deleting alpha's memory hides it from alpha, not from beta.
    let shared = ids(&alpha)[0].clone();
    assert_eq!(
        app.delete_as(&format!("/v1/memories/{shared}"), ALPHA)
            .await
            .status,
        StatusCode::NO_CONTENT
    );
    assert!(ids(&app.get_as("/v1/search?q=platypus", ALPHA).await.json()).is_empty());
    assert!(ids(&app.get_as("/v1/search?q=platypus", BETA).await.json()).contains(&shared));
}

#[tokio::test]
async fn the_index_catches_up_after_a_restart() {
    let app = spawn_app_with(|c| c.search_index = false).await;
    let id = put(&app, "persisted wombat\n", json!({})).await;
    let stats = app.get("/v1/stats").await.json();
    assert_eq!(stats["search_index"]["pending_objects"], 1);
    assert_eq!(stats["search_index"]["pending_bytes"], 17);
    assert!(ids(&search(&app, "q=wombat").await).is_empty());
    let app = app.restart_with(|_| {}).await;
    wait_for_index(&app, None).await;
    assert_eq!(ids(&search(&app, "q=wombat").await), [id]);
}

#[tokio::test]
async fn refs_list_a_threads_memories_newest_first() {
    let app = spawn_app().await;
    let old = put(
        &app,
        "first\nsecond line\n",
        json!({"thread": "t", "title": "old"}),
    )
    .await;
    tokio::time::sleep(Duration::from_millis(5)).await;
    let new = put(
        &app,
        "another\n",
        json!({"thread": "t", "type": "DOCUMENT"}),
    )
    .await;
    put(
        &app,
        "elsewhere\n",
        json!({"thread": "u", "checkpoint": "c"}),
    )
    .await;
    let refs = app.get("/v1/refs?thread=t").await.json()["refs"].clone();
    let got: Vec<&str> = refs
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert_eq!(got, [new.as_str(), old.as_str()]);
    assert_eq!(refs[1]["title"], "old");
    assert_eq!(refs[0]["type"], "DOCUMENT");
    assert_eq!(refs[1]["uri"], format!("mem://{old}"));
    assert!(refs[1]["tokens"].as_u64().unwrap() > 0);
    let line = refs[1]["summary_line"].as_str().unwrap();
    assert!(!line.is_empty() && !line.contains('\n'));
    assert!(refs[0]["created_at"].as_str().unwrap().ends_with('Z'));
    assert_eq!(
        app.get("/v1/refs?thread=t&limit=1").await.json()["refs"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    assert_eq!(
        app.get("/v1/refs?checkpoint=c").await.json()["refs"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    assert!(
        app.get("/v1/refs?directory=nowhere").await.json()["refs"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    for bad in [
        "/v1/refs",
        "/v1/refs?thread=t&checkpoint=c",
        "/v1/refs?thread=t&limit=0",
    ] {
        let resp = app.get(bad).await;
        assert_eq!(resp.status, StatusCode::BAD_REQUEST, "{bad}");
    }
}
