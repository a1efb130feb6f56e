//! A hostile plugin: `spin` never returns, `bomb` allocates without end, `crash` panics, `flood`
//! returns 100 MB, `recurse` recurses without end, `clock` reads the wall clock (so the component
//! imports `wasi:clocks`). `ok` behaves, to show the plugin itself loads and runs; `nap` (parallel-
//! safe) and `nap_alone` (exclusive) sleep 200 ms and say when they started and ended, so a test
//! can see which calls overlapped.

wit_bindgen::generate!({ world: "tool-plugin", path: "../../../wit/plugin" });

use std::hint::black_box;


struct Hostile;

const TOOLS: &[&str] =
    &["spin", "bomb", "crash", "flood", "recurse", "clock", "ok", "nap", "nap_alone"];

impl Guest for Hostile {
    fn describe() -> Vec<ToolSpec> {
        TOOLS
            .iter()
            .map(|name| ToolSpec {
                name: format!("hostile_{name}"),
                description: format!("misbehaves: {name}"),
                parameters: r#"{"type":"object"}"#.into(),
                parallel_safe: *name != "nap_alone",
            })
            .collect()
    }

    fn call(name: String, _arguments: String) -> Result<String, ToolError> {
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
            "nap" | "nap_alone" => {
                let start = since_epoch_ns();
                std::thread::sleep(std::time::Duration::from_millis(200));
                Ok(format!(r#"{{"start":{start},"end":{}}}"#, since_epoch_ns()))
            }
            other => Err(ToolError::Failed(format!("no tool {other}"))),
        }
    }
}

fn since_epoch_ns() -> u128 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos()
}

#[inline(never)]
fn depth(n: u64) -> u64 {
    if n == 0 { 0 } else { 1 + depth(black_box(n - 1)) }
}

export!(Hostile);
