//! OpenTelemetry traces (`docs/deploy.md`, "Traces") in a real trace backend: Arize Phoenix (PyPI
//! `arize-phoenix`, pinned by `tests/phoenix/requirements.txt`), whose local server takes OTLP
//! over HTTP and answers the spans it stored through its REST API. The gateway exports to it;
//! the tests read back what a person would see there.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use airlock_tests::Reply;
use airlock_tests::gateway::Frame;
use airlock_tests::world::{World, world_with};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// A span through Phoenix's eyes: its ids, parent, times (epoch milliseconds) and attributes.
#[derive(Clone, Debug)]
struct Span {
    name: String,
    trace_id: String,
    span_id: String,
    parent_id: Option<String>,
    start: i64,
    end: i64,
    attributes: Value,
}

impl Span {
    fn of(span: &Value) -> Span {
        Span {
            name: span["name"].as_str().unwrap_or_default().to_owned(),
            trace_id: span["context"]["trace_id"].as_str().unwrap_or_default().to_owned(),
            span_id: span["context"]["span_id"].as_str().unwrap_or_default().to_owned(),
            parent_id: span["parent_id"].as_str().map(str::to_owned),
            start: millis(&span["start_time"]),
            end: millis(&span["end_time"]),
            attributes: span["attributes"].clone(),
        }
    }

    /// An attribute by its dotted key (Phoenix answers them flat or nested).
    fn get(&self, key: &str) -> Option<&Value> {
        if let Some(value) = self.attributes.get(key) {
            return Some(value);
        }
        key.split('.').try_fold(&self.attributes, |at, part| at.get(part))
    }

    fn int(&self, key: &str) -> i64 {
        let value = self.get(key).unwrap_or_else(|| panic!("{key} of {self:?}"));
        value
            .as_i64()
            .or_else(|| value.as_str()?.parse().ok())
            .unwrap_or_else(|| panic!("{key}: {value}"))
    }

    fn text(&self, key: &str) -> &str {
        self.get(key).and_then(Value::as_str).unwrap_or_else(|| panic!("{key} of {self:?}"))
    }
}

/// An RFC 3339 time as epoch milliseconds.
fn millis(time: &Value) -> i64 {
    let time = time.as_str().unwrap_or_else(|| panic!("a time: {time}"));
    time.parse::<jiff::Timestamp>().unwrap_or_else(|e| panic!("{time}: {e}")).as_millisecond()
}

/// A Phoenix server of the test's own, in a directory of its own.
struct Phoenix {
    _child: Child,
    _dir: tempfile::TempDir,
    url: String,
}

/// A port nothing listens on now (Phoenix takes its ports by number, not 0).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

impl Phoenix {
    async fn start() -> Phoenix {
        let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
        let phoenix = repo.join("target/phoenix-venv/bin/phoenix");
        assert!(
            phoenix.exists(),
            "{} is missing: run tests/python-venv.sh target/phoenix-venv \
             tests/phoenix/requirements.txt arize-phoenix",
            phoenix.display()
        );
        let dir = tempfile::tempdir().unwrap();
        let port = free_port();
        let mut child = Command::new(phoenix)
            .arg("serve")
            .env("PHOENIX_WORKING_DIR", dir.path())
            .env("PHOENIX_HOST", "127.0.0.1")
            .env("PHOENIX_PORT", port.to_string())
            .env("PHOENIX_GRPC_PORT", free_port().to_string())
            .env("PHOENIX_TELEMETRY_ENABLED", "false")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("phoenix starts");
        // Uvicorn says when the server takes requests.
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let said = tokio::time::timeout(Duration::from_secs(120), async {
            let mut said = Vec::new();
            while let Some(line) = lines.next_line().await.unwrap() {
                if line.contains("Application startup complete") {
                    return Ok(());
                }
                said.push(line);
            }
            Err(said.join("\n"))
        });
        match said.await.expect("phoenix is up within two minutes") {
            Ok(()) => {}
            Err(said) => panic!("phoenix stopped before it took requests:\n{said}"),
        }
        // The rest of what it says is drained, so it never blocks on a full pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Phoenix { _child: child, _dir: dir, url: format!("http://127.0.0.1:{port}") }
    }

    /// Every span it stored.
    async fn spans(&self) -> Vec<Span> {
        let client = reqwest::Client::new();
        let (mut spans, mut cursor) = (Vec::new(), None::<String>);
        loop {
            let mut url = format!("{}/v1/projects/default/spans?limit=1000", self.url);
            if let Some(cursor) = &cursor {
                url.push_str(&format!("&cursor={cursor}"));
            }
            let res = client.get(url).send().await.unwrap();
            if res.status() == 404 {
                return spans; // no span came yet: the project does not exist
            }
            assert_eq!(res.status(), 200);
            let page: Value = res.json().await.unwrap();
            spans.extend(page["data"].as_array().unwrap().iter().map(Span::of));
            match page["next_cursor"].as_str() {
                Some(next) => cursor = Some(next.to_owned()),
                None => return spans,
            }
        }
    }

    /// Its spans once `holds` says they are all there (spans arrive in the exporter's batches,
    /// in their own time), for at most a minute.
    async fn until(&self, holds: impl Fn(&[Span]) -> bool) -> Vec<Span> {
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        loop {
            let spans = self.spans().await;
            if holds(&spans) {
                return spans;
            }
            assert!(std::time::Instant::now() < deadline, "the spans never came: {spans:#?}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

/// A gateway exporting to `endpoint`, in batches sent a tenth of a second after their first span.
async fn exporting(endpoint: &str, more: &[(&str, &str)]) -> World {
    let mut env =
        vec![("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint), ("OTEL_BSP_SCHEDULE_DELAY", "100")];
    env.extend_from_slice(more);
    world_with(&env).await
}

/// A parent whose model calls `agent`, a child whose model calls `echo`, both then answering.
async fn delegate(w: &World) -> String {
    w.mock.push(
        Reply::tool_call("t1", "agent", r#"{"name":"finder","prompt":"find x"}"#, 2).usage(40, 7),
    );
    w.mock.push(Reply::tool_call("t2", "echo", r#"{"text":"x is here"}"#, 1).usage(30, 5));
    w.mock.push(Reply::text("Child found x.", 2).usage(35, 4));
    w.mock.push(Reply::text("Parent done.", 1).usage(60, 2));
    let s = w.gw.session().await;
    w.run(&s, "delegate the search for x").await;
    s
}

fn of<'a>(spans: &'a [Span], session: &str) -> Vec<&'a Span> {
    spans
        .iter()
        .filter(|s| s.get("gen_ai.conversation.id").and_then(Value::as_str) == Some(session))
        .collect()
}

/// The log's usage: input and output tokens of its responses.
fn log_usage(log: &[Value]) -> (i64, i64) {
    let answers = log.iter().filter(|e| e["type"] == "assistant/message");
    answers.fold((0, 0), |(i, o), e| {
        let usage = &e["data"]["usage"];
        (
            i + usage["inputTokens"].as_i64().unwrap_or(0),
            o + usage["outputTokens"].as_i64().unwrap_or(0),
        )
    })
}

#[tokio::test]
#[ignore = "needs arize-phoenix in target/phoenix-venv (see .ci/run's fetch)"]
async fn a_turn_with_a_tool_call_and_a_subagent_is_one_trace_in_phoenix_without_contents() {
    let phoenix = Phoenix::start().await;
    let w = exporting(&phoenix.url, &[]).await;
    let s = delegate(&w).await;
    let turns =
        |spans: &[Span]| spans.iter().filter(|s| s.name.starts_with("invoke_agent")).count();
    let spans = phoenix.until(|spans| turns(spans) == 2 && spans.len() == 9).await;

    let parent = of(&spans, &s);
    let names = |spans: &[&Span]| {
        let mut names: Vec<String> = spans.iter().map(|s| s.name.clone()).collect();
        names.sort();
        names
    };
    assert_eq!(
        names(&parent),
        ["chat mock", "chat mock", "execute_tool agent", "invoke_agent airlock"]
    );
    let turn = parent.iter().find(|s| s.name.starts_with("invoke_agent")).unwrap();
    assert_eq!(turn.parent_id, None, "the turn is the trace's root");
    assert_eq!(turn.text("gen_ai.operation.name"), "invoke_agent");
    for child in parent.iter().filter(|s| !s.name.starts_with("invoke_agent")) {
        assert_eq!(
            child.parent_id.as_deref(),
            Some(turn.span_id.as_str()),
            "{} under the turn",
            child.name
        );
        assert_eq!(child.trace_id, turn.trace_id);
    }
    let log = w.gw.log(&s).await;
    let chats = parent.iter().filter(|s| s.name.starts_with("chat"));
    let tokens = chats.fold((0, 0), |(i, o), s| {
        (i + s.int("gen_ai.usage.input_tokens"), o + s.int("gen_ai.usage.output_tokens"))
    });
    assert_eq!(tokens, log_usage(&log), "the model calls' tokens are the log's usage");
    assert_eq!(tokens, (100, 9));
    assert_eq!(
        (turn.int("gen_ai.usage.input_tokens"), turn.int("gen_ai.usage.output_tokens")),
        tokens
    );

    // The subagent's turn is under the parent's `agent` call, in the same trace.
    let call = parent.iter().find(|s| s.name == "execute_tool agent").unwrap();
    assert_eq!(call.text("gen_ai.tool.call.id"), "t1");
    let child_turn =
        spans.iter().find(|s| s.name == "invoke_agent finder").expect("the child's turn, named");
    assert_eq!(child_turn.parent_id.as_deref(), Some(call.span_id.as_str()));
    assert_eq!(child_turn.trace_id, call.trace_id);
    let child = child_turn.text("gen_ai.conversation.id");
    let child_spans = of(&spans, child);
    assert_eq!(
        names(&child_spans),
        ["chat mock", "chat mock", "execute_tool echo", "invoke_agent finder"]
    );
    assert_eq!(log_usage(&w.gw.log(child).await), (65, 9));

    for span in &spans {
        for key in [
            "gen_ai.input.messages",
            "gen_ai.output.messages",
            "gen_ai.tool.call.arguments",
            "gen_ai.tool.call.result",
        ] {
            assert!(
                span.get(key).is_none(),
                "{} carries {key} without --otel-capture-content",
                span.name
            );
        }
    }
    let text =
        serde_json::to_string(&spans.iter().map(|s| &s.attributes).collect::<Vec<_>>()).unwrap();
    for content in ["delegate the search", "find x", "x is here", "Child found x.", "Parent done."]
    {
        assert!(!text.contains(content), "{content:?} is in a span");
    }
}

#[tokio::test]
#[ignore = "needs arize-phoenix in target/phoenix-venv (see .ci/run's fetch)"]
async fn with_otel_capture_content_the_spans_carry_the_messages() {
    let phoenix = Phoenix::start().await;
    let w =
        exporting(&phoenix.url, &[("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")])
            .await;
    let s = delegate(&w).await;
    let spans = phoenix.until(|spans| spans.len() == 9).await;
    let parent = of(&spans, &s);
    let turn = parent.iter().find(|s| s.name.starts_with("invoke_agent")).unwrap();
    assert!(turn.text("gen_ai.input.messages").contains("delegate the search for x"));
    assert!(turn.text("gen_ai.output.messages").contains("Parent done."));
    let echo = spans.iter().find(|s| s.name == "execute_tool echo").unwrap();
    assert_eq!(echo.text("gen_ai.tool.call.arguments"), r#"{"text":"x is here"}"#);
    assert!(echo.text("gen_ai.tool.call.result").contains("x is here"));
}

#[tokio::test]
#[ignore = "needs arize-phoenix in target/phoenix-venv (see .ci/run's fetch)"]
async fn a_traceparent_sent_by_a_client_is_the_turns_parent() {
    let phoenix = Phoenix::start().await;
    let w = exporting(&phoenix.url, &[]).await;
    w.mock.push(Reply::text("Hello.", 1));
    let s = w.gw.session().await;
    let (caller_trace, caller_span) = ("4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7");
    let res =
        w.gw.client
            .post(w.gw.url(&format!("/v1/sessions/{s}/messages")))
            .header("traceparent", format!("00-{caller_trace}-{caller_span}-01"))
            .json(&json!({"content": "hi"}))
            .send()
            .await
            .unwrap();
    assert_eq!(res.status(), 202);
    let spans = phoenix
        .until(|spans| {
            spans.iter().any(|s| s.name.starts_with("invoke_agent"))
                && spans.iter().any(|s| s.name.starts_with("POST"))
        })
        .await;
    let turn = spans.iter().find(|s| s.name.starts_with("invoke_agent")).unwrap();
    assert_eq!(turn.trace_id, caller_trace, "the turn is in the caller's trace");
    assert_eq!(turn.parent_id.as_deref(), Some(caller_span), "under the caller's span");
    let request = spans.iter().find(|s| s.name == "POST /v1/sessions/{id}/messages").unwrap();
    assert_eq!(
        (request.trace_id.as_str(), request.parent_id.as_deref()),
        (caller_trace, Some(caller_span))
    );
    assert_eq!(request.int("http.response.status_code"), 202);
    let stored = w.gw.log(&s).await;
    let user = stored.iter().find(|e| e["type"] == "user/message").unwrap();
    assert_eq!(
        user["data"]["source"]["traceparent"],
        format!("00-{caller_trace}-{caller_span}-01")
    );
}

#[tokio::test]
async fn a_collector_that_is_down_slows_no_turn_and_its_dropped_spans_are_counted() {
    // Nothing listens on the collector's port.
    let endpoint = format!("http://127.0.0.1:{}", free_port());
    let w = exporting(&endpoint, &[]).await;
    for _ in 0..3 {
        w.mock.push(Reply::text("Hello.", 1));
    }
    let s = w.gw.session().await;
    for _ in 0..3 {
        let result = w.run(&s, "hi").await;
        assert_eq!(result["finishReason"], "completed", "{result}");
    }
    // Each run's three spans (its request's, its model call's and its turn's) are dropped once
    // the exporter finds the collector down; the counter shows up with the first.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let dropped = loop {
        let text =
            w.gw.client.get(w.gw.url("/metrics")).send().await.unwrap().text().await.unwrap();
        let dropped = text.lines().find_map(|line| {
            let value =
                line.strip_prefix(r#"airlock_otel_spans_dropped_total{reason="export_failed"} "#)?;
            value.trim().parse::<f64>().ok()
        });
        if dropped.is_some_and(|n| n >= 9.0) || std::time::Instant::now() > deadline {
            break dropped;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(dropped, Some(9.0), "every span of the three runs was dropped and counted");
    assert_eq!(w.gw.metric("airlock_otel_spans_exported_total").await, 0.0);
}

#[tokio::test]
#[ignore = "needs arize-phoenix in target/phoenix-venv (see .ci/run's fetch)"]
async fn a_turn_a_crash_cut_in_two_is_one_span_timed_by_its_log() {
    let phoenix = Phoenix::start().await;
    let w = exporting(&phoenix.url, &[]).await;
    w.mock.push(Reply::text("one two three four", 4).delay(Duration::from_secs(60)));
    let s = w.gw.session().await;
    let mut sse = w.gw.sse(&s, None).await;
    w.send(&s, json!({"content": "first"})).await;
    sse.until(|f| matches!(f, Frame::Event(_, e) if e["type"] == "assistant/chunk")).await;
    drop(sse);

    // The new process ends the turn its predecessor began (interrupted) from the log alone.
    let World { dir: _dir, mock: _mock, gw } = w;
    let gw = gw.crash_and_restart();
    let path = format!("/v1/sessions/{s}/events?format=json&limit=5000");
    let ended = |page: &Value| {
        page["events"]
            .as_array()
            .is_some_and(|events| events.iter().any(|e| e["type"] == "turn/end"))
    };
    let log = gw.until(&path, ended).await["events"].as_array().unwrap().clone();
    let time =
        |kind: &str| log.iter().find(|e| e["type"] == kind).unwrap()["time"].as_i64().unwrap();

    let turns =
        |spans: &[Span]| spans.iter().filter(|s| s.name.starts_with("invoke_agent")).count();
    let spans = phoenix
        .until(|spans| turns(spans) == 1 && spans.iter().any(|s| s.name.starts_with("chat")))
        .await;
    let turn = spans.iter().find(|s| s.name.starts_with("invoke_agent")).unwrap();
    assert_eq!(turn.text("airlock.turn.end_reason"), "interrupted");
    assert_eq!((turn.start, turn.end), (time("turn/start"), time("turn/end")), "the log's times");
    let chat = spans.iter().find(|s| s.name.starts_with("chat")).unwrap();
    assert_eq!(chat.parent_id.as_deref(), Some(turn.span_id.as_str()));
    assert_eq!(chat.start, time("step/start"));
}
