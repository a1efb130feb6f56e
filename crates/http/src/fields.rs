//! Request fields the API checks beyond their JSON type, each beside the OpenAPI schema that says
//! the same thing: what a schema allows, the handler takes, and what it refuses, the handler
//! refuses with a sentence naming the field.

use airlock_core::ContentBlock;
use axum::http::HeaderMap;
use serde::de::{Deserializer, Error as _};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use utoipa::openapi::schema::{ArrayBuilder, ObjectBuilder, OneOfBuilder, Schema, Type};
use utoipa::openapi::{Ref, RefOr};

use super::ApiError;
use airlock_sessions::IdempotencyKey;

/// The image types a message may carry: the ones model providers read.
pub(super) const IMAGE_TYPES: &[&str] = &["image/png", "image/jpeg", "image/gif", "image/webp"];

/// Padded standard base64, as [`is_base64`] reads it. `$(?![\s\S])` is an end that means the
/// end in every regex dialect (a bare `$` may also match before a final newline).
pub(super) const BASE64_PATTERN: &str =
    r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$(?![\s\S])";

/// Message content: a non-empty string (one text block) or a non-empty list of `text` and
/// `image` blocks, none of them empty. The one constructor is deserialization, which refuses
/// anything else, so every `Content` can be sent.
#[derive(Clone, Serialize)]
#[serde(untagged)]
pub(super) enum Content {
    /// Text, the same as one text block.
    Text(String),
    /// Content blocks.
    Blocks(Vec<ContentBlock>),
}

impl<'de> Deserialize<'de> for Content {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Content, D::Error> {
        match serde_json::Value::deserialize(deserializer)? {
            serde_json::Value::String(text) if text.is_empty() => {
                Err(D::Error::custom("content is empty; send some text or content blocks"))
            }
            serde_json::Value::String(text) => Ok(Content::Text(text)),
            serde_json::Value::Array(blocks) if blocks.is_empty() => Err(D::Error::custom(
                "content has no blocks; send at least one, such as {\"type\": \"text\", \"text\": \"hi\"}",
            )),
            serde_json::Value::Array(blocks) => blocks
                .into_iter()
                .enumerate()
                .map(|(index, block)| {
                    input_block(block).map_err(|e| {
                        D::Error::custom(format_args!("content block {index} is not valid: {e}"))
                    })
                })
                .collect::<Result<_, _>>()
                .map(Content::Blocks),
            _ => Err(D::Error::custom(
                "content must be a string or a list of blocks such as [{\"type\": \"text\", \"text\": \"hi\"}]",
            )),
        }
    }
}

/// One block a client may send: text that is not empty, or an image of a known type in base64.
fn input_block(block: serde_json::Value) -> Result<ContentBlock, String> {
    let block: ContentBlock = serde_json::from_value(block).map_err(|e| e.to_string())?;
    match &block {
        ContentBlock::Text { text } if text.is_empty() => {
            Err("its text is empty; leave the block out or give it some text".into())
        }
        ContentBlock::Text { .. } => Ok(block),
        ContentBlock::Image { media_type, .. } if !IMAGE_TYPES.contains(&media_type.as_str()) => {
            Err(format!("mediaType {media_type:?} is not one of {}", IMAGE_TYPES.join(", ")))
        }
        ContentBlock::Image { data, .. } if !is_base64(data) => {
            Err("data is not padded standard base64 (A-Z, a-z, 0-9, + and /)".into())
        }
        ContentBlock::Image { .. } => Ok(block),
        ContentBlock::Reasoning { .. }
        | ContentBlock::ToolCall { .. }
        | ContentBlock::ToolResult { .. } => {
            Err("a message carries only `text` and `image` blocks".into())
        }
    }
}

/// Whether `data` is non-empty padded standard base64: what [`BASE64_PATTERN`] matches.
pub(super) fn is_base64(data: &str) -> bool {
    let body = data.trim_end_matches('=');
    data.len().is_multiple_of(4)
        && !data.is_empty()
        && data.len() - body.len() <= 2
        && body.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'+' || b == b'/')
}

impl Content {
    /// The blocks of the message.
    pub(super) fn blocks(self) -> Vec<ContentBlock> {
        match self {
            Content::Text(text) => vec![ContentBlock::Text { text }],
            Content::Blocks(blocks) => blocks,
        }
    }
}

impl utoipa::PartialSchema for Content {
    fn schema() -> RefOr<Schema> {
        let blocks = input_blocks()
            .map(|(name, _)| Ref::from_schema_name(name))
            .into_iter()
            .fold(OneOfBuilder::new(), OneOfBuilder::item);
        OneOfBuilder::new()
            .description(Some(
                "A non-empty string (one text block), or a non-empty list of `text` blocks \
                 `{type, text}` and `image` blocks `{type, mediaType, data}`; no block is empty.",
            ))
            .item(ObjectBuilder::new().schema_type(Type::String).min_length(Some(1)))
            .item(ArrayBuilder::new().items(blocks).min_items(Some(1)))
            .into()
    }
}

impl utoipa::ToSchema for Content {
    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        schemas.extend(input_blocks().map(|(name, block)| (name.to_owned(), block.into())));
    }
}

/// The blocks a client may send, as the document names them: [`input_block`] in a schema.
fn input_blocks() -> [(&'static str, Schema); 2] {
    // A block: an object whose `type` is `kind`.
    let block = |kind: &str| {
        let tag = ObjectBuilder::new().schema_type(Type::String).enum_values(Some([kind]));
        ObjectBuilder::new().schema_type(Type::Object).property("type", tag).required("type")
    };
    let text = block("text")
        .property("text", ObjectBuilder::new().schema_type(Type::String).min_length(Some(1)))
        .required("text");
    let image = block("image")
        .property(
            "mediaType",
            ObjectBuilder::new()
                .schema_type(Type::String)
                .enum_values(Some(IMAGE_TYPES.iter().copied())),
        )
        .required("mediaType")
        .property(
            "data",
            ObjectBuilder::new()
                .schema_type(Type::String)
                .min_length(Some(1))
                .pattern(Some(BASE64_PATTERN))
                .description(Some("The image, in padded standard base64.")),
        )
        .required("data");
    [("TextInput", text.build().into()), ("ImageInput", image.build().into())]
}

pub(super) use airlock_base::input::whole;

/// `deserialize_with` for an owned run's `timeoutMs`: a whole number of milliseconds, at most a
/// day.
pub(super) fn run_timeout<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<u64>, D::Error> {
    const DAY_MS: u64 = 86_400_000;
    match whole::<D, u64>(deserializer)? {
        Some(ms) if ms > DAY_MS => {
            Err(D::Error::custom(format_args!("{ms} is over a day ({DAY_MS} ms)")))
        }
        timeout => Ok(timeout),
    }
}

/// A query's page size: `default` when absent, else 1 to `max`.
#[allow(clippy::result_large_err)] // the handlers answer ApiError by value everywhere
pub(super) fn page_limit(
    limit: Option<u64>,
    default: usize,
    max: usize,
) -> Result<usize, ApiError> {
    match limit {
        None => Ok(default),
        Some(n) if (1..=max as u64).contains(&n) => Ok(n as usize),
        Some(n) => {
            Err(ApiError::bad_request("limit", format!("limit must be 1 to {max}, not {n}")))
        }
    }
}

/// The largest seq a client may name: the log stores seqs as SQLite integers.
const MAX_SEQ: u64 = i64::MAX as u64;

/// An `after` query value: a seq, 0 to [`MAX_SEQ`].
#[allow(clippy::result_large_err)]
pub(super) fn after(value: Option<u64>) -> Result<Option<u64>, ApiError> {
    match value {
        Some(n) if n > MAX_SEQ => {
            Err(ApiError::bad_request("after", format!("after must be a seq, 0 to {MAX_SEQ}")))
        }
        _ => Ok(value),
    }
}

/// The seq a `Last-Event-ID` header names: 1 to 18 digits (so every value is a seq the log can
/// hold), the pattern `^[0-9]{1,18}$` its annotation shows.
#[allow(clippy::result_large_err)]
pub(super) fn parse_last_event_id(value: &[u8]) -> Result<u64, ApiError> {
    std::str::from_utf8(value)
        .ok()
        .filter(|text| (1..=18).contains(&text.len()) && text.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|text| text.parse().ok())
        .ok_or_else(|| {
            ApiError::bad_request("Last-Event-ID", "Last-Event-ID must be the seq of an event")
        })
}

/// The `Idempotency-Key` header of a request as the store keeps it: 1 to 200 visible ASCII
/// characters (the pattern `^[!-~]{1,200}$` its annotation shows), scoped to the caller's tenant
/// and to `scope` (the session, `SESSION runs` for its runs, or `runs` for `POST /v1/runs`), so
/// another tenant's same key is
/// another key and no tenant learns which keys another used. `request` is hashed: the same key
/// with another request is a conflict. `None` without the header.
#[allow(clippy::result_large_err)]
pub(super) fn idempotency_key(
    headers: &HeaderMap,
    tenant: Option<&str>,
    scope: &str,
    request: &impl Serialize,
    message_id: &str,
) -> Result<Option<IdempotencyKey>, ApiError> {
    let Some(value) = headers.get("idempotency-key") else { return Ok(None) };
    let key = std::str::from_utf8(value.as_bytes())
        .ok()
        .filter(|key| (1..=200).contains(&key.len()) && key.bytes().all(|b| b.is_ascii_graphic()))
        .ok_or_else(|| {
            ApiError::bad_request(
                "Idempotency-Key",
                "the Idempotency-Key header must be 1 to 200 visible ASCII characters",
            )
        })?;
    Ok(Some(scoped_key(tenant, scope, key, request, message_id)))
}

/// The idempotency key `key` as the store keeps it: scoped to `tenant` and `scope`, with a hash
/// of `request` (see [`idempotency_key`]).
pub(super) fn scoped_key(
    tenant: Option<&str>,
    scope: &str,
    key: &str,
    request: &impl Serialize,
    message_id: &str,
) -> IdempotencyKey {
    let hash = Sha256::digest(serde_json::to_vec(&(scope, request)).expect("requests serialize"));
    IdempotencyKey {
        // Tenant names and scopes hold no space.
        key: format!("{} {scope} {key}", tenant.unwrap_or_default()),
        request_hash: format!("{hash:x}"),
        message_id: message_id.to_owned(),
    }
}

/// Milliseconds since the epoch as RFC 3339 (`2026-12-07T06:11:38.687Z`), as the other
/// protocols write times.
pub(super) fn rfc3339(ms: u64) -> String {
    let ms = i64::try_from(ms).unwrap_or(i64::MAX);
    jiff::Timestamp::from_millisecond(ms).map(|t| t.to_string()).unwrap_or_default()
}
