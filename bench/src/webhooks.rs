//! Webhooks: a turn's time through `airlock serve` in three sessions taken in turn: one heard by
//! no subscription, one by two whose receiver answers at once, one by two whose receiver takes the
//! connection and never answers (`docs/http-api.md`, "Webhooks": a dead receiver holds up no
//! turn). The first two differ by what a subscription costs a turn (its deliveries written in the
//! turn's commit); the last two only by the receiver.

use std::path::Path;

use airlock_tests::gateway::Gateway;
use airlock_tests::{MockModel, Reply};
use serde_json::json;

use crate::rotation::{answering, in_rotation, never_answering};
use crate::{Row, Size};

const SCENARIO: &str = "webhooks";

const EVENTS: [&str; 5] =
    ["session.idle", "session.requires_action", "session.failed", "run.completed", "turn.ended"];

/// The rows: median and p99 of an owned run's turn in each session, and the ratios of medians.
pub async fn dead_receiver(work: &Path, size: Size) -> Vec<Row> {
    let mock = MockModel::start().await;
    mock.otherwise(|_| Reply::text("Hello.", 2));
    let env = [("AIRLOCK_WEBHOOKS_ALLOW_LOOPBACK", "true")];
    let gw = Gateway::start_with(&work.join("webhooks.db"), &mock.base_url(), &env);
    let (live, dead) = (answering("/hooks").await, never_answering().await);
    let dead = format!("{dead}/hooks");
    let [quiet, heard_live, heard_dead] =
        [gw.session().await, gw.session().await, gw.session().await];
    for (url, session) in [(&live, &heard_live), (&dead, &heard_dead)] {
        for _ in 0..2 {
            let body = json!({"url": url, "events": EVENTS, "sessionId": session});
            let (code, made) = gw.post("/v1/webhooks", body).await;
            assert_eq!(code, 201, "{made}");
        }
    }
    let setups = [
        (&gw, quiet.as_str(), "no subscription"),
        (&gw, heard_live.as_str(), "2 subscriptions, receiver answers"),
        (&gw, heard_dead.as_str(), "2 subscriptions, receiver never answers"),
    ];
    let (mut rows, [none_ms, answered_ms, hanging_ms]) = in_rotation(SCENARIO, setups, size).await;
    rows.push(Row::new(SCENARIO, "never answers ÷ answers, median", hanging_ms / answered_ms, "×"));
    rows.push(Row::new(SCENARIO, "answers ÷ no subscription, median", answered_ms / none_ms, "×"));
    rows
}
