//! The web demo in a real browser: Debian's Chromium driven by playwright-core
//! (`web-demo/browser-test/drive.mjs`) against a real gateway and the mock model.
//!
//! Ignored by default because it needs Chromium and the npm package; `.ci/run` installs both and
//! runs it with `cargo test --workspace --test browser -- --ignored`.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use airlock_tests::Reply;
use airlock_tests::world::{World, held, world_with};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

/// The page, through the driver script.
struct Page {
    _node: Child,
    stdin: ChildStdin,
    stdout: Lines<BufReader<ChildStdout>>,
}

impl Page {
    fn launch() -> Page {
        let script = web_demo().join("browser-test/drive.mjs");
        let mut node = Command::new("node")
            .arg(&script)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("node runs (install Node.js and `npm ci` in web-demo/browser-test)");
        let stdin = node.stdin.take().unwrap();
        let stdout = BufReader::new(node.stdout.take().unwrap()).lines();
        Page { _node: node, stdin, stdout }
    }

    /// Runs one command; panics with the driver's error.
    async fn run(&mut self, command: Value) -> Value {
        self.stdin.write_all(format!("{command}\n").as_bytes()).await.unwrap();
        let line = self.stdout.next_line().await.unwrap().expect("the driver answers");
        let answer: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(answer["ok"], true, "{command}: {}", answer["error"]);
        answer["value"].clone()
    }

    async fn wait_text(&mut self, selector: &str, text: &str) {
        self.run(json!({"do": "waitText", "selector": selector, "text": text})).await;
    }

    async fn texts(&mut self, selector: &str) -> Vec<String> {
        let value = self.run(json!({"do": "texts", "selector": selector})).await;
        serde_json::from_value(value).unwrap()
    }

    async fn send(&mut self, text: &str, delivery: &str) {
        self.run(json!({"do": "send", "text": text, "delivery": delivery})).await;
    }
}

fn web_demo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../web-demo")
}

/// The assistant text of each step as the log has it: the committed message, or the streamed
/// chunks of one that never committed (a crash mid-stream).
fn answers(log: &[Value]) -> Vec<String> {
    let mut answers = Vec::new();
    let mut streamed = String::new();
    for event in log {
        match event["type"].as_str() {
            Some("assistant/chunk") if event["data"]["chunk"]["type"] == "text-delta" => {
                streamed += event["data"]["chunk"]["text"].as_str().unwrap();
            }
            Some("assistant/message") => {
                let content = event["data"]["message"]["content"].as_array().unwrap();
                let text: String = content
                    .iter()
                    .filter(|b| b["type"] == "text")
                    .filter_map(|b| b["text"].as_str())
                    .collect();
                answers.push(text);
                streamed.clear();
            }
            Some("turn/end") if !streamed.is_empty() => answers.push(std::mem::take(&mut streamed)),
            _ => {}
        }
    }
    answers
}

/// The conversation as the page shows it, one string per bubble, card or line.
async fn conversation(page: &mut Page) -> Vec<String> {
    page.texts("#conversation > *").await
}

#[tokio::test]
#[ignore = "needs Chromium and playwright-core; .ci/run installs them"]
async fn web_demo_streams_steers_cancels_survives_a_restart_and_reloads_the_same_view() {
    let w = world_with(&[("AIRLOCK_MODEL", "openai:mock")]).await;
    let mut page = Page::launch();
    page.run(json!({"do": "open", "url": w.gw.url("/")})).await;
    let session = page.run(json!({"do": "newSession"})).await;
    let session = session.as_str().unwrap().to_owned();

    // A message, and the mock's answer streamed in.
    w.mock.push(Reply::text("Hello from the mock model today.", 4));
    page.send("hi there", "followup").await;
    page.wait_text(".msg.assistant", "Hello from the mock model today.").await;
    page.wait_text(".turn-end", "completed").await;

    // A second message queued while the first streams, then promoted to steering.
    let (first, gate) = held("A long answer");
    w.mock.push(first).push(Reply::text("Steered as asked.", 1));
    page.send("tell me a long story", "followup").await;
    w.mock.requested(2).await;
    page.send("make it short", "followup").await;
    page.wait_text("#queue-items", "make it short").await;
    page.run(json!({"do": "click", "selector": "#queue-items button", "text": "Steer"})).await;
    page.wait_text("#queue-items .kind", "steer").await;
    gate.notify_one();
    page.wait_text(".msg.assistant", "Steered as asked.").await;
    let bubbles = page.texts(".msg.user").await;
    assert!(
        bubbles.iter().any(|b| b.starts_with("steer") && b.ends_with("make it short")),
        "{bubbles:?}"
    );

    // A slow answer cancelled: its interrupted text stays, the queue behind it is parked (and
    // can still be edited).
    let (slow, _never) = held("Slowly, slowly");
    w.mock.push(slow);
    page.send("go slowly", "followup").await;
    w.mock.requested(4).await;
    page.wait_text(".msg.assistant.streaming", "Slow").await;
    page.send("after the slow one", "followup").await;
    page.wait_text("#queue-items", "after the slow one").await;
    page.run(json!({"do": "click", "selector": "#cancel"})).await;
    page.wait_text(".turn-end", "aborted").await;
    let classes = page.run(json!({"do": "classes", "selector": ".msg.assistant"})).await;
    assert!(classes.to_string().contains("interrupted"), "{classes}");
    page.wait_text("#queue-items", "after the slow one").await;
    let edit = json!({"do": "click", "selector": "#queue-items button", "text": "Edit", "answer": "after the edit"});
    page.run(edit).await;
    page.wait_text("#queue-items", "after the edit").await;

    // The gateway dies mid-stream and comes back on the same port: the page reconnects and shows
    // every event once.
    let (streaming, _gate) = held("Cut off in the middle");
    w.mock.push(streaming);
    page.run(json!({"do": "click", "selector": "#queue-items button", "text": "Remove"})).await;
    page.send("one more", "followup").await;
    w.mock.requested(5).await;
    page.wait_text(".msg.assistant.streaming", "Cut").await;
    let World { dir, mock, gw } = w;
    let w = World { dir, mock, gw: gw.crash_and_restart_in_place() };
    page.wait_text(".turn-end", "interrupted").await;
    w.mock.push(Reply::text("Back again.", 2));
    page.send("are you back?", "followup").await;
    page.wait_text(".msg.assistant", "Back again.").await;
    let shown = conversation(&mut page).await;
    let log = w.gw.log(&session).await;
    let turns = log.iter().filter(|e| e["type"] == "turn/end").count();
    let ends = shown.iter().filter(|line| line.starts_with("turn ")).count();
    assert_eq!(ends, turns, "one line per turn/end, none twice: {shown:?}");
    let users = log.iter().filter(|e| e["type"] == "user/message").count();
    assert_eq!(page.texts(".msg.user").await.len(), users, "one bubble per user message");
    assert_eq!(page.texts(".msg.assistant").await, answers(&log), "every word once, none missing");

    // Reloading rebuilds the same view from the log.
    page.run(json!({"do": "reload"})).await;
    page.wait_text(".msg.assistant", "Back again.").await;
    assert_eq!(conversation(&mut page).await, shown, "the same conversation after a reload");

    let shots = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/screenshots");
    std::fs::create_dir_all(&shots).unwrap();
    for scheme in ["light", "dark"] {
        let path = shots.join(format!("web-demo-{scheme}.png"));
        page.run(json!({"do": "screenshot", "path": path, "scheme": scheme})).await;
    }
    let errors = page.run(json!({"do": "errors"})).await;
    assert_eq!(errors, json!([]), "the page threw");
}

#[tokio::test]
#[ignore = "needs Chromium and playwright-core; .ci/run installs them"]
async fn the_page_signs_in_with_a_key_and_streams_with_an_http_only_cookie() {
    let dir = tempfile::tempdir().unwrap();
    let mock = airlock_tests::MockModel::start().await;
    let data = dir.path().join("airlock.db");
    let key = airlock_tests::gateway::keys(&data, &["create", "--tenant", "web"]);
    let env = [("AIRLOCK_MODEL", "openai:mock")];
    let gw = airlock_tests::gateway::Gateway::start_with(&data, &mock.base_url(), dir.path(), &env);
    let mut page = Page::launch();
    page.run(json!({"do": "open", "url": gw.url("/")})).await;
    page.wait_text("#sign-in label", "API key").await;

    page.run(json!({"do": "signIn", "key": "ak_wrong"})).await;
    page.wait_text("#sign-in-why", "not valid").await;
    page.run(json!({"do": "signIn", "key": key})).await;
    page.wait_text("#tenant", "tenant web").await;
    page.run(json!({"do": "waitConnection", "state": "open"})).await;
    page.run(json!({"do": "newSession"})).await;
    mock.push(Reply::text("Signed in and streaming.", 3));
    page.send("hello", "followup").await;
    page.wait_text(".msg.assistant", "Signed in and streaming.").await;
    page.wait_text(".turn-end", "completed").await;

    let cookies = page.run(json!({"do": "scriptCookies"})).await;
    assert_eq!(cookies, "", "the key cookie is HttpOnly: no script reads it");
    page.run(json!({"do": "reload"})).await;
    page.wait_text(".msg.assistant", "Signed in and streaming.").await;
    page.wait_text("#tenant", "tenant web").await;
    assert_eq!(page.run(json!({"do": "errors"})).await, json!([]), "the page threw");
}

#[tokio::test]
#[ignore = "needs Chromium and playwright-core; .ci/run installs them"]
async fn the_page_shows_a_compaction_as_a_folded_earlier_conversation_summarized_block() {
    let w = world_with(&[("AIRLOCK_MODEL", "openai:mock")]).await;
    let mut page = Page::launch();
    page.run(json!({"do": "open", "url": w.gw.url("/")})).await;
    let session = page.run(json!({"do": "newSession"})).await;
    let session = session.as_str().unwrap().to_owned();

    // While a turn runs, `/compact` is refused and the page says why.
    let (hello, gate) = held("Hello from the mock model today.");
    w.mock.push(hello);
    page.send("hi there", "followup").await;
    w.mock.requested(1).await;
    page.wait_text(".msg.assistant.streaming", "Hello").await;
    page.wait_text("#session-status", "running").await;
    page.send("/compact", "followup").await;
    page.wait_text(".note", "session-running").await;
    gate.notify_one();
    page.wait_text(".msg.assistant", "Hello from the mock model today.").await;
    page.wait_text(".turn-end", "completed").await;
    // The status shown went running before the turn's events, so idle now is the turn's end.
    page.wait_text("#session-status", "idle").await;

    // At idle it compacts: the mock's next reply is the summary, which arrives as a folded block
    // after the conversation it stands for, and that conversation stays on the page.
    w.mock.push(Reply::text("The person greeted the model.", 2));
    page.send("/compact", "followup").await;
    page.wait_text(".compaction summary", "Earlier conversation summarized").await;
    let heads = page.texts(".compaction summary").await;
    assert!(heads.len() == 1 && heads[0].contains("(manual)"), "{heads:?}");
    assert_eq!(page.texts(".compaction .text").await, ["The person greeted the model."]);
    let shown = conversation(&mut page).await;
    let at = |prefix: &str| shown.iter().position(|line| line.starts_with(prefix));
    let block = at("Earlier conversation summarized").expect("the block is in the conversation");
    assert!(at("hi there").is_some_and(|i| i < block), "{shown:?}");
    assert!(at("Hello from the mock model today.").is_some_and(|i| i < block), "{shown:?}");
    let log = w.gw.log(&session).await;
    let compactions: Vec<_> = log.iter().filter(|e| e["type"] == "context/compaction").collect();
    assert_eq!(compactions.len(), 1, "one block per compaction event");
    assert_eq!(compactions[0]["data"]["trigger"], "manual");

    // Folded until clicked, then the summary shows.
    let open = json!({"do": "attributes", "selector": ".compaction", "name": "open"});
    assert_eq!(page.run(open.clone()).await, json!([null]), "folded at first");
    page.run(json!({"do": "click", "selector": ".compaction summary"})).await;
    let shows = json!({"do": "waitVisible", "selector": ".compaction .text", "text": "greeted"});
    page.run(shows).await;
    assert_eq!(page.run(open).await, json!([""]), "unfolded by the click");

    // Reloading rebuilds the block from the log.
    page.run(json!({"do": "reload"})).await;
    page.wait_text(".compaction .text", "The person greeted the model.").await;
    assert_eq!(page.texts(".compaction summary").await, heads, "the same block after a reload");
    assert_eq!(page.run(json!({"do": "errors"})).await, json!([]), "the page threw");
}
