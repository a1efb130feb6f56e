//! The modules of `airlock-sessions` depend one way, bottom to top (the table in `lib.rs`): this
//! test reads every `use` line and every `crate::`/`super::` path under `crates/sessions/src`, and fails
//! on a module that uses one of a higher layer, on a module no layer names, and on any circle
//! among the files. A module that declares its children and re-exports them is not said to use
//! them, so only a child's use of its parent counts between the two.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Bottom to top. A module may use its own layer and those below it, never one above. Between
/// crates the compiler keeps the layers (a crate cannot name one that depends on it); inside this
/// one, whose modules share one front door, this test does.
const LAYERS: &[&[&str]] = &[
    &["admission"],
    &["goal"],
    &["session"],
    &["actor"],
    &["owned", "follow"],
    &["registry"],
    &["subagents", "goal_tool"],
    &["front"],
    &["tests"],
];

/// A module's path below the crate root, e.g. `["session", "observe"]`.
type Module = Vec<String>;

#[test]
fn session_modules_use_only_their_own_layer_and_the_ones_below_and_form_no_circle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let files = modules(&src);
    let known: BTreeSet<&Module> = files.keys().collect();
    let mut uses: BTreeMap<&Module, BTreeSet<Module>> = BTreeMap::new();
    let mut wrong = Vec::new();
    for (module, text) in &files {
        let Some(from) = layer_of(module) else {
            if !module.is_empty() {
                wrong.push(format!("{}: in no layer; add it to LAYERS", name(module)));
            }
            continue;
        };
        for path in paths(text) {
            let Some(target) = resolve(module, &path, &known) else { continue };
            if target.starts_with(module) || target.is_empty() {
                continue; // itself, or a child it declares
            }
            match layer_of(&target) {
                Some(to) if to > from => wrong.push(format!(
                    "{} (layer {from}) uses {} (layer {to}, above it)",
                    name(module),
                    path.join("::")
                )),
                _ => {}
            }
            uses.entry(module).or_default().insert(target);
        }
    }
    if let Some(circle) = circle(&uses) {
        wrong.push(format!("a circle of uses: {}", circle.join(" -> ")));
    }
    assert!(wrong.is_empty(), "the layers of airlock-sessions are crossed:\n{}", wrong.join("\n"));
}

/// Every `.rs` file under `src`, by module path (`lib.rs` and `main.rs` are the root, `[]`).
fn modules(src: &Path) -> BTreeMap<Module, String> {
    let mut files = BTreeMap::new();
    let mut dirs = vec![src.to_owned()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let relative = path.strip_prefix(src).unwrap().with_extension("");
            let mut module: Module =
                relative.iter().map(|part| part.to_string_lossy().into_owned()).collect();
            if matches!(module.last().map(String::as_str), Some("mod" | "lib" | "main")) {
                module.pop();
            }
            let text = std::fs::read_to_string(&path).unwrap();
            files.entry(module).or_insert_with(String::new).push_str(&text);
        }
    }
    files
}

fn layer_of(module: &Module) -> Option<usize> {
    let top = module.first()?;
    LAYERS.iter().position(|layer| layer.contains(&top.as_str()))
}

fn name(module: &Module) -> String {
    format!("crate::{}", module.join("::"))
}

/// The paths a file names: every `use` tree expanded, and every `crate::`/`super::`/`self::`
/// path written inline.
fn paths(text: &str) -> Vec<Vec<String>> {
    let code: String =
        text.lines().map(|line| line.split("//").next().unwrap()).collect::<Vec<_>>().join("\n");
    let mut paths = Vec::new();
    let mut rest = code.as_str();
    while let Some(at) = rest.find("use ") {
        let boundary = at == 0 || !rest[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_');
        rest = &rest[at + 4..];
        let Some(end) = rest.find(';') else { break };
        if boundary {
            expand(&mut paths, Vec::new(), rest[..end].trim());
        }
    }
    for root in ["crate::", "super::", "self::"] {
        let mut rest = code.as_str();
        while let Some(at) = rest.find(root) {
            let before = rest[..at].chars().last();
            let tail = &rest[at..];
            rest = &rest[at + root.len()..];
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            let path: String = tail
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
                .collect();
            paths.push(path.split("::").filter(|s| !s.is_empty()).map(str::to_owned).collect());
        }
    }
    paths
}

/// Expands a use tree (`a::{b, c::{d, e}}`) into its paths.
fn expand(out: &mut Vec<Vec<String>>, mut prefix: Vec<String>, tree: &str) {
    let tree = tree.trim().trim_start_matches("pub ").trim();
    let Some(open) = tree.find('{') else {
        let path = tree.split(" as ").next().unwrap();
        prefix.extend(path.split("::").map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned));
        out.push(prefix);
        return;
    };
    prefix.extend(
        tree[..open].split("::").map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned),
    );
    let Some(close) = tree.rfind('}').filter(|&close| close > open) else { return };
    let inner = &tree[open + 1..close];
    let (mut depth, mut start) = (0, 0);
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                expand(out, prefix.clone(), &inner[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if !inner[start..].trim().is_empty() {
        expand(out, prefix, &inner[start..]);
    }
}

/// The file a path lands in: the longest known module it starts with. Paths into other crates
/// land nowhere.
fn resolve(module: &Module, path: &[String], known: &BTreeSet<&Module>) -> Option<Module> {
    let (mut base, mut rest): (Module, &[String]) = match path.first()?.as_str() {
        "crate" => (Vec::new(), &path[1..]),
        "self" => (module.clone(), &path[1..]),
        "super" => (module[..module.len().checked_sub(1)?].to_vec(), &path[1..]),
        _ => return None,
    };
    while rest.first().is_some_and(|s| s == "super") {
        base.pop();
        rest = &rest[1..];
    }
    let full: Module = base.into_iter().chain(rest.iter().cloned()).collect();
    (0..=full.len()).rev().map(|n| full[..n].to_vec()).find(|m| known.contains(m))
}

/// One circle in the graph, if there is any.
fn circle(uses: &BTreeMap<&Module, BTreeSet<Module>>) -> Option<Vec<String>> {
    fn visit(
        at: &Module,
        uses: &BTreeMap<&Module, BTreeSet<Module>>,
        path: &mut Vec<Module>,
        done: &mut BTreeSet<Module>,
    ) -> Option<Vec<String>> {
        if let Some(start) = path.iter().position(|m| m == at) {
            return Some(path[start..].iter().chain([at]).map(name).collect());
        }
        if done.contains(at) {
            return None;
        }
        path.push(at.clone());
        for next in uses.get(at).into_iter().flatten() {
            if let Some(found) = visit(next, uses, path, done) {
                return Some(found);
            }
        }
        path.pop();
        done.insert(at.clone());
        None
    }
    let mut done = BTreeSet::new();
    uses.keys().find_map(|start| visit(start, uses, &mut Vec::new(), &mut done))
}
