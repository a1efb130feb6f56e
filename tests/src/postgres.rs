//! A PostgreSQL server for tests of gateways that share a store: `AIRLOCK_TEST_POSTGRES` names it
//! (a URL with a user that may create databases); each test gets a database of its own.
//!
//! `.ci/run` starts a throwaway cluster and sets the variable, plus `AIRLOCK_REQUIRE_POSTGRES=1`,
//! so that CI fails rather than skips. On a developer's machine without it, these tests say they
//! were skipped and pass.

use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

/// The server's URL, or `None` (with a line saying why the test is skipped) when none is set.
///
/// # Panics
/// When `AIRLOCK_REQUIRE_POSTGRES` is set and `AIRLOCK_TEST_POSTGRES` is not.
pub fn server(test: &str) -> Option<String> {
    match std::env::var("AIRLOCK_TEST_POSTGRES") {
        Ok(url) if !url.is_empty() => Some(url),
        _ => {
            assert!(
                std::env::var_os("AIRLOCK_REQUIRE_POSTGRES").is_none(),
                "AIRLOCK_REQUIRE_POSTGRES is set but AIRLOCK_TEST_POSTGRES is not: \
                 set it to a PostgreSQL URL (see .ci/run)"
            );
            eprintln!(
                "skipped {test}: it needs PostgreSQL. Set AIRLOCK_TEST_POSTGRES to a server URL \
                 (e.g. run the tests under `pg_virtualenv`, as .ci/run does)"
            );
            None
        }
    }
}

/// A fresh, empty database on `server`; answers its URL.
pub fn database(server: &str) -> String {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let name = format!("airlock_{}_{}", std::process::id(), NEXT.fetch_add(1, Ordering::SeqCst));
    let made = Command::new("psql")
        .args([server, "-q", "-v", "ON_ERROR_STOP=1", "-c"])
        .arg(format!("CREATE DATABASE {name}"))
        .status()
        .expect("psql runs (Debian's postgresql-client)");
    assert!(made.success(), "CREATE DATABASE {name} on {server}");
    with_database(server, &name)
}

/// `server` with its database (the URL's path) replaced by `name`.
fn with_database(server: &str, name: &str) -> String {
    let (base, query) = server.split_once('?').map_or((server, None), |(b, q)| (b, Some(q)));
    let scheme_end = base.find("://").map_or(0, |i| i + 3);
    let host_end = base[scheme_end..].find('/').map_or(base.len(), |i| scheme_end + i);
    let url = format!("{}/{name}", &base[..host_end]);
    match query {
        Some(query) => format!("{url}?{query}"),
        None => url,
    }
}

/// Runs one SQL statement on `database` and answers its rows, a line each (columns split by `|`).
pub fn query(database: &str, sql: &str) -> Vec<String> {
    let out = Command::new("psql")
        .args([database, "-q", "-t", "-A", "-v", "ON_ERROR_STOP=1", "-c", sql])
        .output()
        .expect("psql runs");
    assert!(out.status.success(), "{sql}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().lines().map(str::to_owned).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_database_url_names_the_new_database() {
        let cases = [
            ("postgres://u:p@h:5433/postgres", "postgres://u:p@h:5433/x"),
            ("postgres://u:p@h:5433", "postgres://u:p@h:5433/x"),
            ("postgres://u@h/db?sslmode=disable", "postgres://u@h/x?sslmode=disable"),
        ];
        for (server, url) in cases {
            assert_eq!(with_database(server, "x"), url);
        }
    }
}
