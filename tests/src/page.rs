//! The web demo's page in a real browser: Chromium driven by playwright-core through
//! `web-demo/browser-test/drive.mjs`, one JSON command a line on its stdin, one answer a line on
//! its stdout.

use std::path::Path;
use std::process::Stdio;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

/// The page, through the driver script.
pub struct Page {
    _node: Child,
    stdin: ChildStdin,
    stdout: Lines<BufReader<ChildStdout>>,
}

impl Page {
    /// Starts the driver (and with it Chromium).
    pub fn launch() -> Page {
        let script =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../web-demo/browser-test/drive.mjs");
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
    pub async fn run(&mut self, command: Value) -> Value {
        self.stdin.write_all(format!("{command}\n").as_bytes()).await.unwrap();
        let line = self.stdout.next_line().await.unwrap().expect("the driver answers");
        let answer: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(answer["ok"], true, "{command}: {}", answer["error"]);
        answer["value"].clone()
    }

    /// Waits until an element matching `selector` shows `text`.
    pub async fn wait_text(&mut self, selector: &str, text: &str) {
        self.run(json!({"do": "waitText", "selector": selector, "text": text})).await;
    }

    /// The text of every element matching `selector`.
    pub async fn texts(&mut self, selector: &str) -> Vec<String> {
        let value = self.run(json!({"do": "texts", "selector": selector})).await;
        serde_json::from_value(value).unwrap()
    }

    /// Sends `text` from the composer as `delivery` (`followup`, `steer` or `inject`).
    pub async fn send(&mut self, text: &str, delivery: &str) {
        self.run(json!({"do": "send", "text": text, "delivery": delivery})).await;
    }

    /// Makes a session with the page's button; answers its id.
    pub async fn new_session(&mut self) -> String {
        let id = self.run(json!({"do": "newSession"})).await;
        id.as_str().expect("the page shows the session's id").to_owned()
    }

    /// The id of the session the page shows.
    pub async fn shown_session(&mut self) -> String {
        let id =
            self.run(json!({"do": "attributes", "selector": "#main", "name": "data-session-id"}));
        id.await[0].as_str().expect("a session is shown").to_owned()
    }

    /// Clicks the first element matching `selector`.
    pub async fn click(&mut self, selector: &str) {
        self.run(json!({"do": "click", "selector": selector})).await;
    }

    /// Types `value` into the first input matching `selector`.
    pub async fn fill(&mut self, selector: &str, value: &str) {
        self.run(json!({"do": "fill", "selector": selector, "value": value})).await;
    }

    /// Whether the first element matching `selector` is disabled.
    pub async fn disabled(&mut self, selector: &str) -> bool {
        let value = self.run(json!({"do": "attributes", "selector": selector, "name": "disabled"}));
        !value.await[0].is_null()
    }

    /// Waits until the element `selector` is disabled (or enabled).
    pub async fn wait_disabled(&mut self, selector: &str, disabled: bool) {
        let state = if disabled { "disabled" } else { "enabled" };
        self.wait_count(&format!("{selector}:{state}"), 1).await;
    }

    /// Waits until exactly `count` elements match `selector`.
    pub async fn wait_count(&mut self, selector: &str, count: usize) {
        self.run(json!({"do": "waitCount", "selector": selector, "count": count})).await;
    }

    /// How the conversation is scrolled: `{top, height, client, atBottom, lastInView}`.
    pub async fn scroll(&mut self) -> Value {
        self.run(json!({"do": "scrollState", "selector": "#conversation"})).await
    }

    /// Neither an uncaught error nor an error in the console (a failed load, a blocked one).
    pub async fn assert_clean(&mut self) {
        assert_eq!(self.run(json!({"do": "errors"})).await, json!([]), "the page threw");
        let console = self.run(json!({"do": "consoleErrors"})).await;
        assert_eq!(console, json!([]), "the console reported errors");
    }
}
