//! The code cites its documentation by path (`docs/semantics.md`, ...): every page a source file
//! names must exist in the repository, and nothing may point outside it.

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
