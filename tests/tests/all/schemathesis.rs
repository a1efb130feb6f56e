//! schemathesis, every check on, against a real gateway's `/openapi.json`: the document and the
//! answers agree, for valid requests and invalid ones, alone and chained by the document's links.
//!
//! Ignored by default because it needs schemathesis from PyPI; `.ci/run` installs it (pinned by
//! `tests/schemathesis/requirements.txt`) with `tests/schemathesis/install.sh` and runs this with
//! `cargo test --workspace --test all -- --ignored schemathesis::`. Its settings, and the one
//! waiver the API's contract calls for, are in `tests/schemathesis/schemathesis.toml`.

use std::path::{Path, PathBuf};

use airlock_tests::MockModel;
use airlock_tests::gateway::{Gateway, keys};

/// Runs schemathesis with `args` (after `run`) against `gateway`'s document, from `dir`; fails
/// with its report unless every case passed.
async fn schemathesis(gateway: &Gateway, dir: &Path, args: &[&str]) {
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let st = repo.join("target/schemathesis-venv/bin/st");
    assert!(st.exists(), "{} is missing: run tests/schemathesis/install.sh", st.display());
    // In the temporary directory, so what schemathesis leaves behind goes with it.
    let out = tokio::process::Command::new(&st)
        .arg("--config-file")
        .arg(repo.join("tests/schemathesis/schemathesis.toml"))
        .args(["--no-color", "run", &gateway.url("/openapi.json")])
        .args(args)
        .current_dir(dir)
        .output()
        .await
        .expect("schemathesis runs");
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{report}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(report.contains(" passed"), "no test case ran:\n{report}");
}

#[tokio::test]
#[ignore = "needs schemathesis: run tests/schemathesis/install.sh first"]
async fn schemathesis_with_every_check_finds_no_answer_that_disagrees_with_openapi_json() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockModel::start().await;
    let gateway = Gateway::start(&dir.path().join("airlock.db"), &mock.base_url());
    schemathesis(&gateway, dir.path(), &[]).await;
}

/// With keys, the document declares who may call (`securitySchemes`), and schemathesis's auth
/// checks send each operation without the key and with a wrong one too.
#[tokio::test]
#[ignore = "needs schemathesis: run tests/schemathesis/install.sh first"]
async fn schemathesis_against_a_keyed_gateway_finds_its_document_and_its_lock_agree() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockModel::start().await;
    let data = dir.path().join("airlock.db");
    let key = keys(&data, &["create", "--tenant", "schemathesis"]);
    let gateway = Gateway::start(&data, &mock.base_url());
    let (_, document) = gateway.get("/openapi.json").await;
    assert_eq!(
        document["components"]["securitySchemes"]["apiKey"]["scheme"], "bearer",
        "{document}"
    );
    let header = format!("Authorization: Bearer {key}");
    schemathesis(&gateway, dir.path(), &["--header", &header]).await;
}
