//! schemathesis, every check on, against a real gateway's `/openapi.json`: the document and the
//! answers agree, for valid requests and invalid ones, alone and chained by the document's links.
//!
//! Ignored by default because it needs schemathesis from PyPI; `.ci/run` installs it (pinned by
//! `tests/schemathesis/requirements.txt`) with `tests/schemathesis/install.sh` and runs this with
//! `cargo test --workspace --test schemathesis -- --ignored`. Its settings, and the one waiver the
//! API's contract calls for, are in `tests/schemathesis/schemathesis.toml`.

use std::path::PathBuf;

use airlock_tests::MockModel;
use airlock_tests::gateway::Gateway;

#[tokio::test]
#[ignore = "needs schemathesis: run tests/schemathesis/install.sh first"]
async fn schemathesis_with_every_check_finds_no_answer_that_disagrees_with_openapi_json() {
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let st = repo.join("target/schemathesis-venv/bin/st");
    assert!(st.exists(), "{} is missing: run tests/schemathesis/install.sh", st.display());
    let dir = tempfile::tempdir().unwrap();
    let mock = MockModel::start().await;
    let gateway = Gateway::start(&dir.path().join("airlock.db"), &mock.base_url(), dir.path());

    // In the temporary directory, so what schemathesis leaves behind goes with it.
    let out = tokio::process::Command::new(&st)
        .arg("--config-file")
        .arg(repo.join("tests/schemathesis/schemathesis.toml"))
        .args(["--no-color", "run", &gateway.url("/openapi.json")])
        .current_dir(dir.path())
        .output()
        .await
        .expect("schemathesis runs");
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{report}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(report.contains(" passed"), "no test case ran:\n{report}");
}
