//! The transcript's line format: one compact line per logged event, enough to assert exact event
//! sequences readably.

use serde_json::Value;

/// One compact line per event: enough to assert exact sequences readably.
pub(super) fn summarize(event: &Value) -> String {
    let data = &event["data"];
    let ty = event["type"].as_str().unwrap_or("?");
    let text = |content: &Value| {
        content
            .as_array()
            .map(|blocks| {
                blocks
                    .iter()
                    .map(|b| match b["type"].as_str() {
                        Some("text") | Some("reasoning") => {
                            format!("{:?}", b["text"].as_str().unwrap_or(""))
                        }
                        Some("tool-call") => format!(
                            "call {} {}",
                            b["id"].as_str().unwrap_or(""),
                            b["name"].as_str().unwrap_or("")
                        ),
                        Some("tool-result") => {
                            format!("result {}", b["toolCallId"].as_str().unwrap_or(""))
                        }
                        other => format!("{other:?}"),
                    })
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .unwrap_or_default()
    };
    match ty {
        "agent/inbox/spliced" => {
            let mut line =
                format!("splice {} @{}", data["target"].as_str().unwrap_or("?"), data["start"]);
            if let Some(n) = data["removedCount"].as_u64() {
                line += &format!(" -{n}");
            }
            for m in data["inserted"].as_array().into_iter().flatten() {
                line += &format!(" +{}", m["id"].as_str().unwrap_or("?"));
            }
            if let Some(outcome) = data["outcome"].as_str() {
                line += &format!(" {outcome}");
            }
            line
        }
        "turn/start" => format!("turn/start {}", data["turn"]),
        "turn/end" => {
            let reason = &data["reason"];
            let mut line =
                format!("turn/end {} {}", data["turn"], reason["kind"].as_str().unwrap_or("?"));
            if let Some(kind) = reason["reason"]["kind"].as_str() {
                line += &format!(" {kind}");
            }
            if let Some(code) = reason["error"]["code"].as_str() {
                line += &format!(" {code}");
            }
            line
        }
        "step/start" | "step/end" => format!("{ty} {}.{}", data["turn"], data["step"]),
        "user/message" => format!("user/message {}", data["id"].as_str().unwrap_or("?")),
        "request/header" => format!("request/header {}", data["reason"].as_str().unwrap_or("?")),
        "request/context" => match data["failover"]["code"].as_str() {
            None => "request/context".into(),
            Some(code) => format!(
                "request/context {}:{} after {code}",
                data["provider"].as_str().unwrap_or("?"),
                data["model"].as_str().unwrap_or("?")
            ),
        },
        "assistant/chunk" => {
            let chunk = &data["chunk"];
            match chunk["type"].as_str() {
                Some("text-delta") => format!("chunk {:?}", chunk["text"].as_str().unwrap_or("")),
                Some("finish") => {
                    format!("chunk finish {}", chunk["reason"].as_str().unwrap_or(""))
                }
                Some("tool-call-delta") => {
                    format!("chunk call {}", chunk["id"].as_str().unwrap_or(""))
                }
                other => format!("chunk {other:?}"),
            }
        }
        "assistant/message" => {
            let mut line = format!("assistant/message [{}]", text(&data["message"]["content"]));
            if data["interrupted"] == true {
                line += " interrupted";
            }
            line
        }
        "tool/call" => format!(
            "tool/call {} {}{}",
            data["callId"].as_str().unwrap_or("?"),
            data["name"].as_str().unwrap_or("?"),
            if data["client"] == true { " client" } else { "" }
        ),
        "tool/approval" => {
            let mut line = format!(
                "tool/approval {} {}",
                data["callId"].as_str().unwrap_or("?"),
                data["state"].as_str().unwrap_or("?")
            );
            for key in ["by", "reason", "arguments"] {
                if let Some(value) = data[key].as_str() {
                    line += &format!(" {key}={value:?}");
                }
            }
            line
        }
        "tool/result" => {
            let block = &data["message"]["content"][0];
            let mut line = format!(
                "tool/result {} [{}]",
                block["toolCallId"].as_str().unwrap_or("?"),
                text(&block["content"])
            );
            if let Some(code) = data["error"]["code"].as_str() {
                line += &format!(" {code}");
            }
            line
        }
        "context/compaction" => format!(
            "context/compaction {} through {}",
            data["trigger"].as_str().unwrap_or("?"),
            data["throughSeq"]
        ),
        "llm/retry" => format!(
            "llm/retry {} {}ms {}",
            data["attempt"],
            data["delayMs"],
            data["error"]["code"].as_str().unwrap_or("?")
        ),
        other => other.to_owned(),
    }
}
