//! A hostile plugin: `spin` never returns, `bomb` allocates without end, `crash` panics, `flood`
//! returns 100 MB, `recurse` recurses without end, `clock` reads the wall clock (so the component
//! imports `wasi:clocks`). `ok` behaves, to show the plugin itself loads and runs; `nap` (parallel-
//! safe) and `nap_alone` (exclusive) sleep 200 ms and say when they started and ended, so a test
//! can see which calls overlapped.
//!
//! Escape attempts: `read`, `write` and `list` take a path (the arguments, a JSON string) and try
//! it; `env` answers the environment and arguments it sees; `log_flood` calls `log` 20,000 times
//! with 64 KB messages. And `describe` misbehaves as the file `/describe/mode` says, when a test
//! grants one: `many` answers 50,000 tools with 1 KB descriptions, `dotted` a tool named `a.b`,
//! `long_name` a 65-character name, `twice` one name twice, `long_description` a 5 KB
//! description, `big_schema` a 20 KB schema, `bad_schema` one that is not a JSON Schema.

wit_bindgen::generate!({ world: "tool-plugin", path: "../../../wit/plugin" });

use std::hint::black_box;

struct Hostile;

const TOOLS: &[&str] = &[
    "spin",
    "bomb",
    "crash",
    "flood",
    "recurse",
    "clock",
    "ok",
    "nap",
    "nap_alone",
    "read",
    "write",
    "list",
    "env",
    "log_flood",
];

const OBJECT: &str = r#"{"type":"object"}"#;

impl Guest for Hostile {
    fn describe() -> Vec<ToolSpec> {
        let mut tools: Vec<ToolSpec> = TOOLS
            .iter()
            .map(|name| ToolSpec {
                name: format!("hostile_{name}"),
                description: format!("misbehaves: {name}"),
                parameters: OBJECT.into(),
                parallel_safe: *name != "nap_alone",
            })
            .collect();
        let tool = |name: &str, description: String, parameters: String| ToolSpec {
            name: name.into(),
            description,
            parameters,
            parallel_safe: true,
        };
        let mode = std::fs::read_to_string("/describe/mode").unwrap_or_default();
        match mode.trim() {
            "many" => {
                let description = "d".repeat(1024);
                tools.extend(
                    (0..50_000)
                        .map(|i| tool(&format!("many_{i}"), description.clone(), OBJECT.into())),
                );
            }
            "dotted" => tools.push(tool("a.b", "dotted".into(), OBJECT.into())),
            "long_name" => tools.push(tool(&"n".repeat(65), "long".into(), OBJECT.into())),
            "twice" => tools.push(tool("hostile_ok", "again".into(), OBJECT.into())),
            "long_description" => tools.push(tool("wordy", "w".repeat(5 << 10), OBJECT.into())),
            "big_schema" => {
                let schema =
                    format!(r#"{{"type":"object","description":"{}"}}"#, "s".repeat(20 << 10));
                tools.push(tool("schemy", "big schema".into(), schema));
            }
            "bad_schema" => tools.push(tool(
                "bad",
                "bad schema".into(),
                r#"{"type":"object","required":7}"#.into(),
            )),
            _ => {}
        }
        tools
    }

    fn call(name: String, arguments: String) -> Result<String, ToolError> {
        match name.trim_start_matches("hostile_") {
            "spin" => loop {
                black_box(());
            },
            "bomb" => {
                let mut hoard: Vec<Vec<u8>> = Vec::new();
                loop {
                    hoard.push(vec![1; 1 << 20]);
                    black_box(&hoard);
                }
            }
            "crash" => panic!("the hostile plugin panics"),
            "flood" => Ok("x".repeat(100 << 20)),
            "recurse" => Ok(depth(black_box(u64::MAX)).to_string()),
            "clock" => Ok(format!("{:?}", std::time::SystemTime::now())),
            "ok" => Ok("fine".into()),
            "read" => std::fs::read_to_string(path(&arguments)).map_err(denied),
            "write" => {
                std::fs::write(path(&arguments), "pwned").map(|()| "written".into()).map_err(denied)
            }
            "list" => {
                let entries = std::fs::read_dir(path(&arguments)).map_err(denied)?;
                let names: Vec<String> = entries
                    .filter_map(Result::ok)
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect();
                Ok(names.join("\n"))
            }
            "env" => {
                let vars: Vec<(String, String)> = std::env::vars().collect();
                let args: Vec<String> = std::env::args().collect();
                Ok(format!("vars={vars:?} args={args:?}"))
            }
            "log_flood" => {
                let message = "L".repeat(64 << 10);
                for _ in 0..20_000 {
                    airlock::plugin::log::log(airlock::plugin::log::Level::Info, &message);
                }
                Ok("flooded".into())
            }
            "nap" | "nap_alone" => {
                let start = since_epoch_ns();
                std::thread::sleep(std::time::Duration::from_millis(200));
                Ok(format!(r#"{{"start":{start},"end":{}}}"#, since_epoch_ns()))
            }
            other => Err(ToolError::Failed(format!("no tool {other}"))),
        }
    }
}

/// The path in the arguments, a JSON string.
fn path(arguments: &str) -> String {
    arguments.trim().trim_matches('"').to_owned()
}

fn denied(error: std::io::Error) -> ToolError {
    ToolError::Denied(error.to_string())
}

fn since_epoch_ns() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos()
}

#[inline(never)]
fn depth(n: u64) -> u64 {
    if n == 0 { 0 } else { 1 + depth(black_box(n - 1)) }
}

export!(Hostile);
