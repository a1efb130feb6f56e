//! The bodies and queries the LangGraph routes take, as serde reads them. Each refuses what its
//! schema in `/openapi.json` refuses (`schema/langgraph.rs` writes them, named as here with
//! `LangGraph` before): schemathesis checks that the two agree, both ways.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};
use utoipa::IntoParams;

use super::super::ApiError;
use super::super::fields;
use super::input::{Command, RunInput};

/// The most a page lists.
pub(super) const MAX_LIMIT: u32 = 1000;

/// A thread's path.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub(super) struct ThreadPath {
    /// The thread: a session id.
    #[param(pattern = "^[A-Za-z0-9][A-Za-z0-9._:-]{0,199}$(?![\\s\\S])")]
    pub thread_id: String,
}

/// A run's path.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub(super) struct RunPath {
    /// The thread: a session id.
    #[param(pattern = "^[A-Za-z0-9][A-Za-z0-9._:-]{0,199}$(?![\\s\\S])")]
    pub thread_id: String,
    /// The run: the seq of its first event, from the `Content-Location` of the answer that
    /// started it.
    #[param(pattern = "^[0-9]{1,18}$(?![\\s\\S])")]
    pub run_id: String,
}

/// `POST /assistants/search`.
#[derive(Deserialize)]
pub(super) struct AssistantSearch {
    pub graph_id: Option<String>,
    pub name: Option<String>,
    pub metadata: Option<Map<String, Value>>,
    #[serde(default, deserialize_with = "fields::whole")]
    pub limit: Option<u32>,
    #[serde(default, deserialize_with = "fields::whole")]
    pub offset: Option<u32>,
}

/// `POST /threads`.
#[derive(Deserialize)]
pub(super) struct NewThread {
    pub thread_id: Option<String>,
    pub if_exists: Option<IfExists>,
    pub metadata: Option<Map<String, Value>>,
}

/// What `POST /threads` does with a thread that exists.
#[derive(Deserialize, PartialEq)]
#[serde(rename_all = "snake_case")]
pub(super) enum IfExists {
    /// 409 `thread-exists`.
    Raise,
    /// Answers it.
    DoNothing,
}

/// `POST /threads/search`.
#[derive(Deserialize)]
pub(super) struct ThreadSearch {
    pub ids: Option<Vec<String>>,
    pub metadata: Option<Map<String, Value>>,
    pub status: Option<ThreadStatus>,
    #[serde(default, deserialize_with = "fields::whole")]
    pub limit: Option<u32>,
    #[serde(default, deserialize_with = "fields::whole")]
    pub offset: Option<u32>,
    #[expect(dead_code, reason = "read only to refuse an order Airlock cannot list in")]
    pub sort_by: Option<SortBy>,
    #[expect(dead_code, reason = "read only to refuse an order Airlock cannot list in")]
    pub sort_order: Option<SortOrder>,
}

/// A thread's status.
#[derive(Clone, Copy, Deserialize, PartialEq)]
#[serde(rename_all = "snake_case")]
pub(super) enum ThreadStatus {
    Idle,
    Busy,
    Interrupted,
    Error,
}

impl ThreadStatus {
    /// As LangGraph writes it.
    pub(super) fn name(self) -> &'static str {
        match self {
            ThreadStatus::Idle => "idle",
            ThreadStatus::Busy => "busy",
            ThreadStatus::Interrupted => "interrupted",
            ThreadStatus::Error => "error",
        }
    }
}

/// The one order threads are listed in: by id.
#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum SortBy {
    ThreadId,
}

/// Ascending only: the store pages forward.
#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum SortOrder {
    Asc,
}

/// `POST /threads/{id}/history`.
#[derive(Deserialize)]
pub(super) struct HistoryQuery {
    #[serde(default, deserialize_with = "fields::whole")]
    pub limit: Option<u32>,
    #[serde(default, deserialize_with = "some_object")]
    pub before: Option<CheckpointRef>,
}

/// A checkpoint named by its id, or by a config that names it (`{configurable: {checkpoint_id}}`).
#[derive(Deserialize)]
pub(super) struct CheckpointRef {
    checkpoint_id: Option<String>,
    #[serde(default, deserialize_with = "some_object")]
    configurable: Option<Configurable>,
}

/// A config's `configurable`: the checkpoint it names.
#[derive(Deserialize)]
struct Configurable {
    checkpoint_id: Option<String>,
}

impl CheckpointRef {
    /// The seq the checkpoint names, if it names one (the config's before its own id; each
    /// given must be one); `field` is where it was given.
    pub(super) fn seq(&self, field: &str) -> Result<Option<u64>, ApiError> {
        let own = checkpoint_seq(self.checkpoint_id.as_deref(), field)?;
        let configured = self.configurable.as_ref().and_then(|c| c.checkpoint_id.as_deref());
        Ok(checkpoint_seq(configured, field)?.or(own))
    }
}

/// The seq of checkpoint `id`; `field` is where it was given.
pub(super) fn checkpoint_seq(id: Option<&str>, field: &str) -> Result<Option<u64>, ApiError> {
    id.map(|id| match id.len() <= 18 {
        true => id.parse::<u64>().ok(),
        false => None,
    })
    .map(|seq| {
        seq.ok_or_else(|| {
            let why = format!("{field} must name a checkpoint_id this thread gave (its digits)");
            ApiError::bad_request(field, why)
        })
    })
    .transpose()
}

/// `POST /threads/{id}/runs/stream`.
#[derive(Deserialize)]
pub(super) struct NewRun {
    pub assistant_id: String,
    #[serde(default, deserialize_with = "some_object")]
    pub input: Option<RunInput>,
    #[serde(default, deserialize_with = "some_object")]
    pub command: Option<Command>,
    pub stream_mode: Option<StreamModes>,
    pub multitask_strategy: Option<Strategy>,
    pub if_not_exists: Option<IfNotExists>,
    #[serde(default, deserialize_with = "some_object")]
    pub checkpoint: Option<CheckpointRef>,
    pub checkpoint_id: Option<String>,
}

/// Which stream modes: one, or a list.
#[derive(Deserialize)]
#[serde(untagged, expecting = "stream_mode must be a stream mode or a list of them")]
pub(super) enum StreamModes {
    One(StreamMode),
    Many(Vec<StreamMode>),
}

/// LangGraph's stream modes.
#[derive(Clone, Copy, Deserialize, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(super) enum StreamMode {
    Values,
    Messages,
    MessagesTuple,
    Updates,
    Events,
    Debug,
    Custom,
    Tasks,
    Checkpoints,
}

/// What a run does when the thread is running another.
#[derive(Clone, Copy, Deserialize, PartialEq)]
#[serde(rename_all = "snake_case")]
pub(super) enum Strategy {
    /// 409 `thread-busy`.
    Reject,
    /// After it.
    Enqueue,
    /// Cancels it first.
    Interrupt,
}

/// What a run on a thread that does not exist does.
#[derive(Deserialize, PartialEq)]
#[serde(rename_all = "snake_case")]
pub(super) enum IfNotExists {
    Create,
    Reject,
}

/// `deserialize_with` for a struct that must come as a JSON object: serde's derive would also
/// read one from a list of its fields, which the schema refuses.
pub(super) fn object<'de, D: Deserializer<'de>, T: DeserializeOwned>(
    deserializer: D,
) -> Result<T, D::Error> {
    let object = Value::Object(Map::deserialize(deserializer)?);
    serde_json::from_value(object).map_err(serde::de::Error::custom)
}

/// [`object`] for a field that may be left out or `null`.
pub(super) fn some_object<'de, D: Deserializer<'de>, T: DeserializeOwned>(
    deserializer: D,
) -> Result<Option<T>, D::Error> {
    match Option::<Map<String, Value>>::deserialize(deserializer)? {
        None => Ok(None),
        Some(object) => serde_json::from_value(Value::Object(object))
            .map(Some)
            .map_err(serde::de::Error::custom),
    }
}

/// `GET /threads/{id}/runs/{run}/stream`'s query.
#[derive(Deserialize)]
pub(super) struct JoinQuery {
    stream_mode: Option<String>,
}

impl JoinQuery {
    /// `stream_mode`: a mode, or a JSON list of them (as the SDK writes a list in a query).
    pub(super) fn modes(&self) -> Result<Option<StreamModes>, ApiError> {
        let Some(asked) = &self.stream_mode else { return Ok(None) };
        let modes = match asked.starts_with('[') {
            true => serde_json::from_str(asked).map(StreamModes::Many),
            false => serde_json::from_value(Value::String(asked.clone())).map(StreamModes::One),
        };
        modes.map(Some).map_err(|e| {
            ApiError::bad_request(
                "stream_mode",
                format!("stream_mode must be a stream mode or a JSON list of them: {e}"),
            )
        })
    }
}

/// `POST /threads/{id}/runs/{run}/cancel`'s query.
#[derive(Deserialize)]
pub(super) struct CancelQuery {
    pub wait: Option<Flag>,
    #[expect(dead_code, reason = "read only to refuse a rollback, which the log cannot do")]
    pub action: Option<CancelAction>,
}

/// A flag in a query: `1`/`true` or `0`/`false`.
#[derive(Clone, Copy, Deserialize, PartialEq)]
pub(super) enum Flag {
    #[serde(rename = "1", alias = "true")]
    On,
    #[serde(rename = "0", alias = "false")]
    Off,
}

/// The one way to cancel: interrupt the running turn.
#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum CancelAction {
    Interrupt,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_nested_object_given_as_a_list_of_its_fields_is_refused_as_its_schema_refuses_it() {
        let history = |body: Value| serde_json::from_value::<HistoryQuery>(body).is_ok();
        assert!(history(json!({"before": {"configurable": {"checkpoint_id": "7"}}})));
        assert!(!history(json!({"before": [null, null]})));
        assert!(!history(json!({"before": {"configurable": [null]}})));
        let both = |own: &str| {
            let before = json!({"checkpoint_id": own, "configurable": {"checkpoint_id": "7"}});
            let query: HistoryQuery = serde_json::from_value(json!({"before": before})).unwrap();
            query.before.unwrap().seq("before").ok().flatten()
        };
        assert_eq!(both("3"), Some(7), "the config's id first");
        assert_eq!(both("x"), None, "each id given must be one");
        let run = |body: Value| serde_json::from_value::<NewRun>(body).is_ok();
        assert!(run(json!({"assistant_id": "agent", "input": null, "command": {"resume": true}})));
        for nested in ["input", "command", "checkpoint"] {
            let mut body = json!({"assistant_id": "agent"});
            body[nested] = json!([null]);
            assert!(!run(body), "{nested} as a list");
        }
    }

    #[test]
    fn a_joined_runs_stream_mode_is_a_mode_or_a_json_list_of_them() {
        let modes = |asked: &str| JoinQuery { stream_mode: Some(asked.to_owned()) }.modes();
        assert!(matches!(modes("values"), Ok(Some(StreamModes::One(StreamMode::Values)))));
        let list = modes(r#"["updates","messages-tuple"]"#);
        assert!(matches!(list, Ok(Some(StreamModes::Many(modes))) if modes.len() == 2));
        for wrong in ["nope", r#"["values","nope"]"#, "[values]"] {
            let error = modes(wrong).map(|_| ()).unwrap_err();
            assert!(error.message().starts_with("stream_mode must be"), "{wrong}");
        }
    }
}
