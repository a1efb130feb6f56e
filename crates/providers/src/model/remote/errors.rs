//! Failures of a model request over HTTP, in either wire, as the core's [`ModelError`] codes.
//!
//! The provider never retries: it classifies, and the core decides (`RATE_LIMIT`, `SERVER`,
//! `SERVICE_UNAVAILABLE`, `TIMEOUT`, `CONNECTION` and `MALFORMED` are retried with backoff).

use std::error::Error as _;
use std::time::{Duration, SystemTime};

use airlock_core::ModelError;
use reqwest::StatusCode;
use reqwest::header::{HeaderMap, RETRY_AFTER};
use serde_json::Value;

/// The longest upstream text quoted in a message.
const QUOTE_LIMIT: usize = 500;

fn error(code: &str, message: String) -> ModelError {
    ModelError { code: code.to_owned(), message, status: None, retry_after_ms: None }
}

/// A non-2xx answer: the code follows the status, the message quotes the upstream error.
pub(super) fn http_status(
    provider: &str,
    status: StatusCode,
    headers: &HeaderMap,
    body: &str,
    now: SystemTime,
) -> ModelError {
    let upstream = upstream_message(body);
    let said = |what: String| match &upstream {
        Some(text) => format!("{what}: {text}"),
        None => what,
    };
    let http = format!("HTTP {}", status.as_u16());
    let (code, message) = match status.as_u16() {
        429 => ("RATE_LIMIT", said(format!("{provider} is rate limiting requests ({http})"))),
        500 | 502 | 504 => ("SERVER", said(format!("{provider} had a server error ({http})"))),
        503 => ("SERVICE_UNAVAILABLE", said(format!("{provider} is unavailable ({http})"))),
        529 => ("SERVICE_UNAVAILABLE", said(format!("{provider} is overloaded ({http})"))),
        401 | 403 => {
            let text = said(format!("{provider} refused the credentials ({http})"));
            ("AUTH", format!("{text}; check the API key"))
        }
        400 if is_overflow(body) => {
            let text = format!("the conversation does not fit the model's context ({http})");
            ("CONTEXT_OVERFLOW", said(text))
        }
        400..=499 => ("BAD_REQUEST", said(format!("{provider} rejected the request ({http})"))),
        500..=599 => ("SERVER", said(format!("{provider} had a server error ({http})"))),
        _ => ("UNKNOWN", said(format!("{provider} answered with an unexpected {http}"))),
    };
    ModelError {
        status: Some(status.as_u16()),
        retry_after_ms: retry_after_ms(headers, now),
        ..error(code, message)
    }
}

/// Whether a 400's body says the conversation is longer than the model's context.
fn is_overflow(body: &str) -> bool {
    let lower = body.to_lowercase();
    ["context length", "context_length", "maximum context", "context window", "prompt is too long"]
        .iter()
        .any(|needle| lower.contains(needle))
}

/// `Retry-After` (seconds, or an HTTP date) in milliseconds; a past date means "at once".
pub(super) fn retry_after_ms(headers: &HeaderMap, now: SystemTime) -> Option<u64> {
    let value = headers.get(RETRY_AFTER)?.to_str().ok()?.trim();
    if let Ok(seconds) = value.parse::<f64>() {
        return (seconds.is_finite() && seconds >= 0.0).then(|| (seconds * 1000.0).round() as u64);
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(now).map(|d| d.as_millis() as u64).unwrap_or(0))
}

/// The `error.message` of an OpenAI-style body, or the body itself, shortened.
fn upstream_message(body: &str) -> Option<String> {
    let json: Option<Value> = serde_json::from_str(body).ok();
    let from_json = json.as_ref().and_then(|v| {
        let error = &v["error"];
        [&error["message"], error, &v["message"], &v["detail"]]
            .into_iter()
            .find_map(|field| field.as_str().map(str::to_owned))
    });
    let text = from_json.unwrap_or_else(|| body.trim().to_owned());
    (!text.is_empty()).then(|| quote(&text))
}

/// `text` cut to [`QUOTE_LIMIT`] characters.
pub(in crate::model) fn quote(text: &str) -> String {
    match text.char_indices().nth(QUOTE_LIMIT) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_owned(),
    }
}

/// The request could not be sent or its answer never started.
pub(super) fn send_failed(provider: &str, err: &reqwest::Error, connect: Duration) -> ModelError {
    if err.is_connect() && err.is_timeout() {
        let message = format!("could not connect to {provider} within {}", seconds(connect));
        return error("TIMEOUT", message);
    }
    let what = if err.is_connect() { "could not connect to" } else { "lost the connection to" };
    error("CONNECTION", format!("{what} {provider}: {}", chain(err)))
}

/// The response body broke off.
pub(super) fn broken(provider: &str, err: &reqwest::Error) -> ModelError {
    error("CONNECTION", format!("the connection to {provider} broke mid-stream: {}", chain(err)))
}

/// Nothing arrived in time: before the first byte, or between two reads.
pub(super) fn timed_out(provider: &str, started: bool, waited: Duration) -> ModelError {
    let message = if started {
        format!("{provider} stopped sending for {} mid-stream", seconds(waited))
    } else {
        format!("{provider} sent no response within {}", seconds(waited))
    };
    error("TIMEOUT", message)
}

/// The stream was not what the chat-completions wire promises.
pub(in crate::model) fn malformed(provider: &str, what: String) -> ModelError {
    error("MALFORMED", format!("{provider} sent a malformed stream: {what}"))
}

/// The stream closed before the model said it had finished.
pub(super) fn ended_early(provider: &str) -> ModelError {
    error("CONNECTION", format!("{provider} closed the stream before the response was complete"))
}

/// An `error` object inside a 200 stream, classed by its `error.type` where it has one
/// (Anthropic's `overloaded_error`, `rate_limit_error`, ...); any other is a server error.
pub(in crate::model) fn in_stream(provider: &str, data: &str) -> ModelError {
    let text = upstream_message(data).unwrap_or_else(|| "no details".to_owned());
    let kind = serde_json::from_str::<Value>(data)
        .ok()
        .and_then(|v| v["error"]["type"].as_str().map(str::to_owned));
    let code = match kind.as_deref() {
        Some("overloaded_error") => "SERVICE_UNAVAILABLE",
        Some("rate_limit_error") => "RATE_LIMIT",
        Some("authentication_error" | "permission_error") => "AUTH",
        Some("invalid_request_error") if is_overflow(data) => "CONTEXT_OVERFLOW",
        Some("invalid_request_error") => "BAD_REQUEST",
        _ => "SERVER",
    };
    error(code, format!("{provider} reported an error mid-stream: {text}"))
}

/// A request the provider cannot even build.
pub(in crate::model) fn bad_request(message: String) -> ModelError {
    error("BAD_REQUEST", message)
}

fn seconds(d: Duration) -> String {
    format!("{:.1} s", d.as_secs_f64())
}

/// reqwest's own message and its causes ("error sending request: connection refused (os ...)").
fn chain(err: &reqwest::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(retry_after: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(RETRY_AFTER, retry_after.parse().unwrap());
        headers
    }

    #[test]
    fn retry_after_reads_seconds_and_http_dates() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        assert_eq!(retry_after_ms(&headers("2"), now), Some(2_000));
        assert_eq!(retry_after_ms(&headers("0"), now), Some(0));
        let later = httpdate::fmt_http_date(now + Duration::from_secs(3));
        assert_eq!(retry_after_ms(&headers(&later), now), Some(3_000));
        let earlier = httpdate::fmt_http_date(now - Duration::from_secs(3));
        assert_eq!(retry_after_ms(&headers(&earlier), now), Some(0));
        assert_eq!(retry_after_ms(&headers("soon"), now), None);
    }

    #[test]
    fn a_400_about_context_length_is_a_context_overflow() {
        let body = r#"{"error":{"message":"This model's maximum context length is 8192 tokens","code":"context_length_exceeded"}}"#;
        let err = http_status(
            "openai",
            StatusCode::BAD_REQUEST,
            &HeaderMap::new(),
            body,
            SystemTime::now(),
        );
        assert_eq!(err.code, "CONTEXT_OVERFLOW");
        assert!(err.message.contains("maximum context length is 8192"), "{}", err.message);
        let other = http_status(
            "openai",
            StatusCode::BAD_REQUEST,
            &HeaderMap::new(),
            r#"{"error":{"message":"bad tools"}}"#,
            SystemTime::now(),
        );
        assert_eq!((other.code.as_str(), other.status), ("BAD_REQUEST", Some(400)));
    }

    #[test]
    fn statuses_map_to_codes() {
        let code = |status: u16| {
            let status = StatusCode::from_u16(status).unwrap();
            http_status("p", status, &HeaderMap::new(), "", SystemTime::now()).code
        };
        assert_eq!(code(429), "RATE_LIMIT");
        assert_eq!(code(502), "SERVER");
        assert_eq!(code(503), "SERVICE_UNAVAILABLE");
        assert_eq!(code(403), "AUTH");
        assert_eq!(code(404), "BAD_REQUEST");
    }
}
