//! `plugin.toml`: a plugin's limits and grants.
//!
//! ```toml
//! approval = "always"          # each call waits for a person; default "never"
//! [limits]       # per call
//! timeout_ms = 5000
//! memory_mb  = 64
//! fuel       = 500_000_000     # optional
//! max_output_kb = 1024         # optional
//! max_log_kb = 64              # optional
//! log_kb_per_minute = 256      # optional; over all calls
//! timeout_from_arguments = true  # optional: a call's `timeout_ms` argument may shorten it
//! [grants]
//! http_hosts = ["api.example.com"]   # outbound HTTP allowlist, default none
//! dirs = { "/data" = { path = "./data", mode = "ro" } }
//! workspace = "/workspace"     # the calling session's workspace, read-write, at this path
//! import_sockets = true        # link wasi:sockets with no network (an interpreter's libc needs it)
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use airlock_providers::tools::Approval;

/// A plugin's manifest.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// Whether its tools' calls wait for a person's approval, unless a session says otherwise.
    #[serde(default)]
    pub approval: Approval,
    /// Per-call limits.
    #[serde(default)]
    pub limits: Limits,
    /// What the plugin may reach.
    #[serde(default)]
    pub grants: Grants,
}

/// Per-call limits.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Limits {
    /// Wall-clock time for one call, instantiation included.
    pub timeout_ms: u64,
    /// Linear memory, in MiB.
    pub memory_mb: u64,
    /// Instructions (roughly) for one call; unlimited when absent.
    pub fuel: Option<u64>,
    /// The largest result, in KiB.
    pub max_output_kb: u64,
    /// What one call may log, in KiB (each line costing its message and 128 bytes).
    pub max_log_kb: u64,
    /// What all calls of the plugin together may log a minute, in KiB.
    pub log_kb_per_minute: u64,
    /// Whether a call's `timeout_ms` argument (a whole number of milliseconds) may shorten
    /// `timeout_ms` for that call; it never lengthens it.
    pub timeout_from_arguments: bool,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            timeout_ms: 5000,
            memory_mb: 64,
            fuel: None,
            max_output_kb: 1024,
            max_log_kb: 64,
            log_kb_per_minute: 256,
            timeout_from_arguments: false,
        }
    }
}

/// What a plugin may reach beyond its own memory.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Grants {
    /// Hosts outbound HTTP may reach: `name` (any port) or `name:port`.
    pub http_hosts: Vec<String>,
    /// Directories, by the path the plugin sees.
    pub dirs: BTreeMap<String, DirGrant>,
    /// Where the plugin sees the calling session's workspace, read-write: a directory of the
    /// session's own that lasts between calls (code tools). A call of a session without one fails.
    pub workspace: Option<String>,
    /// Whether the component may import `wasi:sockets`. They are linked with no network (every
    /// connect, bind, listen and name lookup is denied): for interpreters whose libc imports
    /// them whether or not the code uses them.
    pub import_sockets: bool,
}

/// A directory granted to a plugin.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct DirGrant {
    /// The directory on the host, relative to the plugin's own directory.
    pub path: PathBuf,
    /// `ro` (the default) or `rw`.
    #[serde(default)]
    pub mode: Mode,
}

/// Read-only or read-write.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Read only.
    #[default]
    Ro,
    /// Read and write.
    Rw,
}

impl Manifest {
    /// Reads `plugin.toml`; the error says what to fix.
    pub fn read(file: &Path) -> Result<Manifest, String> {
        let text = std::fs::read_to_string(file)
            .map_err(|e| format!("cannot read {}: {e}", file.display()))?;
        let manifest: Manifest = toml::from_str(&text)
            .map_err(|e| format!("{} is not a valid manifest: {e}", file.display()))?;
        if manifest.limits.timeout_ms == 0 || manifest.limits.memory_mb == 0 {
            return Err(format!(
                "{}: limits.timeout_ms and limits.memory_mb must be above 0",
                file.display()
            ));
        }
        let workspace = manifest.grants.workspace.iter();
        for guest in manifest.grants.dirs.keys().chain(workspace) {
            if !guest.starts_with('/') {
                return Err(format!(
                    "{}: granted directory {guest:?} must be an absolute path as the plugin sees it, e.g. \"/data\"",
                    file.display()
                ));
            }
        }
        if let Some(guest) = &manifest.grants.workspace
            && manifest.grants.dirs.contains_key(guest)
        {
            return Err(format!(
                "{}: {guest:?} is granted both as a directory and as the workspace; pick one",
                file.display()
            ));
        }
        Ok(manifest)
    }

    /// The time one call may take: `timeout_ms`, or less when the manifest lets the call's
    /// arguments (`{"timeout_ms": N, ...}`) shorten it.
    pub fn timeout(&self, arguments: &str) -> std::time::Duration {
        let most = self.limits.timeout_ms;
        let asked = || {
            let arguments: serde_json::Value = serde_json::from_str(arguments).ok()?;
            arguments.get("timeout_ms")?.as_u64().filter(|&ms| ms > 0)
        };
        let ms = match self.limits.timeout_from_arguments.then(asked).flatten() {
            Some(asked) => asked.min(most),
            None => most,
        };
        std::time::Duration::from_millis(ms)
    }

    /// Whether outbound HTTP may reach `host` on `port`.
    pub fn allows_host(&self, host: &str, port: u16) -> bool {
        self.grants.http_hosts.iter().any(|granted| match granted.rsplit_once(':') {
            Some((name, granted_port)) if granted_port.parse::<u16>().is_ok() => {
                name.eq_ignore_ascii_case(host) && granted_port.parse() == Ok(port)
            }
            _ => granted.eq_ignore_ascii_case(host),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_granted_host_matches_by_name_and_optional_port() {
        let manifest = Manifest {
            grants: Grants {
                http_hosts: vec!["example.com".into(), "127.0.0.1:8080".into()],
                ..Grants::default()
            },
            ..Manifest::default()
        };
        assert!(manifest.allows_host("EXAMPLE.com", 443));
        assert!(manifest.allows_host("127.0.0.1", 8080));
        assert!(!manifest.allows_host("127.0.0.1", 8081));
        assert!(!manifest.allows_host("evil.example.com", 443));
    }

    #[test]
    fn a_calls_timeout_ms_shortens_its_timeout_only_when_the_manifest_says() {
        let mut manifest = Manifest::default();
        let ms = |m: &Manifest, args: &str| m.timeout(args).as_millis();
        assert_eq!(ms(&manifest, r#"{"timeout_ms": 10}"#), 5000);
        manifest.limits.timeout_from_arguments = true;
        assert_eq!(ms(&manifest, r#"{"timeout_ms": 10}"#), 10);
        assert_eq!(ms(&manifest, r#"{"timeout_ms": 999999}"#), 5000, "never longer");
        for args in [r#"{"timeout_ms": 0}"#, r#"{"timeout_ms": -1}"#, "{}", "not json", "[]"] {
            assert_eq!(ms(&manifest, args), 5000, "{args}");
        }
    }
}
