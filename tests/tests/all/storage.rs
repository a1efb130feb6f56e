//! Storage that fails mid-turn (`docs/semantics.md`, "Recovery after a crash"): a real disk that
//! fills up under a running turn, then gets its space back.
//!
//! Ignored by default because it mounts a tmpfs (root only); `.ci/run` runs it with
//! `cargo test --workspace --test all -- --ignored storage::`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use airlock_tests::gateway::{Frame, Gateway};
use airlock_tests::world::{held, messages};
use airlock_tests::{MockModel, Reply};
use serde_json::json;

/// A small tmpfs, unmounted when dropped.
struct Disk(PathBuf);

impl Disk {
    fn mount(at: &Path, size: &str) -> Disk {
        std::fs::create_dir_all(at).unwrap();
        let status = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(at)
            .status()
            .expect("mount runs");
        assert!(status.success(), "mounting a tmpfs at {} (needs root)", at.display());
        Disk(at.to_owned())
    }

    /// Writes a file until the disk is full; answers it.
    fn fill(&self) -> PathBuf {
        let filler = self.0.join("filler");
        let mut file = std::fs::File::create(&filler).unwrap();
        let block = vec![0u8; 64 << 10];
        while file.write_all(&block).is_ok() {}
        let _ = file.sync_all();
        filler
    }
}

impl Drop for Disk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

#[tokio::test]
#[ignore = "mounts a tmpfs (root only); .ci/run runs it"]
async fn a_disk_filled_mid_turn_never_shows_idle_with_a_turn_open_and_the_queue_is_answered_after()
{
    let dir = tempfile::tempdir().unwrap();
    let disk = Disk::mount(&dir.path().join("disk"), "8m");
    let mock = MockModel::start().await;
    let gw = Gateway::start(&disk.0.join("airlock.db"), &mock.base_url());
    let s = gw.session().await;
    let mut sse = gw.sse(&s, None).await;

    // The first message's turn streams and waits; a second message is accepted behind it.
    // (The commit that fails may have started the second turn's request already, since a
    // request travels while its commit syncs: the mock has the second answer twice.)
    let (first, gate) = held("The first answer, cut off by a full disk.");
    let second = Reply::text("The second answer.", 2);
    mock.push(first).push(second.clone()).push(second);
    let (code, _) = gw.post(&messages(&s), json!({"content": "first"})).await;
    assert_eq!(code, 202);
    mock.requested(1).await;
    let (code, second) = gw.post(&messages(&s), json!({"content": "second"})).await;
    assert_eq!(code, 202, "{second}");

    // The disk fills; the rest of the first answer cannot be committed.
    let filler = disk.fill();
    gate.notify_one();
    gw.until_metric("airlock_commit_failures_total", |n| n >= 1.0).await;
    let (_, status) = gw.get(&format!("/v1/sessions/{s}/status")).await;
    assert_eq!(status["status"], "running", "a turn is open in the log: {status}");
    let (code, refused) = gw.post(&messages(&s), json!({"content": "third"})).await;
    assert_eq!((code, refused["error"]["code"].as_str()), (503, Some("storage-unavailable")));

    // Space comes back: the session goes on from its log as a restart would.
    std::fs::remove_file(filler).unwrap();
    let frames = sse.until(|f| matches!(f, Frame::Event(_, e) if e["type"] == "turn/end" && e["data"]["turn"] == 2)).await;
    // The stream opened on an idle session; from the first message on, it never says idle.
    let statuses: Vec<&Frame> = (frames.iter())
        .skip_while(|f| **f != Frame::Status("running".into()))
        .filter(|f| matches!(f, Frame::Status(_)))
        .collect();
    assert!(!statuses.is_empty());
    let ends = frames.iter().filter_map(|f| match f {
        Frame::Event(_, e) if e["type"] == "turn/end" => Some(e["data"]["reason"]["kind"].clone()),
        _ => None,
    });
    assert_eq!(ends.collect::<Vec<_>>(), [json!("interrupted"), json!("completed")]);
    assert!(
        !statuses.iter().any(|f| **f == Frame::Status("idle".into())),
        "never idle while turn 1 was open or turn 2 was owed: {statuses:?}"
    );

    // Nothing acknowledged is lost: both messages are in the log, the second one answered.
    let log = gw.log(&s).await;
    let users: Vec<_> = log.iter().filter(|e| e["type"] == "user/message").collect();
    let texts: Vec<_> = users.iter().map(|e| e["data"]["content"][0]["text"].clone()).collect();
    assert_eq!(texts, [json!("first"), json!("second")]);
    let answered = log.iter().any(|e| {
        e["type"] == "assistant/message"
            && e["data"]["message"]["content"][0]["text"] == "The second answer."
    });
    assert!(answered, "the queued message got its answer: {log:#?}");
    drop(gw);
}
