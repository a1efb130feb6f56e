//! The HTTP API in-process on a real port: the SSE log, the queue and receipts, idle cancel,
//! a restart, metrics. Resume, idempotency and refusals run against the binary in `tests/`.

use crate::common;

use serde_json::{Value, json};

#[tokio::test]
async fn message_is_acknowledged_with_id_and_seq_and_sse_shows_the_canonical_order() {
    let (_dir, gw) = common::fresh().await;
    let s = gw.session().await;
    let mut sse = gw.sse(&s, "", None).await;
    let status = sse.next().await;
    assert_eq!((status.event.as_str(), status.data.contains("idle")), ("session.status", true));

    let (code, receipt) =
        gw.post(&format!("/v1/sessions/{s}/messages"), json!({"content": "hello"})).await;
    assert_eq!(code, 202);
    assert_eq!(receipt["seq"], 0);
    assert!(receipt["messageId"].is_string());

    let frames = sse.until_idle().await;
    let lines: Vec<&str> =
        frames.iter().map(|(_, l)| l.as_str()).filter(|l| *l != "session.queue").collect();
    let chunks = lines.iter().filter(|l| **l == "assistant/chunk").count();
    assert!(chunks >= 3, "streamed in several chunks: {lines:?}");
    // Status changes come between the events they follow.
    let mut expected = airlock_tests::text_turn(chunks);
    expected.insert(1, "status running");
    expected.push("status idle");
    assert_eq!(lines, expected);
    let ids: Vec<u64> = frames.iter().filter_map(|(id, _)| *id).collect();
    assert_eq!(ids, (0..ids.len() as u64).collect::<Vec<_>>(), "contiguous seqs as SSE ids");
}

#[tokio::test]
async fn sessions_survive_a_restart_and_their_seqs_continue() {
    let (_dir, gw) = common::fresh().await;
    let s = gw.session().await;
    let before = gw.turn(&s, "before").await.1 as u64;

    let gw = gw.restart().await;
    let (code, session) = gw.get(&format!("/v1/sessions/{s}")).await;
    assert_eq!(code, 200);
    assert_eq!(session["lastSeq"], before - 1);
    let mut sse = gw.sse(&s, "", Some(before - 1)).await;
    let (code, receipt) =
        gw.post(&format!("/v1/sessions/{s}/messages"), json!({"content": "after"})).await;
    assert_eq!((code, receipt["seq"].as_u64()), (202, Some(before)));
    let frames = sse.until_idle().await;
    assert!(
        !frames.iter().any(|(_, l)| l == "request/header"),
        "a session at rest goes on after a restart as if there had been none: same header, none logged"
    );
    let log = gw.log(&s).await;
    let turns: Vec<&Value> =
        log.iter().filter(|e| e["type"] == "turn/start").map(|e| &e["data"]["turn"]).collect();
    assert_eq!(turns, [1, 2]);
}

#[tokio::test]
async fn metrics_count_sessions_turns_enqueues_commits_and_subscribers() {
    let (_dir, gw) = common::fresh().await;
    let s = gw.session().await;
    let (_open, _) = gw.turn(&s, "count me").await;
    let res = gw.client.get(gw.url("/metrics")).send().await.unwrap();
    assert_eq!(res.status(), 200);
    let text = res.text().await.unwrap();
    // A metric's value summed over its labels.
    let value = |name: &str| -> f64 {
        let samples = text.lines().filter(|l| {
            l.strip_prefix(name).is_some_and(|rest| rest.starts_with(' ') || rest.starts_with('{'))
        });
        samples.map(|l| l.rsplit(' ').next().unwrap().parse::<f64>().unwrap()).sum()
    };
    assert!(value("airlock_turns_total") >= 1.0);
    assert!(value("airlock_sessions") >= 1.0);
    assert!(value("airlock_sse_subscribers") >= 1.0, "this test's stream is open");
    assert!(value("airlock_enqueue_seconds_count") >= 1.0);
    assert!(value("airlock_commit_batch_size_count") >= 1.0);
}

#[tokio::test]
async fn graceful_shutdown_ends_open_streams_and_keeps_every_commit() {
    let (_dir, gw) = common::fresh().await;
    let s = gw.session().await;
    let (mut sse, seen) = gw.turn(&s, "bye").await;
    let hub = gw.client.get(gw.url("/v1/events")).send().await.unwrap();
    assert_eq!(hub.status(), 200);
    let gw = gw.restart().await; // its stop returns only once every stream has closed
    assert!(sse.ended().await, "the open stream ended so its client can resume elsewhere");
    assert_eq!(gw.log(&s).await.len(), seen);
}

/// A core that traps (here: out of fuel on its first call) is the core's failure, not the
/// store's: 500 `core-failed`, and no session is left behind half made.
#[tokio::test]
async fn a_core_trap_answers_500_core_failed_and_leaves_no_session() {
    let dir = tempfile::tempdir().unwrap();
    let host =
        airlock_sandbox::core_host::CoreHost::new(Some(&airlock_tests::gateway::compiled_cache()))
            .unwrap()
            .with_fuel(1);
    let gw = common::start_with_host(dir.path().join("trap.db"), host).await;
    let (code, error) = gw.post("/v1/sessions", json!({"sessionId": "s"})).await;
    assert_eq!((code, &error["error"]["code"]), (500, &json!("core-failed")), "{error}");
    assert!(error["error"]["message"].as_str().unwrap().contains("fuel"), "{error}");
    assert_eq!(gw.get("/v1/sessions/s").await.0, 404, "nothing was stored");
}

/// Sends that arrive together into one session are fed one after another and committed together;
/// each is answered its own message id and seq, with an idempotency key kept for its own send.
#[tokio::test]
async fn concurrent_sends_into_one_session_each_get_their_own_seq_and_receipt() {
    let (_dir, gw) = common::fresh().await;
    let s = gw.session().await;
    let messages = format!("/v1/sessions/{s}/messages");
    let sends = (0..64).map(|i| {
        let mut request = gw.client.post(gw.url(&messages));
        if i % 8 == 0 {
            request = request.header("idempotency-key", format!("key-{i}"));
        }
        async move {
            let body = json!({"content": format!("note {i}"), "delivery": "inject"});
            let res = request.json(&body).send().await.unwrap();
            assert_eq!(res.status(), 202);
            res.json::<Value>().await.unwrap()
        }
    });
    let answers = futures::future::join_all(sends).await;
    let mut seqs: Vec<u64> = answers.iter().map(|a| a["seq"].as_u64().unwrap()).collect();
    seqs.sort_unstable();
    assert_eq!(seqs, (0..64).collect::<Vec<_>>(), "one insert splice each, no gap, no repeat");
    for answer in &answers {
        let id = answer["messageId"].as_str().unwrap();
        let (code, receipt) = gw.get(&format!("{messages}/{id}")).await;
        assert_eq!((code, &receipt["state"]), (200, &json!("pending")), "{receipt}");
        assert_eq!(receipt["insertedSeq"], answer["seq"], "{receipt}");
    }
    // A keyed send sent again is answered with its own first answer.
    let again = gw
        .client
        .post(gw.url(&messages))
        .header("idempotency-key", "key-8")
        .json(&json!({"content": "note 8", "delivery": "inject"}))
        .send()
        .await
        .unwrap();
    let replayed: Value = again.json().await.unwrap();
    assert_eq!(replayed, answers[8]);
    assert_eq!(gw.log(&s).await.len(), 64, "the replay wrote nothing");
}

#[tokio::test]
async fn a_wrong_method_a_long_target_and_long_headers_answer_the_json_error_shape() {
    let (_dir, gw) = common::fresh().await;
    let code_of = async |res: reqwest::Response| {
        let status = res.status().as_u16();
        let body: serde_json::Value = res.json().await.expect("a JSON body");
        (status, body["error"]["code"].as_str().unwrap_or_default().to_owned())
    };
    let wrong_method = gw.client.put(gw.url("/v1/sessions")).send().await.unwrap();
    assert_eq!(code_of(wrong_method).await, (405, "method-not-allowed".to_owned()));
    let long = format!("/v1/sessions?cursor={}", "x".repeat(9_000));
    let long_target = gw.client.get(gw.url(&long)).send().await.unwrap();
    assert_eq!(code_of(long_target).await, (414, "uri-too-long".to_owned()));
    let mut many = gw.client.get(gw.url("/v1/sessions"));
    for i in 0..40 {
        many = many.header(format!("x-filler-{i}"), "y".repeat(1_000));
    }
    let long_headers = many.send().await.unwrap();
    assert_eq!(code_of(long_headers).await, (431, "headers-too-large".to_owned()));
    let unknown = gw.client.get(gw.url("/nowhere")).send().await.unwrap();
    assert_eq!(code_of(unknown).await, (404, "not-found".to_owned()));
}

#[tokio::test]
async fn a_bad_content_is_400_in_a_sentence_naming_the_field() {
    let (_dir, gw) = common::fresh().await;
    let s = gw.session().await;
    let messages = format!("/v1/sessions/{s}/messages");
    let (code, error) = gw.post(&messages, json!({"content": 5})).await;
    assert_eq!(code, 400);
    assert_eq!(error["error"]["details"]["field"], "content");
    let message = error["error"]["message"].as_str().unwrap();
    assert!(message.contains("content must be a string or a list of blocks"), "{message}");
    assert!(!message.contains("variant"), "{message}");
    let (code, error) = gw.post(&messages, json!({"content": [{"type": "nope"}]})).await;
    assert_eq!(code, 400);
    assert!(error["error"]["message"].as_str().unwrap().contains("content block 0"), "{error}");
    // A session id that is not a plain name.
    for id in ["a\u{0}b", "../../etc/passwd", ""] {
        let (code, error) = gw.post("/v1/sessions", json!({"sessionId": id})).await;
        assert_eq!(
            (code, &error["error"]["details"]["field"]),
            (400, &json!("sessionId")),
            "{id:?}"
        );
    }
}

#[tokio::test]
async fn a_message_carries_only_non_empty_text_and_base64_images_of_a_known_type() {
    let (_dir, gw) = common::fresh().await;
    let s = gw.session().await;
    let messages = format!("/v1/sessions/{s}/messages");
    let refused = [
        (json!(""), "content is empty"),
        (json!([]), "content has no blocks"),
        (json!([{"type": "text", "text": "hi"}, {"type": "text", "text": ""}]), "content block 1"),
        (json!([{"type": "reasoning", "text": "hm"}]), "only `text` and `image` blocks"),
        (json!([{"type": "image", "mediaType": "image/tiff", "data": "AAAA"}]), "image/tiff"),
        (json!([{"type": "image", "mediaType": "image/png", "data": "AAA"}]), "base64"),
    ];
    for (content, says) in refused {
        let (code, error) = gw.post(&messages, json!({"content": content})).await;
        let message = error["error"]["message"].as_str().unwrap_or_default();
        assert_eq!(code, 400, "{content}: {error}");
        assert!(message.contains(says), "{content}: {message}");
    }
    let image = json!([{"type": "text", "text": "see"},
        {"type": "image", "mediaType": "image/png", "data": "iVBORw0KGgo="}]);
    let (code, _) = gw.post(&messages, json!({"content": image})).await;
    assert_eq!(code, 202);
}

#[tokio::test]
async fn a_whole_number_written_with_a_fraction_of_zero_is_taken_and_a_page_size_out_of_range_is_refused()
 {
    let (_dir, gw) = common::fresh().await;
    let s = gw.session().await;
    let goal = json!({"objective": "count", "maxRounds": 3.0});
    let res = gw.client.put(gw.url(&format!("/v1/sessions/{s}/goal"))).json(&goal).send().await;
    let body: serde_json::Value = res.unwrap().json().await.unwrap();
    assert_eq!(body["maxRounds"], 3, "{body}");
    let half = json!({"objective": "count", "maxRounds": 2.5});
    let res = gw.client.put(gw.url(&format!("/v1/sessions/{s}/goal"))).json(&half).send().await;
    assert_eq!(res.unwrap().status(), 400);
    for query in ["limit=0", "limit=1001", "limit=99999999999999999999999"] {
        let (code, error) = gw.get(&format!("/v1/sessions?{query}")).await;
        assert_eq!((code, &error["error"]["details"]["field"]), (400, &json!("limit")), "{query}");
    }
    let (code, error) = gw.get(&format!("/v1/sessions/{s}/events?format=xml")).await;
    assert_eq!((code, &error["error"]["details"]["field"]), (400, &json!("format")));
    let res = gw
        .client
        .get(gw.url(&format!("/v1/sessions/{s}/events")))
        .header("last-event-id", "1e3")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 400, "Last-Event-ID is digits only");
}

#[tokio::test]
async fn openapi_json_names_the_tools_this_gateway_has_and_the_models_it_can_run() {
    let (_dir, gw) = common::fresh().await;
    let (_, doc) = gw.get("/openapi.json").await;
    let schemas = &doc["components"]["schemas"];
    let names = |at: &str| -> Vec<String> {
        let names = schemas.pointer(at).and_then(Value::as_array);
        let names = names.unwrap_or_else(|| panic!("{at} lists the tools: {schemas}"));
        names.iter().filter_map(|t| t.as_str().map(str::to_owned)).collect()
    };
    let (_, listed) = gw.get("/v1/tools").await;
    let listed: Vec<String> = listed["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(names("/ToolChoice/oneOf/0/enum"), listed, "a tool by name");
    assert_eq!(names("/ToolPolicy/properties/name/enum"), listed, "a tool with a policy");
    assert_eq!(names("/ClientTool/properties/name/not/enum"), listed, "no client tool takes one");
    let pattern = schemas["CreateBody"]["properties"]["model"]["pattern"].as_str().unwrap();
    assert!(pattern.contains("demo"), "{pattern}");
}
