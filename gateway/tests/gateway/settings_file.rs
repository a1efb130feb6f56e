//! `airlock.toml`, the settings file of `airlock serve` (and of `run`, `stdio` and `acp`): every
//! long flag is a key, a flag wins over its variable, which wins over the file, and a bad file is
//! refused saying what to fix. That every flag of `serve` is a key is proved by walking its clap
//! definition (`cli::file`'s unit test).

use std::process::Command;

use crate::cli::{serve_once, serve_once_with};

#[test]
fn serve_reads_airlock_toml_and_a_flag_wins_over_it() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("airlock.toml"),
        "listen = \"127.0.0.1:0\"\ndata = \"from-file.db\"\n",
    )
    .unwrap();
    serve_once(dir.path(), &["--data", "from-flag.db"]);
    assert!(dir.path().join("from-flag.db").exists());
    assert!(!dir.path().join("from-file.db").exists(), "the flag wins over the file");
    serve_once(dir.path(), &[]);
    assert!(dir.path().join("from-file.db").exists(), "the file wins over the default");
}

/// Every flag of `serve` is a key of the file, lists included, and a variable wins over it: here
/// the file's listen address could not be bound, so the gateway listens only because
/// `AIRLOCK_LISTEN` won.
#[test]
fn every_serve_flag_is_a_key_of_airlock_toml_and_a_variable_wins_over_it() {
    let dir = tempfile::tempdir().unwrap();
    let toml = "listen = \"192.0.2.1:1\"\ndata = \"from-file.db\"\n\
                cors-origin = [\"http://a.example\", \"http://b.example\"]\n\
                approval-for = [\"echo\"]\nmax-queue = 7\n";
    std::fs::write(dir.path().join("airlock.toml"), toml).unwrap();
    serve_once_with(dir.path(), &[], &[("AIRLOCK_LISTEN", "127.0.0.1:0")]);
    assert!(dir.path().join("from-file.db").exists(), "the file gave the data file");
}

#[test]
fn a_bad_value_in_airlock_toml_is_refused_naming_the_key_and_what_it_must_be() {
    let (code, stderr) = serve_refusing("idle-evict = \"5x\"\n");
    assert_eq!(code, Some(2));
    assert!(
        stderr.starts_with("airlock: airlock.toml: idle-evict = \"5x\": invalid value '5x'")
            && stderr.contains("unknown time unit"),
        "{stderr}"
    );
}

/// `airlock serve` in a directory whose `airlock.toml` holds `toml`, which it refuses: its exit
/// code and stderr.
fn serve_refusing(toml: &str) -> (Option<i32>, String) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("airlock.toml"), toml).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_airlock"))
        .arg("serve")
        .current_dir(dir.path())
        .output()
        .unwrap();
    (out.status.code(), String::from_utf8(out.stderr).unwrap())
}

#[test]
fn a_bad_airlock_toml_is_refused_with_what_to_fix() {
    let (code, stderr) = serve_refusing("lisen = \"127.0.0.1:0\"\n");
    assert_eq!(code, Some(2));
    assert!(
        stderr.starts_with("airlock: airlock.toml is not valid") && stderr.contains("lisen"),
        "{stderr}"
    );
}

#[test]
fn a_context_window_too_small_in_airlock_toml_is_refused_naming_the_model() {
    let (code, stderr) = serve_refusing("[models.\"openai:tiny\"]\ncontext_window = 10\n");
    assert_eq!(code, Some(2));
    assert_eq!(
        stderr,
        "airlock: airlock.toml: models.\"openai:tiny\": context_window must be at least 100 tokens\n"
    );
}

/// `airlock run` reads `airlock.toml` as `serve` does (here `echo` waits for approval, which
/// `--approve none` denies), but keeps its session out of the server's `data` file, and a model
/// given as a flag wins over the file's.
#[test]
fn run_reads_airlock_toml_but_keeps_its_session_out_of_the_servers_data_file() {
    let dir = tempfile::tempdir().unwrap();
    let toml = "approval-for = [\"echo\"]\nmodel = \"nope\"\ndata = \"server.db\"\n\
                listen = \"192.0.2.1:1\"\n";
    std::fs::write(dir.path().join("airlock.toml"), toml).unwrap();
    let run = |args: &[&str]| {
        let out = crate::common::airlock()
            .current_dir(dir.path())
            .arg("run")
            .args(args)
            .arg(r#"/tool echo {"text":"hi"}"#)
            .env_remove("AIRLOCK_MODEL")
            .output()
            .unwrap();
        let text = |b: Vec<u8>| String::from_utf8(b).unwrap();
        (out.status.code(), text(out.stdout), text(out.stderr))
    };
    let (code, _, stderr) = run(&[]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.starts_with("airlock: unknown model \"nope\""), "the file's model: {stderr}");
    let (code, stdout, stderr) = run(&["--model", "demo", "--approve", "none"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.contains("DENIED_BY_USER"), "the file's approval-for: {stdout}");
    assert!(!dir.path().join("server.db").exists(), "run keeps its session elsewhere");
}
