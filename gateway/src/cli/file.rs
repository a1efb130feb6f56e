//! `airlock.toml`: settings for `airlock serve` from a file. Its keys are `serve`'s long flags,
//! so every setting is declared once, on [`ServeArgs`](super::ServeArgs): the file's values
//! become the flags' defaults, and clap reads them as it reads a flag. A flag wins over its
//! environment variable, which wins over the file, which wins over the built-in default. Four
//! tables have no flag: `[mcp.NAME]` (as `--mcp`), `[models."NAME"]`, and the operator's
//! `[webhooks.NAME]` and `[schedules.NAME]`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use clap::parser::ValueSource;
use clap::{Arg, ArgMatches};
use serde::Deserialize;

use super::ServeArgs;
use airlock_hooks::operator::Declared;
use airlock_providers::mcp::{McpServer, McpSource};
use airlock_providers::model::{ModelSettings, ModelTable};

/// A settings file, read: the values of flags, and the two tables no flag names.
pub struct File {
    /// Long flag name → its values, as text clap parses.
    flags: BTreeMap<String, Vec<String>>,
    mcp: Option<Vec<McpServer>>,
    models: Option<ModelTable>,
    declared: Declared,
}

/// One `[mcp.NAME]` table.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct McpEntry {
    command: Option<Vec<String>>,
    /// For a command: variables set for it.
    #[serde(default)]
    env: BTreeMap<String, String>,
    url: Option<String>,
    /// For a URL: headers sent with every request.
    #[serde(default)]
    headers: BTreeMap<String, String>,
}

impl McpEntry {
    fn server(self, name: &str) -> Result<McpServer, String> {
        let (env, headers) = (self.env.into_iter().collect(), self.headers.into_iter().collect());
        match (self.command, self.url) {
            (Some(argv), None) => McpServer::new(name, McpSource::Command { argv, env }),
            (None, Some(url)) => McpServer::new(name, McpSource::Url { url, headers }),
            _ => Err(format!("[mcp.{name}] needs either `command = [...]` or `url = \"…\"`")),
        }
    }
}

impl File {
    /// The file `serve` was given with `--config`, else `./airlock.toml` if it exists; every
    /// key checked against `serve`'s flags (`serve` is its command) and every value against
    /// its flag's parser, even where a flag will win: a mistake in the file is one either way.
    pub fn read(serve: &clap::Command, matches: &ArgMatches) -> Result<Option<File>, String> {
        let (path, named) = match matches.get_one::<PathBuf>("config") {
            Some(path) => (path.clone(), true),
            None => (PathBuf::from("airlock.toml"), false),
        };
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && !named => return Ok(None),
            Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
        };
        let shown = path.display();
        let table: toml::Table =
            toml::from_str(&text).map_err(|e| format!("{shown} is not valid: {e}"))?;
        let mut file =
            File { flags: BTreeMap::new(), mcp: None, models: None, declared: Declared::default() };
        for (key, value) in table {
            match key.as_str() {
                "mcp" => file.mcp = Some(mcp(value).map_err(|e| format!("{shown}: {e}"))?),
                "webhooks" => {
                    let declared = value.try_into();
                    file.declared.webhooks =
                        declared.map_err(|e| format!("{shown} is not valid: webhooks: {e}"))?;
                }
                "schedules" => {
                    let declared = value.try_into();
                    file.declared.schedules =
                        declared.map_err(|e| format!("{shown} is not valid: schedules: {e}"))?;
                }
                "models" => {
                    let models = value.try_into::<BTreeMap<String, ModelSettings>>();
                    let models = ModelTable::new(
                        models.map_err(|e| format!("{shown} is not valid: models: {e}"))?,
                    );
                    models.check().map_err(|e| format!("{shown}: {e}"))?;
                    file.models = Some(models);
                }
                _ => {
                    flag(serve, &key).ok_or_else(|| unknown(&path, &key, serve))?;
                    let values = texts(&value).ok_or_else(|| {
                        format!("{shown}: {key} must be a string, a number or a list of them")
                    })?;
                    for text in &values {
                        // As clap would read it from the command line.
                        let given = serve.clone().no_binary_name(true);
                        let parsed = given.try_get_matches_from([format!("--{key}={text}")]);
                        parsed.map_err(|e| format!("{shown}: {key} = {text:?}: {}", reason(&e)))?;
                    }
                    file.flags.insert(key, values);
                }
            }
        }
        Ok(Some(file))
    }

    /// `serve` with the file's values as its flags' defaults.
    pub fn defaults(&self, serve: clap::Command) -> clap::Command {
        self.flags.iter().fold(serve, |serve, (key, values)| {
            let id = flag(&serve, key).expect("checked when read").get_id().clone();
            serve.mut_arg(id, |arg| arg.default_values(values.clone()))
        })
    }

    /// Fills what no flag names: the `[models."NAME"]` tables, and the `[mcp.NAME]` servers
    /// unless `--mcp` or `AIRLOCK_MCP` named some.
    pub fn apply_tables(self, args: &mut ServeArgs, matches: &ArgMatches) {
        if let Some(models) = self.models {
            args.models = models;
        }
        args.declared = self.declared;
        let mcp_given = matches.value_source("mcp").is_some_and(|source| {
            matches!(source, ValueSource::CommandLine | ValueSource::EnvVariable)
        });
        if let (Some(servers), false) = (self.mcp, mcp_given) {
            args.sandbox.mcp = servers;
        }
    }
}

/// The `[mcp]` table: its servers by name.
fn mcp(value: toml::Value) -> Result<Vec<McpServer>, String> {
    let entries: BTreeMap<String, McpEntry> =
        value.try_into().map_err(|e| format!("[mcp] is not valid: {e}"))?;
    entries.into_iter().map(|(name, entry)| entry.server(&name)).collect()
}

/// `serve`'s flag `--key`; `--config` names the file, so the file cannot.
fn flag<'a>(serve: &'a clap::Command, key: &str) -> Option<&'a Arg> {
    serve.get_arguments().find(|arg| arg.get_long() == Some(key) && arg.get_id() != "config")
}

/// What to say of a key no flag has.
fn unknown(path: &Path, key: &str, serve: &clap::Command) -> String {
    let keys: Vec<&str> = serve
        .get_arguments()
        .filter_map(Arg::get_long)
        .filter(|long| !matches!(*long, "config" | "help"))
        .collect();
    format!(
        "{} is not valid: no setting is called `{key}`; its keys are the long flags of \
         `airlock serve` ({}) and the tables [mcp.NAME], [models.\"NAME\"], [webhooks.NAME] and \
         [schedules.NAME]",
        path.display(),
        keys.join(", ")
    )
}

/// A value as the texts a flag would be given: one, or one per item of a list.
fn texts(value: &toml::Value) -> Option<Vec<String>> {
    let text = |value: &toml::Value| match value {
        toml::Value::String(text) => Some(text.clone()),
        toml::Value::Integer(n) => Some(n.to_string()),
        toml::Value::Float(n) => Some(n.to_string()),
        toml::Value::Boolean(b) => Some(b.to_string()),
        _ => None,
    };
    match value {
        toml::Value::Array(items) => items.iter().map(text).collect(),
        value => text(value).map(|text| vec![text]),
    }
}

/// Why clap refused a value, without its `error:` prefix and usage lines.
fn reason(error: &clap::Error) -> String {
    let text = error.to_string();
    let first = text.lines().next().unwrap_or_default();
    first.trim_start_matches("error: ").to_owned()
}
