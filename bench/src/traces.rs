//! Traces: a turn's time through `airlock serve` on three gateways taken in turn: one exporting
//! nothing, one exporting to a collector that takes every batch at once, one exporting to a
//! collector that takes the connection and never answers (`docs/interfaces.md`, "Traces": a dead
//! collector never slows a turn). Each gateway has its own data file; the turns rotate among
//! them, so that whatever drifts over the run weighs on the three alike.

use std::path::Path;

use airlock_tests::gateway::Gateway;
use airlock_tests::{MockModel, Reply};

use crate::rotation::{answering, in_rotation, never_answering};
use crate::{Row, Size};

const SCENARIO: &str = "traces";

/// The rows: median and p99 of an owned run's turn on each gateway, the ratios of medians, and
/// how many spans the live collector took.
pub async fn dead_collector(work: &Path, size: Size) -> Vec<Row> {
    let mock = MockModel::start().await;
    mock.otherwise(|_| Reply::text("Hello.", 2));
    let live = answering("/v1/traces").await;
    let live = live.trim_end_matches("/v1/traces").to_owned();
    let dead = never_answering().await;
    // Batches go out a tenth of a second after their first span, so a run of turns makes many.
    let exporting = |url: &str| {
        vec![
            ("OTEL_EXPORTER_OTLP_ENDPOINT", url.to_owned()),
            ("OTEL_BSP_SCHEDULE_DELAY", "100".into()),
        ]
    };
    let envs = [vec![], exporting(&live), exporting(&dead)];
    let gateways: Vec<Gateway> = envs
        .iter()
        .enumerate()
        .map(|(i, env)| {
            let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
            Gateway::start_with(&work.join(format!("traces-{i}.db")), &mock.base_url(), &env)
        })
        .collect();
    let mut sessions = Vec::new();
    for gw in &gateways {
        sessions.push(gw.session().await);
    }
    let setups = [
        (&gateways[0], sessions[0].as_str(), "no export"),
        (&gateways[1], sessions[1].as_str(), "collector answers"),
        (&gateways[2], sessions[2].as_str(), "collector never answers"),
    ];
    let (mut rows, [none_ms, answered_ms, hanging_ms]) = in_rotation(SCENARIO, setups, size).await;
    rows.push(Row::new(SCENARIO, "never answers ÷ no export, median", hanging_ms / none_ms, "×"));
    rows.push(Row::new(SCENARIO, "answers ÷ no export, median", answered_ms / none_ms, "×"));
    let exported = gateways[1].metric("airlock_otel_spans_exported_total").await;
    rows.push(Row::new(SCENARIO, "spans exported, collector answers", exported, ""));
    rows
}
