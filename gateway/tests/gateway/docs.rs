//! The code cites its documentation by path (`docs/semantics.md`, ...): every page a source file
//! names must exist in the repository, and nothing may point outside it. The pages cite the code
//! back: every path a page names exists, the transcript files `docs/semantics.md` lists are the
//! ones there are, and every test a page names in *italics* exists.

use std::path::{Path, PathBuf};

/// Where the code that cites pages lives, relative to the workspace root.
const SOURCES: &[&str] = &["core-wasm", "gateway", "wit", "tests", "plugins", "web-demo", "bench"];

#[test]
fn every_doc_page_the_code_cites_exists_in_the_repository() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let mut files = Vec::new();
    for dir in SOURCES {
        collect(&root.join(dir), &mut files);
    }
    let mut wrong = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        let name = file.strip_prefix(root).unwrap().display();
        let outside = concat!("..", "/shared/"); // spelled so this file does not match itself
        if text.contains(outside) {
            wrong.push(format!("{name} points outside the repository (`{outside}`)"));
        }
        for page in cited(&text) {
            if !root.join(&page).is_file() {
                wrong.push(format!("{name} cites {page}, which does not exist"));
            }
        }
    }
    assert!(files.len() > 50, "the sources were found: {}", files.len());
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// Source files under `dir`, skipping build output and dependencies.
fn collect(dir: &Path, files: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for path in entries.map(|entry| entry.unwrap().path()) {
        let name = path.file_name().unwrap().to_string_lossy();
        if path.is_dir() {
            if !matches!(name.as_ref(), "target" | "node_modules" | ".venv") {
                collect(&path, files);
            }
        } else if ["rs", "wit", "js", "mjs", "py", "toml", "sh"]
            .iter()
            .any(|ext| path.extension().is_some_and(|e| e == *ext))
        {
            files.push(path);
        }
    }
}

/// The `docs/….md` paths a text names.
fn cited(text: &str) -> Vec<String> {
    let mut pages = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("docs/") {
        let before = rest[..at].chars().last();
        let tail = &rest[at..];
        rest = &rest[at + 5..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '-' || c == '/') {
            continue; // part of another path
        }
        let path: String = tail
            .chars()
            .take_while(|c| c.is_alphanumeric() || matches!(c, '/' | '_' | '-' | '.'))
            .collect();
        if let Some(page) = path.strip_suffix('.').or(Some(&path)).filter(|p| p.ends_with(".md")) {
            pages.push(page.to_owned());
        }
    }
    pages
}

#[test]
fn semantics_lists_every_transcript_file_there_is() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let dir = "core-wasm/src/testkit/scenarios/";
    let mut files: Vec<String> = std::fs::read_dir(root.join(dir))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".rs") && name != "mod.rs")
        .collect();
    files.sort();
    let page = std::fs::read_to_string(root.join("docs/semantics.md")).unwrap();
    let after = page.split_once(&format!("`{dir}`")).expect("semantics.md names the folder").1;
    let list = after.trim_start().strip_prefix('(').unwrap().split_once(')').unwrap().0;
    let mut listed: Vec<String> =
        list.split(',').map(|item| item.trim().trim_matches('`').to_owned()).collect();
    listed.sort();
    assert_eq!(listed, files, "docs/semantics.md lists the transcript files of {dir}");
}

#[test]
fn every_test_a_page_names_in_italics_exists() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let mut sources = Vec::new();
    for dir in ["core-wasm", "crates", "gateway", "tests"] {
        collect(&root.join(dir), &mut sources);
    }
    let code: String = sources
        .iter()
        .filter(|path| path.extension().is_some_and(|e| e == "rs"))
        .map(|path| std::fs::read_to_string(path).unwrap())
        .collect();
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(root.join("docs")).unwrap() {
        let path = entry.unwrap().path();
        let page = std::fs::read_to_string(&path).unwrap();
        let parts: Vec<&str> = page.split('*').collect();
        let between_stars = &parts[1..parts.len().saturating_sub(1).max(1)];
        for name in between_stars.iter().filter(|name| is_test_name(name)) {
            if !code.contains(&format!("fn {name}(")) {
                missing.push(format!("{}: *{name}*", path.file_name().unwrap().display()));
            }
        }
    }
    assert!(missing.is_empty(), "pages name tests that do not exist:\n{}", missing.join("\n"));
}

/// A snake_case name of four words or more: how a page names a test or scenario.
fn is_test_name(text: &str) -> bool {
    text.split('_').count() >= 4
        && text.split('_').all(|word| {
            !word.is_empty() && word.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        })
}

/// The pages that say what exists: `docs/`, and the READMEs beside what they describe.
const PAGES: &[&str] = &[
    "README.md",
    "docs/README.md",
    "docs/architecture.md",
    "docs/deploy.md",
    "docs/events.md",
    "docs/http-api.md",
    "docs/interfaces.md",
    "docs/semantics.md",
    "bench/README.md",
    "tests/README.md",
    "web-demo/README.md",
];

#[test]
fn every_path_a_page_names_in_code_quotes_exists() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let folders = ["gateway/", "crates/", "core-wasm/", "tests/", "bench/", "web-demo/", "wit/"];
    let mut missing = Vec::new();
    for page in PAGES {
        let text = std::fs::read_to_string(root.join(page)).unwrap();
        let quoted = text.split('`').skip(1).step_by(2);
        for path in quoted.filter(|q| folders.iter().any(|f| q.starts_with(f))) {
            let path = path.trim_end_matches(['.', ',', ':']);
            let plain = path.chars().all(|c| c.is_ascii_alphanumeric() || "/._-".contains(c));
            if plain && !root.join(path).exists() {
                missing.push(format!("{page}: `{path}`"));
            }
        }
    }
    assert!(missing.is_empty(), "pages name paths that do not exist:\n{}", missing.join("\n"));
}
