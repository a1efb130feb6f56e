//! The page and the code tools: a call's code and output, images it wrote, the workspace's files.

use std::path::Path;

use airlock_tests::Reply;
use airlock_tests::page::Page;
use airlock_tests::world::world_with;
use serde_json::json;

#[tokio::test]
#[ignore = "needs Chromium, playwright-core and plugins/python/build.sh; .ci/run installs them"]
async fn the_page_shows_code_calls_with_their_output_images_inline_and_the_workspace_files() {
    let root = tempfile::tempdir().unwrap();
    let plugin = root.path().join("plugins/python");
    std::fs::create_dir_all(&plugin).unwrap();
    let built = Path::new(env!("CARGO_MANIFEST_DIR")).join("../plugins/python");
    for file in ["plugin.toml", "python.wasm"] {
        std::fs::copy(built.join(file), plugin.join(file)).unwrap();
    }
    let plugins = root.path().join("plugins");
    let env = [("AIRLOCK_MODEL", "openai:mock"), ("AIRLOCK_PLUGINS", plugins.to_str().unwrap())];
    let w = world_with(&env).await;
    let mut page = Page::launch();
    page.run(json!({"do": "open", "url": w.gw.url("/")})).await;
    let s = page.new_session().await;

    // A 1×1 PNG, written by the code; then a failing call.
    let dot = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";
    let code = format!(
        "import base64\nopen('dot.png', 'wb').write(base64.b64decode('{dot}'))\nprint('drawn')\n6 * 7"
    );
    let arguments = json!({ "code": code }).to_string();
    w.mock.push(Reply::tool_call("c1", "python", &arguments, 1)).push(Reply::text("Drawn.", 1));
    page.send("draw a dot", "followup").await;
    page.wait_text(".tool pre.code", "print('drawn')").await;
    page.wait_text(".tool .output .stdout", "drawn").await;
    page.wait_text(".tool .output .value", "42").await;
    page.wait_count(".tool img.inline", 1).await;
    page.wait_text("#file-items", "dot.png").await;
    let src =
        page.run(json!({"do": "attributes", "selector": ".tool img.inline", "name": "src"})).await;
    let src = src[0].as_str().unwrap().to_owned();
    assert_eq!(src, format!("/v1/sessions/{s}/files/dot.png"));
    let image = w.gw.client.get(w.gw.url(&src)).send().await.unwrap();
    assert_eq!(image.headers()["content-type"], "image/png");

    let failing = json!({"code": "def f():\n    raise ValueError('nope')\nf()"}).to_string();
    w.mock.push(Reply::tool_call("c2", "python", &failing, 1)).push(Reply::text("It failed.", 1));
    page.send("fail", "followup").await;
    page.wait_text(".tool.failed .output .error", "ValueError: nope").await;
    page.assert_clean().await;
}
