//! `fetch`: an HTTP GET through `wasi:http`. The gateway sends the request only to hosts the
//! manifest grants, resolving the URL's host itself; a refused request comes back as `denied`.
//! The `Host` header is the gateway's to set: a plugin that tries is refused too.

wit_bindgen::generate!({ world: "tool-plugin", path: "../../wit/plugin" });

use wasi::http::outgoing_handler;
use wasi::http::types::{ErrorCode, Fields, HeaderError, Method, OutgoingRequest, Scheme};

/// The most body bytes returned to the model.
const MAX_BODY: usize = 64 * 1024;

struct Fetch;

#[derive(serde::Deserialize)]
struct Arguments {
    url: String,
    #[serde(default)]
    headers: Vec<(String, String)>,
}

impl Guest for Fetch {
    fn describe() -> Vec<ToolSpec> {
        vec![ToolSpec {
            name: "fetch".into(),
            description: "GETs a URL (http or https) and returns its status and up to 64 KiB of \
                its body. Only hosts the plugin was granted are reachable."
                .into(),
            parameters: r#"{"type":"object","properties":{"url":{"type":"string"},"headers":{"type":"array","items":{"type":"array","items":{"type":"string"},"minItems":2,"maxItems":2}}},"required":["url"]}"#.into(),
            parallel_safe: true,
        }]
    }

    fn call(name: String, arguments: String) -> Result<String, ToolError> {
        if name != "fetch" {
            return Err(ToolError::Failed(format!("fetch offers no tool {name:?}")));
        }
        let args: Arguments = serde_json::from_str(&arguments)
            .map_err(|e| ToolError::BadArguments(format!("expected {{\"url\": \"...\"}}: {e}")))?;
        get(&args)
    }
}

fn get(args: &Arguments) -> Result<String, ToolError> {
    let (scheme, rest) = match args.url.split_once("://") {
        Some(("http", rest)) => (Scheme::Http, rest),
        Some(("https", rest)) => (Scheme::Https, rest),
        _ => return Err(ToolError::BadArguments(format!("{:?} is not an http(s) URL", args.url))),
    };
    let (authority, path) = match rest.find('/') {
        Some(at) => (&rest[..at], &rest[at..]),
        None => (rest, "/"),
    };
    let headers = Fields::new();
    for (name, value) in &args.headers {
        headers.append(name, value.as_bytes()).map_err(|e| match e {
            HeaderError::Forbidden => {
                ToolError::Denied(format!("the {name} header is the gateway's to set"))
            }
            other => ToolError::BadArguments(format!("header {name}: {other:?}")),
        })?;
    }
    let request = OutgoingRequest::new(headers);
    let invalid = |what: &str| ToolError::BadArguments(format!("invalid {what} in {:?}", args.url));
    request.set_method(&Method::Get).map_err(|()| invalid("method"))?;
    request.set_scheme(Some(&scheme)).map_err(|()| invalid("scheme"))?;
    request.set_authority(Some(authority)).map_err(|()| invalid("host"))?;
    request.set_path_with_query(Some(path)).map_err(|()| invalid("path"))?;

    let pending = outgoing_handler::handle(request, None).map_err(refused)?;
    pending.subscribe().block();
    let response = match pending.get() {
        Some(Ok(Ok(response))) => response,
        Some(Ok(Err(code))) => return Err(refused(code)),
        _ => return Err(ToolError::Failed("the response never came".into())),
    };
    let status = response.status();
    let body = response.consume().map_err(|()| ToolError::Failed("no body".into()))?;
    let stream = body.stream().map_err(|()| ToolError::Failed("no body stream".into()))?;
    let mut bytes = Vec::new();
    while bytes.len() < MAX_BODY {
        match stream.blocking_read((MAX_BODY - bytes.len()) as u64) {
            Ok(chunk) => bytes.extend(chunk),
            Err(_) => break, // closed: the body is complete
        }
    }
    let body = String::from_utf8_lossy(&bytes);
    Ok(serde_json::json!({ "status": status, "body": body }).to_string())
}

fn refused(code: ErrorCode) -> ToolError {
    match code {
        ErrorCode::HttpRequestDenied => {
            ToolError::Denied("this plugin was not granted that host".into())
        }
        other => ToolError::Failed(format!("the request failed: {other:?}")),
    }
}

export!(Fetch);
