//! What webhooks may report of a session's events (`docs/http-api.md`, "Webhooks"), named where
//! the events are committed ([`Session::index`](super::Session)) so that each report is written in
//! the same transaction as the event it reports.

use airlock_store::Hook;

/// What webhooks may report of a `turn/end` (`json`, at `seq`): `turn.ended` with the event's
/// data, and `session.failed` with the error when the turn ended in one.
pub(super) fn turn_hooks(seq: u64, json: &str) -> Vec<Hook> {
    #[derive(serde::Deserialize)]
    struct End {
        time: u64,
        data: serde_json::Value,
    }
    let Ok(End { time, data }) = serde_json::from_str::<End>(json) else { return Vec::new() };
    let hook = |kind, data: &serde_json::Value| Hook {
        seq,
        kind,
        key: String::new(),
        data: data.to_string(),
        time,
    };
    let mut hooks = vec![hook("turn.ended", &data)];
    if data["reason"]["kind"] == "error" {
        let failed = serde_json::json!({"turn": data["turn"], "error": data["reason"]["error"]});
        hooks.push(hook("session.failed", &failed));
    }
    hooks
}

/// The reason kind of a `turn.ended` hook's data.
pub(super) fn hook_reason(data: &str) -> Option<String> {
    let data: serde_json::Value = serde_json::from_str(data).ok()?;
    data["reason"]["kind"].as_str().map(str::to_owned)
}

/// A hook of something that happened after the event `last` (at `next - 1`): reported at its seq
/// and time.
pub(super) fn hook_after(
    kind: &'static str,
    next: u64,
    last: Option<&str>,
    data: serde_json::Value,
) -> Hook {
    #[derive(serde::Deserialize)]
    struct Time {
        time: u64,
    }
    let time = last.and_then(|json| serde_json::from_str::<Time>(json).ok()).map_or(0, |t| t.time);
    Hook { seq: next.saturating_sub(1), kind, key: String::new(), data: data.to_string(), time }
}

/// `run.completed` of the owned interval its `message_id` opened at `first_seq`, ended by the idle
/// after the event `last` (at `next - 1`). What the run produced is read from the log when it is
/// delivered (`airlock-hooks`), so the report names only the interval.
pub(super) fn run_hook(message_id: &str, first_seq: u64, next: u64, last: Option<&str>) -> Hook {
    let last_seq = next.saturating_sub(1);
    let data =
        serde_json::json!({"messageId": message_id, "firstSeq": first_seq, "lastSeq": last_seq});
    Hook { key: message_id.to_owned(), ..hook_after("run.completed", next, last, data) }
}
