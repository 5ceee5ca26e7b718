//! summarize_file against a stand-in for the Anthropic API on loopback: the request it makes,
//! the cache, and every failure the API can answer with. Every test counts the requests.

use crate::common::Scratch;
use crate::standin::{Reply, StandIn};
use scratchpad_mcp::summariser::AnthropicConfig;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

const KEY: &str = "sk-ant-test-DO-NOT-LEAK-7f3a";

fn scratch(standin: &StandIn, key: Option<&str>) -> Scratch {
    Scratch::with_anthropic(AnthropicConfig {
        api_key: key.map(str::to_owned),
        base_url: standin.base_url(),
        model: "claude-haiku-5-5".into(),
    })
}

fn long_text(seed: &str) -> String {
    (0..400)
        .map(|i| format!("{seed} paragraph {i}: the plan says to ship on Friday.\n"))
        .collect()
}

fn summarize(s: &Scratch) -> Result<Value, String> {
    s.call(
        "summarize_file",
        json!({ "agent_id": "a", "path": "doc.md" }),
    )
}

fn assert_no_key(text: &str) {
    assert!(!text.contains(KEY), "the key leaked: {text}");
}

#[test]
fn a_summary_is_requested_once_and_then_served_from_the_cache() {
    let standin = StandIn::start(vec![Reply::summary("Ship on Friday.")], None);
    let mut s = scratch(&standin, Some(KEY));
    s.write("a", "doc.md", &long_text("v1"));

    let first = summarize(&s).unwrap();
    assert_eq!(
        first,
        json!({ "path": "doc.md", "version": 1, "summarized": true, "summary": "Ship on Friday.",
                "cached": false, "model": "claude-haiku-5-5" })
    );
    assert_eq!(standin.count(), 1);

    let request = &standin.received()[0];
    assert_eq!(
        (request.method.as_str(), request.path.as_str()),
        ("POST", "/v1/messages")
    );
    assert_eq!(request.header("x-api-key"), Some(KEY));
    assert_eq!(request.header("anthropic-version"), Some("2023-06-01"));
    let body: Value = serde_json::from_str(&request.body).unwrap();
    assert_eq!(body["model"], "claude-haiku-5-5");
    assert_eq!(body["max_tokens"], 1024);
    assert!(body["system"].as_str().unwrap().contains("never follow"));
    let prompt = body["messages"][0]["content"].as_str().unwrap();
    assert!(prompt.contains("<document>\nv1 paragraph 0:") && prompt.ends_with("</document>"));
    for sampling in ["temperature", "top_p", "top_k"] {
        assert!(body.get(sampling).is_none(), "{sampling} is not sent");
    }

    let again = summarize(&s).unwrap();
    assert_eq!(
        (again["cached"].as_bool(), again["summary"].as_str()),
        (Some(true), Some("Ship on Friday."))
    );
    assert_eq!(standin.count(), 1, "a repeat makes no request");

    s.restart();
    assert_eq!(summarize(&s).unwrap()["cached"], true);
    assert_eq!(standin.count(), 1, "the cache survives a restart");
}

#[test]
fn a_new_version_needs_a_new_summary_and_a_delete_drops_it() {
    let standin = StandIn::start(vec![], Some(Reply::summary("sum")));
    let s = scratch(&standin, Some(KEY));
    s.write("a", "doc.md", &long_text("v1"));
    summarize(&s).unwrap();
    s.write("a", "doc.md", &long_text("v2"));
    let second = summarize(&s).unwrap();
    assert_eq!(
        (second["version"].as_u64(), second["cached"].as_bool()),
        (Some(2), Some(false))
    );
    assert_eq!(standin.count(), 2);

    s.ok("delete_file", json!({ "agent_id": "a", "path": "doc.md" }));
    let db = crate::common::sql(&s.db());
    let left: i64 = db
        .query_row("SELECT count(*) FROM summaries", [], |r| r.get(0))
        .unwrap();
    assert_eq!(left, 0, "delete_file removes cached summaries");
}

#[test]
fn a_short_file_needs_no_request_and_no_key() {
    let standin = StandIn::start(vec![], None);
    let s = scratch(&standin, None);
    s.write("a", "doc.md", "short");
    assert_eq!(summarize(&s).unwrap()["content"], "short");
    assert_eq!(standin.count(), 0);
}

#[test]
fn without_a_key_no_request_is_made() {
    let standin = StandIn::start(vec![], Some(Reply::summary("never")));
    for key in [None, Some(""), Some("   ")] {
        let s = scratch(&standin, key);
        s.write("a", "doc.md", &long_text("v1"));
        let e = summarize(&s).unwrap_err();
        assert!(
            e.starts_with("summarize_file needs ANTHROPIC_API_KEY"),
            "{e}"
        );
    }
    assert_eq!(standin.count(), 0);
}

#[test]
fn rate_limits_honour_retry_after() {
    let standin = StandIn::start(
        vec![
            Reply::status(429, r#"{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}"#)
                .header("retry-after", "1"),
            Reply::summary("after the wait"),
        ],
        None,
    );
    let s = scratch(&standin, Some(KEY));
    s.write("a", "doc.md", &long_text("v1"));
    let started = Instant::now();
    assert_eq!(summarize(&s).unwrap()["summary"], "after the wait");
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "waited as told"
    );
    assert_eq!(standin.count(), 2);
}

#[test]
fn overload_is_retried_then_succeeds() {
    let overloaded = Reply::status(
        529,
        r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
    );
    let standin = StandIn::start(
        vec![overloaded.clone(), overloaded, Reply::summary("third time")],
        None,
    );
    let s = scratch(&standin, Some(KEY));
    s.write("a", "doc.md", &long_text("v1"));
    assert_eq!(summarize(&s).unwrap()["summary"], "third time");
    assert_eq!(standin.count(), 3);
}

#[test]
fn endless_overload_gives_up_within_the_bound_and_caches_nothing() {
    let standin = StandIn::start(
        vec![],
        Some(Reply::status(529, r#"{"error":{"message":"Overloaded"}}"#)),
    );
    let s = scratch(&standin, Some(KEY));
    s.write("a", "doc.md", &long_text("v1"));
    let started = Instant::now();
    let e = summarize(&s).unwrap_err();
    assert_eq!(
        e,
        "the Anthropic API is unavailable or overloaded (HTTP 529); gave up after 3 attempt(s), try again later"
    );
    assert!(started.elapsed() < Duration::from_secs(30));
    assert_eq!(standin.count(), 3);
    assert_eq!(
        s.ok("read_file", json!({ "agent_id": "a", "path": "doc.md" }))["current_version"],
        1
    );
}

#[test]
fn a_spent_limit_is_not_retried() {
    let standin = StandIn::start(
        vec![Reply::status(
            429,
            r#"{"type":"error","error":{"type":"rate_limit_error","message":"You have reached your specified API usage limits. You will regain access on 2026-12-01."}}"#,
        )],
        Some(Reply::summary("never")),
    );
    let s = scratch(&standin, Some(KEY));
    s.write("a", "doc.md", &long_text("v1"));
    let e = summarize(&s).unwrap_err();
    assert!(e.contains("spend limit is reached"), "{e}");
    assert_eq!(standin.count(), 1);
}

#[test]
fn a_refused_key_says_so_without_the_key() {
    let standin = StandIn::start(
        vec![Reply::status(
            401,
            r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#,
        )],
        Some(Reply::summary("never")),
    );
    let s = scratch(&standin, Some(KEY));
    s.write("a", "doc.md", &long_text("v1"));
    let e = summarize(&s).unwrap_err();
    assert_eq!(
        e,
        "the Anthropic API refused the key (HTTP 401); check ANTHROPIC_API_KEY"
    );
    assert_eq!(standin.count(), 1);
}

#[test]
fn malformed_and_cut_off_answers_are_clear_errors() {
    let good = Reply::summary("complete").body;
    let standin = StandIn::start(
        vec![
            Reply::status(200, &good[..good.len() / 2]),
            Reply::status(200, &good).cut_at(good.len() / 2),
            Reply::status(200, r#"{"content":[{"type":"tool_use","id":"x"}]}"#),
        ],
        None,
    );
    let s = scratch(&standin, Some(KEY));
    s.write("a", "doc.md", &long_text("v1"));
    assert_eq!(
        summarize(&s).unwrap_err(),
        "the Anthropic API's answer was not the expected JSON (cut off?)"
    );
    assert_eq!(
        summarize(&s).unwrap_err(),
        "the Anthropic API's answer was cut off"
    );
    assert_eq!(
        summarize(&s).unwrap_err(),
        "the model's answer held no text"
    );
    assert_eq!(standin.count(), 3, "none of these is retried");
}

#[test]
fn two_concurrent_calls_share_one_request() {
    let standin = StandIn::start(
        vec![Reply::summary("shared").after(Duration::from_millis(600))],
        Some(Reply::summary("a second request")),
    );
    let s = scratch(&standin, Some(KEY));
    s.write("a", "doc.md", &long_text("v1"));
    let answers: Vec<Value> = std::thread::scope(|scope| {
        let calls: Vec<_> = (0..2)
            .map(|_| scope.spawn(|| summarize(&s).unwrap()))
            .collect();
        calls.into_iter().map(|c| c.join().unwrap()).collect()
    });
    assert!(
        answers.iter().all(|a| a["summary"] == "shared"),
        "{answers:?}"
    );
    assert_eq!(standin.count(), 1);
}

#[test]
fn the_key_appears_in_no_result_or_error() {
    let standin = StandIn::start(
        vec![
            Reply::summary("fine"),
            Reply::status(
                401,
                &format!(r#"{{"error":{{"message":"bad key {KEY}"}}}}"#),
            ),
            Reply::status(400, r#"{"error":{"message":"prompt is too long"}}"#),
        ],
        None,
    );
    let s = scratch(&standin, Some(KEY));
    s.write("a", "doc.md", &long_text("v1"));
    assert_no_key(&summarize(&s).unwrap().to_string());
    s.write("a", "doc.md", &long_text("v2"));
    assert_no_key(&summarize(&s).unwrap_err());
    s.write("a", "doc.md", &long_text("v3"));
    let e = summarize(&s).unwrap_err();
    assert_eq!(
        e,
        "the Anthropic API rejected the request (HTTP 400: prompt is too long)"
    );
    assert_no_key(&e);
}

#[test]
fn files_too_long_for_the_model_are_refused_before_any_request() {
    let standin = StandIn::start(vec![], Some(Reply::summary("never")));
    let s = scratch(&standin, Some(KEY));
    s.write("a", "doc.md", &"x".repeat(600_001));
    let e = summarize(&s).unwrap_err();
    assert!(
        e.starts_with("\"doc.md\" is 600001 characters; summarize_file takes at most 600000"),
        "{e}"
    );
    assert_eq!(standin.count(), 0);
}
