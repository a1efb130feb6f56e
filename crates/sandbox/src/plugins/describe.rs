//! What a plugin's `describe` may answer. Every session offers every tool to the model in every
//! request, so one plugin may add at most [`MOST_TOOLS`] tools, each named as OpenAI-compatible
//! APIs require (`[a-zA-Z0-9_-]{1,64}`), with a description of at most [`MOST_DESCRIPTION`]
//! bytes and parameters that are a valid JSON Schema of an object of at most [`MOST_SCHEMA`]
//! bytes. A plugin over any of them is refused at load, the message naming the limit.

use serde_json::Value;

use super::bindings::airlock::plugin::types::ToolSpec;
use airlock_providers::tools;

/// The most tools one plugin may offer: half of the 128 an OpenAI request takes.
pub(super) const MOST_TOOLS: usize = 64;

/// The longest description of a tool, in bytes.
pub(super) const MOST_DESCRIPTION: usize = 4 << 10;

/// The longest parameters schema of a tool, in bytes of JSON.
pub(super) const MOST_SCHEMA: usize = 16 << 10;

/// Checks what `describe` answered; the error names the tool and the limit it is over.
pub(super) fn check(specs: &[ToolSpec]) -> Result<(), String> {
    if specs.len() > MOST_TOOLS {
        return Err(format!(
            "`describe` answered {} tools, over the limit of {MOST_TOOLS} tools a plugin may \
             offer (every session offers every tool to the model in every request)",
            specs.len()
        ));
    }
    let mut names: Vec<&str> = Vec::with_capacity(specs.len());
    for spec in specs {
        check_tool(spec)?;
        if names.contains(&spec.name.as_str()) {
            return Err(format!("`describe` answered the tool {:?} twice", spec.name));
        }
        names.push(&spec.name);
    }
    Ok(())
}

fn check_tool(spec: &ToolSpec) -> Result<(), String> {
    let ToolSpec { name, description, parameters, .. } = spec;
    if !tools::valid_name(name) {
        return Err(format!(
            "`describe` answered a tool named {:?}; a tool name must be 1 to {} letters, digits, \
             `_` or `-` (`[a-zA-Z0-9_-]{{1,64}}`), as OpenAI-compatible APIs require",
            shown(name),
            tools::NAME_MOST
        ));
    }
    if description.len() > MOST_DESCRIPTION {
        return Err(format!(
            "tool {name:?}: its description is {} bytes, over the limit of {MOST_DESCRIPTION}",
            description.len()
        ));
    }
    if parameters.len() > MOST_SCHEMA {
        return Err(format!(
            "tool {name:?}: its parameters schema is {} bytes, over the limit of {MOST_SCHEMA}",
            parameters.len()
        ));
    }
    let schema: Value = serde_json::from_str(parameters)
        .map_err(|e| format!("tool {name:?}: its parameters are not JSON ({e})"))?;
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        return Err(format!(
            "tool {name:?}: its parameters must be the JSON Schema of an object \
             (`{{\"type\": \"object\", …}}`), as model APIs require"
        ));
    }
    jsonschema::validator_for(&schema)
        .map_err(|e| format!("tool {name:?}: its parameters are not a valid JSON Schema: {e}"))?;
    Ok(())
}

/// A name short enough to show in a message.
fn shown(name: &str) -> String {
    match name.char_indices().nth(80) {
        Some((end, _)) => format!("{}…", &name[..end]),
        None => name.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(name: &str, parameters: &str) -> ToolSpec {
        ToolSpec {
            name: name.into(),
            description: "a tool".into(),
            parameters: parameters.into(),
            parallel_safe: false,
        }
    }

    const OBJECT: &str = r#"{"type":"object"}"#;

    #[test]
    fn what_describe_may_answer_is_checked_tool_by_tool() {
        assert_eq!(check(&[spec("calc", OBJECT), spec("note-read_2", OBJECT)]), Ok(()));
        let refused = |specs: &[ToolSpec], says: &str| {
            let error = check(specs).expect_err(says);
            assert!(error.contains(says), "{error}");
        };
        refused(&[spec("", OBJECT)], "a tool named \"\"");
        refused(&[spec(&"x".repeat(65), OBJECT)], "1 to 64 letters");
        refused(&[spec("calc", OBJECT), spec("calc", OBJECT)], "\"calc\" twice");
        refused(&[spec("calc", "{")], "not JSON");
        refused(&[spec("calc", r#"{"type":"string"}"#)], "JSON Schema of an object");
        refused(&[spec("calc", r#"{"type":"object","minProperties":-1}"#)], "not a valid");
        let mut long = spec("calc", OBJECT);
        long.description = "d".repeat(MOST_DESCRIPTION + 1);
        refused(&[long], "description is 4097 bytes, over the limit of 4096");
    }

    #[test]
    fn a_long_name_is_shown_cut() {
        assert_eq!(shown(&"é".repeat(100)), format!("{}…", "é".repeat(80)));
        assert_eq!(shown("a.b"), "a.b");
    }
}
