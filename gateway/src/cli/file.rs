//! `airlock.toml`: settings from a file. Its keys are `serve`'s long flags, so every setting is
//! declared once, on [`ServeArgs`](super::ServeArgs): the file's values become the flags'
//! defaults, and clap reads them as it reads a flag. A flag wins over its environment variable,
//! which wins over the file, which wins over the built-in default. Four tables have no flag:
//! `[mcp.NAME]` (as `--mcp`), `[models."NAME"]`, and the operator's `[webhooks.NAME]` and
//! `[schedules.NAME]`.
//!
//! `run`, `stdio` and `acp` read the same file, checked against `serve`'s flags as `serve` reads
//! it, and take the keys they have a flag for ([`EmbeddedArgs`]), the models and the MCP
//! servers: not `data` nor `listen`, which say where the server keeps its sessions and listens.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use clap::parser::ValueSource;
use clap::{Arg, ArgMatches};
use serde::Deserialize;

use super::ServeArgs;
use super::args::EmbeddedArgs;
use airlock_hooks::operator::Declared;
use airlock_providers::mcp::{McpServer, McpSource};
use airlock_providers::model::{ModelSettings, ModelTable};

/// A settings file, read: the values of flags, and the tables no flag names.
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
    /// The file given with `--config` (`matches` are the command's), else `./airlock.toml` if
    /// it exists; every key checked against `serve`'s flags (`serve` is its command) and every
    /// value against its flag's parser, even where a flag will win or the command has no such
    /// flag: a mistake in the file is one either way.
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

    /// `command` (`serve`, `run`, `stdio` or `acp`, or the root for the global flags) with the
    /// file's values as the defaults of the flags it has; only `serve` takes [`SERVER_ONLY`]'s.
    pub fn defaults(&self, command: clap::Command) -> clap::Command {
        let serving = command.get_name() == "serve";
        self.flags.iter().fold(command, |command, (key, values)| {
            if !serving && SERVER_ONLY.contains(&key.as_str()) {
                return command;
            }
            match flag(&command, key).map(|arg| arg.get_id().clone()) {
                Some(id) => command.mut_arg(id, |arg| arg.default_values(values.clone())),
                None => command,
            }
        })
    }

    /// Fills what no flag of `serve` names: the `[models."NAME"]` tables, the operator's
    /// declarations, and the `[mcp.NAME]` servers unless `--mcp` or `AIRLOCK_MCP` named some.
    pub fn apply_to_serve(self, args: &mut ServeArgs, matches: &ArgMatches) {
        args.declared = self.apply(&mut args.sandbox.mcp, &mut args.models, matches);
    }

    /// As [`File::apply_to_serve`], for `run`, `stdio` and `acp`: the models and MCP servers.
    pub fn apply_to_embedded(self, args: &mut EmbeddedArgs, matches: &ArgMatches) {
        self.apply(&mut args.sandbox.mcp, &mut args.models, matches);
    }

    /// Sets `models` to the file's, and `mcp` to its servers unless the command line or the
    /// environment named some; answers the operator's declarations.
    fn apply(
        self,
        mcp: &mut Vec<McpServer>,
        models: &mut ModelTable,
        matches: &ArgMatches,
    ) -> Declared {
        let given = matches.value_source("mcp").is_some_and(|source| {
            matches!(source, ValueSource::CommandLine | ValueSource::EnvVariable)
        });
        if let (Some(servers), false) = (self.mcp, given) {
            *mcp = servers;
        }
        if let Some(table) = self.models {
            *models = table;
        }
        self.declared
    }
}

/// Keys only `serve` takes from the file: where the server keeps its sessions and listens.
/// `run`, `stdio` and `acp` keep theirs in a temporary file unless `--data` says otherwise, and
/// `acp --listen` serves HTTP only when asked.
const SERVER_ONLY: [&str; 2] = ["data", "listen"];

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

#[cfg(test)]
mod tests {
    use clap::parser::ValueSource;
    use clap::{Arg, CommandFactory, FromArgMatches};

    use super::File;
    use crate::cli::{Cli, ServeArgs};

    /// The configuration completeness test: walks `serve`'s clap definition and, for
    /// every flag, proves it reads an `AIRLOCK_*` variable (the trace flags read OpenTelemetry's
    /// standard ones), sits under a heading of `serve --help`, and is a key of `airlock.toml`
    /// whose value clap takes as it takes the flag's.
    #[test]
    fn every_serve_flag_is_an_airlock_toml_key_and_an_airlock_variable() {
        // Built, as when a command line is parsed: the global flags are `serve`'s too.
        let mut cli = Cli::command();
        cli.build();
        let serve = cli.find_subcommand("serve").expect("serve is a command").clone();
        let flags = serve.get_arguments().filter(|arg| !matches!(arg.get_id().as_str(), "help"));
        for arg in flags {
            let long = arg.get_long().unwrap_or_else(|| panic!("{} has no --flag", arg.get_id()));
            let env = arg.get_env().and_then(|env| env.to_str());
            let env = env.unwrap_or_else(|| panic!("--{long} reads no variable"));
            assert!(env.starts_with("AIRLOCK_") || env.starts_with("OTEL_"), "--{long}: {env}");
            if long == "config" {
                continue; // the file cannot name itself
            }
            assert!(arg.get_help_heading().is_some(), "--{long} is under no heading");
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("airlock.toml");
            if long == "mcp" {
                // `--mcp NAME=URL` is the table `[mcp.NAME]`.
                std::fs::write(&path, "[mcp.fs]\nurl = \"http://127.0.0.1:9/mcp\"\n").unwrap();
                let args = serve_with(&serve, &path);
                assert_eq!(args.sandbox.mcp.len(), 1, "[mcp.fs] is taken");
                continue;
            }
            let value = sample(&serve, arg);
            std::fs::write(&path, format!("{long} = {value:?}\n")).unwrap();
            let (_, matches) = read(&serve, &path);
            let id = arg.get_id().as_str();
            let taken: Vec<_> = matches.get_raw(id).unwrap().map(|raw| raw.to_owned()).collect();
            assert_eq!(taken, [value.as_str()], "--{long}: the file's value is the flag's");
            assert_eq!(matches.value_source(id), Some(ValueSource::DefaultValue), "--{long}");
            ServeArgs::from_arg_matches(&matches).unwrap_or_else(|e| panic!("--{long}: {e}"));
        }
    }

    /// The file at `path`, read as `serve --config PATH` reads it, and `serve`'s matches with
    /// the file's values as its defaults.
    fn read(serve: &clap::Command, path: &std::path::Path) -> (File, clap::ArgMatches) {
        let config = path.to_str().unwrap();
        let given = serve.clone().try_get_matches_from(["serve", "--config", config]).unwrap();
        let file = File::read(serve, &given).unwrap().expect("the file exists");
        let matches = file.defaults(serve.clone()).try_get_matches_from(["serve"]).unwrap();
        (file, matches)
    }

    /// `serve`'s arguments with the file at `path`.
    fn serve_with(serve: &clap::Command, path: &std::path::Path) -> ServeArgs {
        let (file, matches) = read(serve, path);
        let mut args = ServeArgs::from_arg_matches(&matches).unwrap();
        file.apply_to_serve(&mut args, &matches);
        args
    }

    /// A value `arg` takes that is not its default: one of its choices, else the first of a few
    /// texts (a number, a duration, a boolean, a URL) its parser accepts.
    fn sample(serve: &clap::Command, arg: &Arg) -> String {
        let default: Vec<_> = arg.get_default_values().iter().map(|v| v.to_owned()).collect();
        let choices = arg.get_possible_values().into_iter().map(|v| v.get_name().to_owned());
        let texts = ["1000", "7", "5s", "7s", "true", "http://a.example"].map(str::to_owned);
        let long = arg.get_long().unwrap();
        choices
            .chain(texts)
            .filter(|text| default.iter().all(|d| d != text.as_str()))
            .find(|text| {
                let given = serve.clone().no_binary_name(true);
                given.try_get_matches_from([format!("--{long}={text}")]).is_ok()
            })
            .unwrap_or_else(|| panic!("--{long}: no sample value; add one to `sample`"))
    }
}
