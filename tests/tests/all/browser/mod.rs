//! The web demo in a real browser: Debian's Chromium driven by playwright-core
//! (`web-demo/browser-test/drive.mjs`) against a real gateway and the mock model.
//!
//! Ignored by default because it needs Chromium and the npm package; `.ci/run` installs both and
//! runs it with `cargo test --workspace --test all -- --ignored browser::`.

use std::path::Path;

mod branches;
mod code_tools;
mod page;
mod schedules;
mod sign_in;

use airlock_tests::Reply;
use airlock_tests::page::Page;
use airlock_tests::world::{World, held, world_with};
use serde_json::{Value, json};

/// A gateway whose model is the mock, and the page open on it.
async fn opened() -> (World, Page) {
    opened_with(&[("AIRLOCK_MODEL", "openai:mock")]).await
}

/// A gateway with the mock model whose calls of `echo` wait for approval, and the page open on it.
async fn approving_echo() -> (World, Page) {
    opened_with(&[("AIRLOCK_MODEL", "openai:mock"), ("AIRLOCK_APPROVAL_FOR", "echo")]).await
}

/// A gateway with `env`, and the page open on it.
async fn opened_with(env: &[(&str, &str)]) -> (World, Page) {
    let w = world_with(env).await;
    let mut page = Page::launch();
    page.run(json!({"do": "open", "url": w.gw.url("/")})).await;
    (w, page)
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
    let (w, mut page) = opened().await;
    let session = page.new_session().await;

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
    page.wait_count("#queue-items li", 0).await; // removed before the next send could claim it
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
async fn the_page_shows_a_compaction_as_a_folded_earlier_conversation_summarized_block() {
    let (w, mut page) = opened().await;
    let session = page.new_session().await;

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
    // The header shows what the turn used (`GET …/usage`).
    let spent = w.gw.get(&format!("/v1/sessions/{session}/usage")).await.1;
    let output = spent["usage"]["outputTokens"].as_u64().unwrap();
    assert!(output > 0, "{spent}");
    page.wait_text("#session-usage", &format!("{output} out")).await;

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

/// The id of the child a subagent tool call made, from the parent's `tool/result` number `n`.
fn child_of(log: &[Value], n: usize) -> String {
    let result = log.iter().filter(|e| e["type"] == "tool/result").nth(n).expect("a tool result");
    let text = result["data"]["message"]["content"][0]["content"][0]["text"].as_str().unwrap();
    let answer: Value = serde_json::from_str(text).expect("the tool answers JSON");
    answer["childId"].as_str().expect("the answer names the child").to_owned()
}

#[tokio::test]
#[ignore = "needs Chromium and playwright-core; .ci/run installs them"]
async fn the_page_renders_sanitized_markdown_and_follows_the_newest_event_unless_scrolled_back() {
    let (w, mut page) = opened().await;
    for control in ["#cancel", "#cancel-clear", "#dispose", "#send"] {
        assert!(page.disabled(control).await, "{control} with no session selected");
    }
    assert!(!page.disabled("#message").await, "typing starts a session");
    page.new_session().await;
    assert!(page.disabled("#cancel").await, "nothing runs yet");
    assert!(page.disabled("#send").await, "nothing typed yet");
    assert!(!page.disabled("#dispose").await && !page.disabled("#message").await);

    // A long Markdown answer, with HTML that must not reach the page.
    let items: String = (1..=30).map(|i| format!("- item number {i}\n")).collect();
    let notes = format!(
        "# Release notes\n\nWhat **changed** today:\n\n{items}\n```rust\nfn main() {{\n    \
         println!(\"hi\");\n}}\n```\n\n<img src=\"/nothing.png\"><script>window.pwned = 1</script>\
         \n\nThat is all."
    );
    w.mock.push(Reply::text(&notes, 12));
    page.send("write the release notes", "followup").await;
    page.wait_text(".turn-end", "completed").await;
    assert_eq!(page.texts(".msg.assistant h1").await, ["Release notes"]);
    assert_eq!(page.texts(".msg.assistant strong").await, ["changed"]);
    let items = page.texts(".msg.assistant li").await;
    assert_eq!((items.len(), items[0].as_str()), (30, "item number 1"), "{items:?}");
    let code = page.texts(".msg.assistant pre code").await;
    assert_eq!(code, ["fn main() {\n    println!(\"hi\");\n}\n"]);
    let language = json!({"do": "classes", "selector": ".msg.assistant pre code"});
    assert_eq!(page.run(language).await, json!(["language-rust hljs"]), "highlighted as Rust");
    assert!(page.texts(".msg.assistant img, .msg.assistant script").await.is_empty());
    let shown = page.texts(".msg.assistant").await;
    assert!(!shown[0].contains("# Release") && !shown[0].contains("```"), "{shown:?}");
    let at = page.scroll().await;
    assert!(at["height"].as_f64() > at["client"].as_f64(), "taller than the view: {at}");
    assert_eq!((&at["atBottom"], &at["lastInView"]), (&json!(true), &json!(true)), "{at}");

    // Reading back while an answer streams: the view stays where the person put it.
    let (reply, gate) = held("Streaming on while the person reads back.");
    w.mock.push(reply);
    page.send("and one more", "followup").await;
    page.wait_text(".msg.assistant.streaming", "Stream").await;
    page.run(json!({"do": "scrollToTop", "selector": "#conversation"})).await;
    gate.notify_one();
    page.wait_count(".turn-end", 2).await;
    page.wait_text(".msg.assistant", "Streaming on while the person reads back.").await;
    assert_eq!(page.scroll().await["top"], 0, "not pulled down while reading back");

    // Opened again, the view starts at the newest event.
    page.run(json!({"do": "reload"})).await;
    page.wait_count(".turn-end", 2).await;
    let at = page.scroll().await;
    assert_eq!((&at["atBottom"], &at["lastInView"]), (&json!(true), &json!(true)), "{at}");

    let favicon = reqwest::get(w.gw.url("/favicon.ico")).await.unwrap();
    assert_eq!(favicon.status(), 200);
    assert_eq!(favicon.headers()["content-type"], "image/x-icon");
    page.assert_clean().await;
}

#[tokio::test]
#[ignore = "needs Chromium and playwright-core; .ci/run installs them"]
async fn the_page_nests_subagents_under_their_parent_and_links_the_tool_results_to_them() {
    let (w, mut page) = opened().await;
    let parent = page.new_session().await;

    // A one-shot `agent` child: its result is a link to it, with its answer, not JSON.
    let call = r#"{"name":"researcher","prompt":"Find the answer"}"#;
    w.mock.push(Reply::tool_call("t1", "agent", call, 2));
    w.mock.push(Reply::text("The answer is **42**.", 2));
    w.mock.push(Reply::text("The researcher says 42.", 1));
    page.send("delegate this", "followup").await;
    page.wait_text(".msg.assistant", "The researcher says 42.").await;
    let child = child_of(&w.gw.log(&parent).await, 0);
    let links = json!({"do": "attributes", "selector": ".tool a.child-link", "name": "href"});
    assert_eq!(page.run(links.clone()).await, json!([format!("#{child}")]));
    let cards = page.texts(".tool").await;
    assert!(cards[0].contains("The answer is 42.") && !cards[0].contains("childId"), "{cards:?}");
    let row = |id: &str| format!("#sessions li[data-session-id='{id}']");
    let nested = |id: &str| format!("{} > ul.children > li[data-session-id='{id}']", row(&parent));
    page.wait_text(&format!("{} > a", row(&parent)), "delegate this").await;
    page.wait_text(&nested(&child), "researcher").await; // its name, not its prompt
    page.wait_text(&nested(&child), "idle").await;

    // A continuable `spawn_agent` child: linked as soon as it started, nested too.
    let spawn = json!({"name": "worker", "prompt": "WORKER-TASK"}).to_string();
    w.mock.push_for("SPAWN-A-WORKER", Reply::tool_call("t2", "spawn_agent", &spawn, 1));
    w.mock.push_for("WORKER-TASK", Reply::text("Worker result.", 1));
    w.mock.push_for("messageId", Reply::text("A worker is on it.", 1));
    w.mock.push_for("settled", Reply::text("The worker is done.", 1));
    page.send("SPAWN-A-WORKER", "followup").await;
    page.wait_text(".msg.assistant", "The worker is done.").await;
    let worker = child_of(&w.gw.log(&parent).await, 1);
    page.wait_count(".tool a.child-link", 3).await; // the worker's: its call, and its result
    let hrefs = page.run(links).await;
    assert_eq!(hrefs, json!([format!("#{child}"), format!("#{worker}"), format!("#{worker}")]));
    page.wait_text(&nested(&worker), "worker").await;
    let children = page.texts(&format!("{} > ul.children > li", row(&parent))).await;
    assert_eq!(children.len(), 2, "both nested: {children:?}");
    // Its result reached the parent as a message: drawn as the worker's card, not as JSON.
    page.wait_text(".tool.subagent.settled", "Worker result.").await;
    let settled = page.texts(".tool.subagent.settled").await;
    assert!(settled[0].starts_with("Subagent worker finished"), "{settled:?}");
    assert!(!conversation(&mut page).await.iter().any(|shown| shown.contains("settled:")));

    // By keyboard: the link opens the child, whose header links back to its parent.
    page.run(json!({"do": "focus", "selector": ".tool a.child-link"})).await;
    page.run(json!({"do": "press", "key": "Enter"})).await;
    page.wait_text("#session-title", "researcher").await;
    page.wait_text(".msg.assistant", "The answer is 42.").await;
    page.wait_text("#session-parent a.parent-link", "delegate this").await;
    page.click("#session-parent a.parent-link").await;
    page.wait_text("#session-title", "delegate this").await;
    page.click(&format!("{} > a", nested(&worker))).await;
    page.wait_text(".note", "subagent of").await;
    page.wait_text(".msg.assistant", "Worker result.").await;
    // Only its parent gives the worker work: its composer says so and, idle, takes nothing.
    let field = |selector: &str| json!({"do": "field", "selector": selector});
    let message = page.run(field("#message")).await;
    assert_eq!(message["disabled"], true, "{message}");
    assert!(message["placeholder"].as_str().unwrap().starts_with("Only its parent"), "{message}");
    assert_eq!(page.run(field("#delivery")).await["value"], "steer");
    // At 1280 px a child's header and composer fit the window (they were pushed off it).
    page.run(json!({"do": "viewport", "width": 1280, "height": 800})).await;
    let fits = page.run(json!({"do": "fits", "selector": "#main button, #main textarea"})).await;
    assert_eq!(fits["outside"], json!([]), "{fits}");
    assert_eq!(fits["scrollWidth"], fits["width"], "{fits}");
    page.assert_clean().await;
}

#[tokio::test]
#[ignore = "needs Chromium and playwright-core; .ci/run installs them"]
async fn the_goal_panel_drives_a_goal_to_its_round_limit_and_dispose_closes_the_session() {
    let (w, mut page) = opened().await;
    let s = page.new_session().await;

    let (first, gate) = held("Counted the first sheep.");
    w.mock.push(first).push(Reply::text("Counted the second sheep.", 2));
    page.fill("#goal-input", "count sheep").await;
    page.fill("#goal-rounds-input", "2").await;
    page.click("#goal-set").await;
    page.wait_text("#goal-objective", "count sheep").await;
    w.mock.requested(1).await;
    page.wait_text("#goal-rounds", "round 1/2").await;
    page.wait_text("#session-status", "running").await;
    assert!(!page.disabled("#cancel").await, "a round runs: it can be cancelled");

    // Paused and resumed while the first round runs.
    page.click("#goal-pause").await;
    page.wait_text("#goal-phase", "paused").await;
    page.wait_text("#goal-reason", "request").await;
    page.wait_disabled("#goal-pause", true).await;
    page.wait_disabled("#goal-resume", false).await;
    page.click("#goal-resume").await;
    page.wait_text("#goal-phase", "active").await;
    gate.notify_one();

    // The second round is the last: the goal is blocked on the round limit.
    page.wait_text("#goal-phase", "blocked").await;
    page.wait_text("#goal-reason", "round-limit").await;
    assert_eq!(page.texts("#goal-rounds").await, ["round 2/2"]);
    assert!(page.disabled("#goal-pause").await && page.disabled("#goal-resume").await);
    page.wait_text(".msg.assistant", "Counted the second sheep.").await;
    assert_eq!(page.texts(".msg.user .label").await, ["goal", "goal"]);
    let log = w.gw.log(&s).await;
    let last = log.iter().rev().find(|e| e["type"] == "goal/change").unwrap();
    assert_eq!(last["data"]["goal"]["blocked"]["code"], "round-limit", "{last}");

    page.click("#goal-complete").await;
    page.wait_text("#goal-phase", "complete").await;
    assert!(page.disabled("#goal-complete").await);
    page.click("#goal-clear").await;
    page.wait_count("#goal-form:not([hidden])", 1).await;
    page.wait_text(".note", "goal cleared").await;

    // Disposed: gone from the list, the view stays read-only.
    let dispose = json!({"do": "click", "selector": "#dispose", "answer": ""});
    page.run(dispose).await;
    page.wait_text("#session-status", "disposed").await;
    page.wait_count(&format!("#sessions li[data-session-id='{s}']"), 0).await;
    for control in ["#message", "#dispose", "#cancel", "#goal-set"] {
        assert!(page.disabled(control).await, "{control} on a disposed session");
    }
    let (_, session) = w.gw.get(&format!("/v1/sessions/{s}")).await;
    assert_eq!(session["disposed"], true);
    page.assert_clean().await;
}

#[tokio::test]
#[ignore = "needs Chromium and playwright-core; .ci/run installs them"]
async fn the_page_approves_a_call_from_its_card_answers_ask_user_and_forks_from_a_message() {
    let (w, mut page) = approving_echo().await;
    let s = page.new_session().await;

    // `echo` waits for approval: the card asks, Approve runs it.
    w.mock
        .push(Reply::tool_call("c1", "echo", r#"{"text":"hi"}"#, 1))
        .push(Reply::text("Echoed.", 1));
    page.send("echo hi", "followup").await;
    page.wait_text(".tool .approval .label", "Waits for your approval").await;
    page.wait_text("#session-status", "running").await;
    page.click(".tool .approval .approve").await;
    page.wait_text(".tool .decided", "approved").await;
    page.wait_text(".msg.assistant", "Echoed.").await;
    page.wait_count(".tool.waiting", 0).await;

    // `ask_user` is the page's own tool: it shows the question and posts the typed answer.
    let ask = r#"{"question":"Which colour?"}"#;
    w.mock.push(Reply::tool_call("c2", "ask_user", ask, 1)).push(Reply::text("Blue it is.", 1));
    page.send("ask me something", "followup").await;
    page.wait_text(".ask-user .question", "Which colour?").await;
    page.fill(".ask-user .answer", "blue").await;
    page.click(".ask-user button").await;
    page.wait_text(".msg.assistant", "Blue it is.").await;
    let asked = w.mock.requests()[3]["messages"].as_array().unwrap().last().unwrap().to_string();
    assert!(asked.contains("blue"), "the model got the answer: {asked}");
    let log = w.gw.log(&s).await;
    let approved =
        log.iter().find(|e| e["type"] == "tool/approval" && e["data"]["state"] == "approved");
    assert!(approved.is_some(), "the approval is in the log");

    // Forked from the first message: the fork opens with the conversation up to there.
    let first = log.iter().find(|e| e["type"] == "user/message").unwrap()["seq"].clone();
    page.click(".msg.user button[data-label='fork from here']").await;
    page.run(json!({"do": "waitCount", "selector": format!("#main:not([data-session-id='{s}'])"), "count": 1})).await;
    let fork = page.shown_session().await;
    let (_, view) = w.gw.get(&format!("/v1/sessions/{fork}")).await;
    assert_eq!(view["forkedFrom"], json!({"sessionId": s, "seq": first}));
    page.wait_text(".turn-end", "interrupted").await;
    assert_eq!(page.texts(".msg.user").await, ["echo hi"]);
    assert_eq!(w.gw.log(&s).await, log, "the source is unchanged");
    page.assert_clean().await;
}

#[tokio::test]
#[ignore = "needs Chromium and playwright-core; .ci/run installs them"]
async fn the_page_shows_a_session_paused_at_its_budget_and_raising_it_resumes() {
    let (w, mut page) = opened().await;
    let body = json!({"model": "openai:mock", "budget": {"tokens": 1}});
    let (code, created) = w.gw.post("/v1/sessions", body).await;
    assert_eq!(code, 201, "{created}");
    let s = created["sessionId"].as_str().unwrap();
    page.run(json!({"do": "open", "url": w.gw.url(&format!("/#{s}"))})).await;
    page.wait_text("#session-budget", "budget 1 token").await;
    w.mock.push(Reply::text("First answer.", 2)).push(Reply::text("Resumed answer.", 2));

    // The first turn spends the budget; the next one pauses before its step, and says why.
    page.send("one", "followup").await;
    page.wait_text(".msg.assistant", "First answer.").await;
    page.send("two", "followup").await;
    page.wait_text(".turn-end", "paused").await;
    page.wait_text("#session-budget", "paused: budget spent").await;
    page.wait_text(".note.budget", "Paused: the session's budget is spent").await;
    assert_eq!(w.mock.requests().len(), 1, "the second message waits");

    // Raising it from the form resumes: the waiting message runs.
    page.fill("#budget-tokens", "1000000").await;
    page.click("#budget-set").await;
    page.wait_text(".note.budget", "Resumed").await;
    page.wait_text(".msg.assistant", "Resumed answer.").await;
    assert!(!page.texts("#session-budget").await.concat().contains("paused"));
    page.assert_clean().await;
}
