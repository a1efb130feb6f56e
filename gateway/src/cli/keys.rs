//! `airlock keys`: make, list and revoke API keys in a data file. A running gateway sees a change
//! at its next request (its first key within a second: from then on every `/v1` request needs
//! one).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Subcommand};

use airlock_base::clock::now_ms;
use airlock_store::{Cluster, Durability, Key, KeyError, Store};

/// Arguments of `airlock keys`.
#[derive(Debug, Args)]
pub struct KeysArgs {
    /// The SQLite file of the gateway the keys are for.
    #[arg(long, env = "AIRLOCK_DATA", default_value = "./airlock.db", global = true)]
    pub data: PathBuf,
    /// The PostgreSQL database of the gateways the keys are for, instead of `--data`.
    #[arg(long, env = "AIRLOCK_DATABASE_URL", value_name = "URL", global = true)]
    pub store: Option<String>,
    #[command(subcommand)]
    action: Action,
}

#[derive(Debug, Subcommand)]
enum Action {
    /// Make a key and print it alone on stdout: it is shown this once (only its hash is kept).
    Create {
        /// The tenant it acts for: its sessions are that tenant's, and it reaches no other's.
        #[arg(long)]
        tenant: String,
        /// It reaches every tenant's sessions.
        #[arg(long)]
        admin: bool,
    },
    /// List the keys (ids, tenants, when made and revoked; never the keys).
    List,
    /// Revoke a key: requests with it get 401 from then on.
    Revoke {
        /// The key's id, as `keys list` shows it (the part after `ak_`).
        key_id: String,
    },
}

/// Runs `airlock keys …`.
pub async fn run(args: KeysArgs) -> ExitCode {
    let done = async {
        let store = match &args.store {
            None => Store::open(&args.data, Durability::Full),
            // It runs no session, so it takes no lease: nobody forwards to it.
            Some(url) => Store::connect(url, Cluster::visitor()).await,
        };
        let store = store.map_err(KeyError::Store)?;
        match args.action {
            Action::Create { tenant, admin } => {
                let made = store.create_key(&tenant, admin, now_ms()).await?;
                println!("{}", made.secret);
                eprintln!("airlock: {}; it is shown only now", describe(&made.key));
            }
            Action::List => {
                println!("{:<14} {:<24} {:<6} {:<26} revoked", "id", "tenant", "admin", "created");
                for key in store.keys().await? {
                    let revoked = key.revoked_at.map_or_else(|| "-".to_owned(), time);
                    let admin = if key.admin { "yes" } else { "no" };
                    let created = time(key.created_at);
                    println!(
                        "{:<14} {:<24} {admin:<6} {created:<26} {revoked}",
                        key.key_id, key.tenant
                    );
                }
            }
            Action::Revoke { key_id } => {
                let key = store.revoke_key(&key_id, now_ms()).await?;
                eprintln!("airlock: revoked {}", describe(&key));
            }
        }
        Ok::<_, KeyError>(())
    };
    match done.await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("airlock: {error}");
            ExitCode::FAILURE
        }
    }
}

fn describe(key: &Key) -> String {
    let reach = if key.admin { "an admin key" } else { "a key" };
    format!("{reach} of tenant {:?} (id {})", key.tenant, key.key_id)
}

fn time(ms: u64) -> String {
    let time = std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms);
    humantime::format_rfc3339_seconds(time).to_string()
}
