//! The schemas `/openapi.json` gives the log's events, the streams' frames and the JSON answers
//! hold what the gateway really sends: every event of every core transcript, and the frames,
//! pages, runs and goal changes of a real gateway.

use crate::common;

use airlock_core::testkit::{self, Native};
use jsonschema::Validator;
use serde_json::{Value, json};

/// A validator for the document's schema `name`, with the rest of its schemas to refer to.
fn validator(doc: &Value, name: &str) -> Validator {
    let root = json!({
        "$ref": format!("#/components/schemas/{name}"),
        "components": doc["components"],
    });
    jsonschema::draft202012::new(&root).unwrap_or_else(|e| panic!("schema {name}: {e}"))
}

/// Fails naming the schema, the value and every way it does not fit.
fn assert_fits(validator: &Validator, name: &str, value: &Value) {
    let errors: Vec<String> =
        validator.iter_errors(value).map(|e| format!("{e} at {}", e.instance_path())).collect();
    assert!(errors.is_empty(), "{value} does not fit {name}: {errors:#?}");
}

#[tokio::test]
async fn every_event_of_every_core_transcript_fits_the_event_schema() {
    let (_dir, gw) = common::fresh().await;
    let (_, doc) = gw.get("/openapi.json").await;
    let event = validator(&doc, "Event");
    let unknown_reason = json!({"type": "turn/end", "seq": 9, "time": 0, "data": {"turn": 1, "reason": {"kind": "done"}}});
    assert!(!event.is_valid(&unknown_reason), "the schema refuses what the core never writes");
    let mut types = std::collections::BTreeSet::new();
    for (name, scenario) in testkit::SCENARIOS {
        for line in scenario(&Native) {
            let value: Value = serde_json::from_str(&line).unwrap();
            // The host writes these two; a transcript feeds made-up payloads for them.
            if matches!(value["type"].as_str(), Some("goal/change" | "subagent/descriptor")) {
                continue;
            }
            assert_fits(&event, &format!("Event (scenario {name})"), &value);
            types.insert(value["type"].as_str().unwrap().to_owned());
        }
    }
    assert!(types.len() >= 14, "the transcripts wrote only {types:?}");
}

#[tokio::test]
async fn frames_pages_runs_and_goal_changes_of_a_real_gateway_fit_their_schemas() {
    let (_dir, gw) = common::fresh().await;
    let (_, doc) = gw.get("/openapi.json").await;
    let session = gw.session().await;

    // Every frame of a turn, its data checked against the schema its frame names.
    let frames = frame_schemas(&doc, "SessionStream");
    let mut sse = gw.sse(&session, "", None).await;
    let (code, _) =
        gw.post(&format!("/v1/sessions/{session}/messages"), json!({"content": "hi"})).await;
    assert_eq!(code, 202);
    let mut turn_ended = false;
    loop {
        let frame = sse.next().await;
        let data: Value = serde_json::from_str(&frame.data).unwrap();
        let (name, schema) = frames
            .iter()
            .find(|(event, ..)| *event == frame.event)
            .map(|(_, name, schema)| (name, schema))
            .unwrap_or_else(|| panic!("frame {} is not in SessionStream", frame.event));
        assert_fits(schema, name, &data);
        turn_ended |= data["type"] == "turn/end";
        if turn_ended && data["status"] == "idle" {
            break;
        }
    }

    let run = gw.post(&format!("/v1/sessions/{session}/runs"), json!({"content": "again"})).await;
    assert_fits(&validator(&doc, "RunResult"), "RunResult", &run.1);

    let goal = json!({"objective": "ship it", "maxRounds": 1});
    let res = gw.client.put(gw.url(&format!("/v1/sessions/{session}/goal"))).json(&goal);
    assert_eq!(res.send().await.unwrap().status(), 200);
    let res = gw.client.delete(gw.url(&format!("/v1/sessions/{session}/goal")));
    assert!(res.send().await.unwrap().status().is_success());

    let (code, page) = gw.get(&format!("/v1/sessions/{session}/events/page?limit=5000")).await;
    assert_eq!(code, 200);
    assert_fits(&validator(&doc, "EventsPage"), "EventsPage", &page);
    let changes: Vec<&Value> = page["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "goal/change")
        .map(|e| &e["data"])
        .collect();
    assert!(changes.iter().any(|data| data["goal"]["objective"] == "ship it"), "{changes:?}");
    assert_eq!(changes.last().unwrap()["cleared"], true, "{changes:?}");
}

/// The frames of the stream schema `name`: each one's `event`, and a validator of its data.
fn frame_schemas(doc: &Value, name: &str) -> Vec<(String, String, Validator)> {
    let frames = doc["components"]["schemas"][name]["oneOf"].as_array().unwrap();
    frames
        .iter()
        .map(|frame| {
            // Each frame is a schema of its own (`SessionStatusFrame`), named by reference.
            let named = frame["$ref"].as_str().unwrap().rsplit('/').next().unwrap();
            let frame = &doc["components"]["schemas"][named];
            let event = frame["properties"]["event"]["enum"][0].as_str().unwrap().to_owned();
            let target = frame["properties"]["data"]["contentSchema"]["$ref"].as_str().unwrap();
            let data = target.rsplit('/').next().unwrap().to_owned();
            let validator = validator(doc, &data);
            (event, data, validator)
        })
        .collect()
}
