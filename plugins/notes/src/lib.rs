//! `note_write` and `note_read`: text files under `/notes`, the one directory the manifest
//! grants. The plugin passes the model's path to the filesystem as it is; the sandbox, not this
//! code, is what keeps `../`, absolute paths and symlinks from leaving the directory, and such a
//! refusal comes back as `denied`.

wit_bindgen::generate!({ world: "tool-plugin", path: "../../wit/plugin" });

use std::io::ErrorKind;
use std::path::{Component, Path, PathBuf};


/// Where the granted directory appears inside the sandbox.
const ROOT: &str = "/notes";

struct Notes;

#[derive(serde::Deserialize)]
struct WriteArgs {
    path: String,
    text: String,
}

#[derive(serde::Deserialize)]
struct ReadArgs {
    path: String,
}

impl Guest for Notes {
    fn describe() -> Vec<ToolSpec> {
        let path = r#""path":{"type":"string","description":"A file name relative to the notes directory, e.g. todo.txt"}"#;
        vec![
            ToolSpec {
                name: "note_write".into(),
                description: "Writes a text note (replacing it) in the notes directory.".into(),
                parameters: format!(
                    r#"{{"type":"object","properties":{{{path},"text":{{"type":"string"}}}},"required":["path","text"]}}"#
                ),
                parallel_safe: false,
            },
            ToolSpec {
                name: "note_read".into(),
                description: "Reads a text note from the notes directory.".into(),
                parameters: format!(
                    r#"{{"type":"object","properties":{{{path}}},"required":["path"]}}"#
                ),
                parallel_safe: true,
            },
        ]
    }

    fn call(name: String, arguments: String) -> Result<String, ToolError> {
        let bad = |e: serde_json::Error| ToolError::BadArguments(e.to_string());
        match name.as_str() {
            "note_write" => {
                let args: WriteArgs = serde_json::from_str(&arguments).map_err(bad)?;
                let path = resolve(&args.path);
                std::fs::write(&path, &args.text).map_err(|e| refused(&args.path, e))?;
                Ok(format!("wrote {} bytes to {}", args.text.len(), args.path))
            }
            "note_read" => {
                let args: ReadArgs = serde_json::from_str(&arguments).map_err(bad)?;
                std::fs::read_to_string(resolve(&args.path)).map_err(|e| refused(&args.path, e))
            }
            other => Err(ToolError::Failed(format!("notes offers no tool {other:?}"))),
        }
    }
}

/// The path as the sandbox sees it: relative paths under `/notes`, absolute ones as given.
fn resolve(path: &str) -> PathBuf {
    Path::new(ROOT).join(path)
}

/// Whether `path`, taken lexically, stays inside the notes directory.
fn inside(path: &str) -> bool {
    let mut depth = 0i32;
    for part in Path::new(path).components() {
        match part {
            Component::Normal(_) => depth += 1,
            Component::ParentDir => depth -= 1,
            Component::CurDir => {}
            Component::RootDir | Component::Prefix(_) => return false,
        }
        if depth < 0 {
            return false;
        }
    }
    true
}

/// A filesystem error as the model should see it: outside the grant is `denied`.
fn refused(path: &str, error: std::io::Error) -> ToolError {
    match error.kind() {
        ErrorKind::NotFound if inside(path) => ToolError::Failed(format!("no note at {path:?}")),
        _ if !inside(path) || error.kind() == ErrorKind::PermissionDenied => ToolError::Denied(
            format!("{path:?} is outside the notes directory this plugin was granted ({error})"),
        ),
        _ => ToolError::Failed(format!("{path:?}: {error}")),
    }
}

export!(Notes);
