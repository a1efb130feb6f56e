//! A run's `input` (messages in LangChain's or OpenAI's shape) and `command` (the answers to the
//! thread's interrupts), as serde reads them: each refuses what its schema in `/openapi.json`
//! refuses (`schema/langgraph.rs`).

use std::collections::BTreeMap;

use airlock_core::{ContentBlock, Message};
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

use super::super::ApiError;
use super::super::fields::{IMAGE_TYPES, is_base64};
use super::wire::object;

/// A run's input: the messages to add.
#[derive(Deserialize)]
pub(super) struct RunInput {
    messages: Option<Messages>,
}

impl RunInput {
    /// The human messages of the input, as the session takes them; the others are the thread's
    /// own already.
    pub(super) fn human(self) -> Result<Vec<Message>, ApiError> {
        let messages = match self.messages {
            None => Vec::new(),
            Some(Messages::One(one)) => vec![one],
            Some(Messages::Many(many)) => many,
        };
        let mut human = Vec::new();
        for message in messages {
            let (person, id, content) = match message {
                InputMessage::Typed(TypedMessage { kind, id, content }) => {
                    (kind == MessageType::Human, id, content)
                }
                InputMessage::Role(RoleMessage { role, id, content }) => {
                    (role == Role::User, id, content)
                }
            };
            let blocks = content.blocks()?;
            if id.as_ref().is_some_and(|id| !(1..=200).contains(&id.len())) {
                let why = "a message id must be 1 to 200 characters";
                return Err(ApiError::bad_request("input", why));
            }
            if person {
                let id = id.unwrap_or_else(airlock_base::clock::fresh_id);
                human.push(Message::user(id, blocks));
            }
        }
        Ok(human)
    }
}

/// One message or a list of them.
enum Messages {
    Many(Vec<InputMessage>),
    One(InputMessage),
}

impl<'de> Deserialize<'de> for Messages {
    /// By hand rather than `untagged`, so a message's own error reaches the client.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Messages, D::Error> {
        let messages = match Value::deserialize(deserializer)? {
            many @ Value::Array(_) => serde_json::from_value(many).map(Messages::Many),
            one => serde_json::from_value(one).map(Messages::One),
        };
        messages.map_err(serde::de::Error::custom)
    }
}

/// A message in LangChain's shape (`type`) or OpenAI's (`role`).
#[derive(Deserialize)]
#[serde(
    untagged,
    expecting = "a message must be {type: \"human\", content} (LangChain's shape) or {role: \"user\", content}"
)]
enum InputMessage {
    #[serde(deserialize_with = "object")]
    Typed(TypedMessage),
    #[serde(deserialize_with = "object")]
    Role(RoleMessage),
}

/// A message in LangChain's shape.
#[derive(Deserialize)]
struct TypedMessage {
    #[serde(rename = "type")]
    kind: MessageType,
    id: Option<String>,
    content: Content,
}

/// A message in OpenAI's shape.
#[derive(Deserialize)]
struct RoleMessage {
    role: Role,
    id: Option<String>,
    content: Content,
}

/// LangChain's message types.
#[derive(Deserialize, PartialEq)]
#[serde(rename_all = "snake_case")]
enum MessageType {
    Human,
    Ai,
    Tool,
    System,
}

/// OpenAI's roles.
#[derive(Deserialize, PartialEq)]
#[serde(rename_all = "snake_case")]
enum Role {
    User,
    Assistant,
    Tool,
    System,
    Developer,
}

/// A message's content: text, or a list of parts.
#[derive(Deserialize)]
#[serde(untagged, expecting = "a message's content must be text or a list of parts")]
enum Content {
    Text(String),
    Parts(Vec<Part>),
}

/// A part: text, or a block.
#[derive(Deserialize)]
#[serde(
    untagged,
    expecting = "a part must be text, {type: \"text\", text} or {type: \"image_url\", image_url: {url: \"data:image/png;base64,…\"}}"
)]
enum Part {
    Text(String),
    #[serde(deserialize_with = "object")]
    Block(Block),
}

/// A part that says what it is.
#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Block {
    Text { text: String },
    ImageUrl { image_url: ImageUrl },
}

/// `{url}`.
#[derive(Deserialize)]
struct DataUrl {
    url: String,
}

/// An image's URL, or `{url}`: a `data:` URL (Airlock fetches nothing for a client).
#[derive(Deserialize)]
#[serde(untagged)]
enum ImageUrl {
    Url(String),
    #[serde(deserialize_with = "object")]
    Object(DataUrl),
}

impl Content {
    /// The content as the session's blocks; an image must be one Airlock takes.
    fn blocks(self) -> Result<Vec<ContentBlock>, ApiError> {
        let parts = match self {
            Content::Text(text) => return Ok(vec![ContentBlock::Text { text }]),
            Content::Parts(parts) => parts,
        };
        let block = |part| match part {
            Part::Text(text) | Part::Block(Block::Text { text }) => Ok(ContentBlock::Text { text }),
            Part::Block(Block::ImageUrl {
                image_url: ImageUrl::Url(url) | ImageUrl::Object(DataUrl { url }),
            }) => image(&url),
        };
        parts.into_iter().map(block).collect()
    }
}

/// The image of a `data:` URL.
fn image(url: &str) -> Result<ContentBlock, ApiError> {
    let data = url.strip_prefix("data:").and_then(|rest| rest.split_once(";base64,"));
    match data {
        Some((media_type, data)) if IMAGE_TYPES.contains(&media_type) && is_base64(data) => {
            Ok(ContentBlock::Image { media_type: media_type.to_owned(), data: data.to_owned() })
        }
        _ => Err(ApiError::bad_request(
            "input",
            format!(
                "an image must be a data: URL of {} in padded standard base64 (Airlock fetches nothing for a client)",
                IMAGE_TYPES.join(", ")
            ),
        )),
    }
}

/// A run's command: its answers to the thread's interrupts.
#[derive(Deserialize)]
pub(super) struct Command {
    pub resume: Option<Resume>,
}

/// Answers to the interrupts: one decision for them all, LangChain's `{decisions: [...]}` in
/// the order the interrupts came, or a map of interrupt id to decision.
#[derive(Deserialize)]
#[serde(
    untagged,
    expecting = "command.resume must be a decision (true or false, \"approve\" or \"reject\", {type: \"approve\" | \"edit\" | \"reject\"}), {decisions: [...]} or a map of interrupt id to decision"
)]
pub(super) enum Resume {
    One(Decision),
    #[serde(deserialize_with = "object")]
    Decisions(Decisions),
    ById(BTreeMap<String, Decision>),
}

/// LangChain's decisions, one per interrupt in the order they came.
#[derive(Deserialize)]
pub(super) struct Decisions {
    pub decisions: Vec<Decision>,
}

/// A person's decision on one call.
#[derive(Deserialize)]
#[serde(untagged)]
pub(super) enum Decision {
    Yes(bool),
    Word(Word),
    #[serde(deserialize_with = "object")]
    Typed(Typed),
}

/// A decision in a word.
#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum Word {
    Approve,
    Reject,
}

/// A decision as LangChain's human-in-the-loop middleware writes it.
#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum Typed {
    Approve {},
    Edit {
        #[serde(deserialize_with = "object")]
        edited_action: EditedAction,
    },
    Reject {
        message: Option<String>,
    },
}

/// The call as the person edited it.
#[derive(Deserialize)]
pub(super) struct EditedAction {
    pub args: Map<String, Value>,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn human(input: Value) -> Result<Vec<Message>, String> {
        let input: RunInput = serde_json::from_value(input).map_err(|e| e.to_string())?;
        input.human().map_err(|e| e.message().to_owned())
    }

    #[test]
    fn a_human_message_from_a_client_is_text_or_parts_and_other_roles_are_passed_over() {
        let text = human(json!({"messages": {"type": "human", "content": "hi", "id": "m"}}));
        let hi = Message::user("m".into(), vec![ContentBlock::Text { text: "hi".into() }]);
        assert_eq!(text.unwrap(), [hi]);
        let image = json!({"role": "user", "content": [{"type": "text", "text": "see"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]});
        let ai = json!({"type": "ai", "content": "x"});
        let taken = human(json!({"messages": [ai, image]})).unwrap();
        assert_eq!(taken.len(), 1);
        assert_eq!(taken[0].content.len(), 2);
        let no_id = human(json!({"messages": [{"type": "ai", "id": "", "content": "x"}]}));
        assert!(no_id.unwrap_err().contains("1 to 200"), "an id is checked whoever wrote it");
        let no_role = human(json!({"messages": [{"content": "x"}]})).unwrap_err();
        assert!(no_role.contains("type: \"human\""), "{no_role}");
        let remote = json!({"type": "human", "content": [{"type": "image_url", "image_url": "https://x/y.png"}]});
        let remote = human(json!({"messages": [remote]})).unwrap_err();
        assert!(remote.contains("data: URL"), "{remote}");
    }

    #[test]
    fn a_resume_is_one_decision_a_list_of_them_or_a_map_by_interrupt_id() {
        let resume =
            |value: Value| serde_json::from_value::<Resume>(value).map_err(|e| e.to_string());
        assert!(matches!(resume(json!(true)), Ok(Resume::One(Decision::Yes(true)))));
        assert!(matches!(resume(json!("reject")), Ok(Resume::One(Decision::Word(Word::Reject)))));
        let edit = json!({"type": "edit", "edited_action": {"name": "x", "args": {"a": 1}}});
        assert!(matches!(resume(edit), Ok(Resume::One(Decision::Typed(Typed::Edit { .. })))));
        let decisions = json!({"decisions": [{"type": "approve"}, false]});
        assert!(
            matches!(resume(decisions), Ok(Resume::Decisions(list)) if list.decisions.len() == 2)
        );
        assert!(
            matches!(resume(json!({"call-1": "approve"})), Ok(Resume::ById(map)) if map.len() == 1)
        );
        let wrong = [
            json!("maybe"),
            json!(5),
            json!({"type": "edit"}),
            json!({"call-1": 5}),
            json!([[true]]),
            json!({"type": "edit", "edited_action": [{}]}),
        ];
        for wrong in wrong {
            let error = resume(wrong.clone()).map(|_| ()).unwrap_err();
            assert!(error.contains("command.resume must be"), "{wrong}: {error}");
        }
    }
}
