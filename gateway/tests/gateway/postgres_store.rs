//! The PostgreSQL store on a real server: the same promises as SQLite's (contiguous appends, keys,
//! receipts' index), and the leases that keep two gateways from appending to one log.
//!
//! Ignored by a plain `cargo test`: they need `AIRLOCK_TEST_POSTGRES` (see
//! `airlock_tests::postgres`); `.ci/run` starts a server and runs them.

use std::time::Duration;

use airlock_store::{Cluster, Index, Owner, Store, StoreError};
use airlock_tests::postgres;

fn event(seq: u64) -> String {
    format!(r#"{{"type":"turn/start","seq":{seq},"time":1,"data":{{"turn":1}}}}"#)
}

/// A gateway named `node` on `database`, whose leases last `lease`.
async fn gateway(database: &str, node: &str, lease: Duration) -> Store {
    let address = format!("http://{node}");
    let cluster = Cluster { node: node.to_owned(), address, lease, pool: 4 };
    Store::connect(database, cluster).await.unwrap()
}

#[tokio::test]
#[ignore = "needs PostgreSQL (AIRLOCK_TEST_POSTGRES); .ci/run starts one"]
async fn appends_on_postgres_are_contiguous_refuse_a_gap_and_need_the_lease() {
    let Some(server) = postgres::server("appends_on_postgres_are_contiguous") else { return };
    let database = postgres::database(&server);
    let store = gateway(&database, "a", Duration::from_secs(30)).await;
    let unleased = store.append("s", vec![event(0)], Index::default()).await.unwrap_err();
    assert!(matches!(unleased, StoreError::Fenced(_)), "{unleased}");
    assert_eq!(store.acquire("s").await.unwrap(), Owner::Here);
    store.append("s", vec![event(0), event(1)], Index::default()).await.unwrap();
    let gap = store.append("s", vec![event(3)], Index::default()).await.unwrap_err();
    assert!(matches!(gap, StoreError::SeqMismatch { expected: 2, got: 3, .. }), "{gap}");
    let again = store.append("s", vec![event(1)], Index::default()).await.unwrap_err();
    assert!(matches!(again, StoreError::SeqMismatch { expected: 2, got: 1, .. }), "{again}");
    store.append("s", vec![event(2)], Index::default()).await.unwrap();
    assert_eq!(store.events("s", None, 100).await.unwrap().len(), 3);
    assert_eq!(store.events("s", Some(0), 100).await.unwrap(), vec![event(1), event(2)]);
    assert_eq!(store.last_seq("s").await.unwrap(), Some(2));
    assert_eq!(store.last_seq("other").await.unwrap(), None);
    assert!(store.flush().await.unwrap());

    // The same database again (a second gateway, or a restart): migrated once, the log there.
    let other = gateway(&database, "b", Duration::from_secs(30)).await;
    assert_eq!(other.last_seq("s").await.unwrap(), Some(2));
}

#[tokio::test]
#[ignore = "needs PostgreSQL (AIRLOCK_TEST_POSTGRES); .ci/run starts one"]
async fn a_gateway_whose_lease_was_taken_is_fenced_off_and_learns_it_at_renewal() {
    let Some(server) = postgres::server("a_gateway_whose_lease_was_taken") else { return };
    let database = postgres::database(&server);
    // A lease that runs out at once: as if `a` stalled past it.
    let a = gateway(&database, "a", Duration::ZERO).await;
    let b = gateway(&database, "b", Duration::from_secs(30)).await;
    assert_eq!(a.acquire("s").await.unwrap(), Owner::Here);
    a.append("s", vec![event(0)], Index::default()).await.unwrap();

    assert_eq!(b.acquire("s").await.unwrap(), Owner::Here, "a's lease ran out");
    let fenced = a.append("s", vec![event(1)], Index::default()).await.unwrap_err();
    assert!(matches!(fenced, StoreError::Fenced(_)), "{fenced}");
    b.append("s", vec![event(1)], Index::default()).await.unwrap();
    assert_eq!(a.owner("s").await.unwrap(), Owner::Elsewhere { address: "http://b".into() });
    assert_eq!(a.acquire("s").await.unwrap(), Owner::Elsewhere { address: "http://b".into() });

    // Held by a live gateway: nobody else takes it until it lets go.
    assert_eq!(b.acquire("t").await.unwrap(), Owner::Here);
    assert!(b.renew().await.unwrap().is_empty(), "b lost nothing");
    assert_eq!(a.acquire("t").await.unwrap(), Owner::Elsewhere { address: "http://b".into() });
    b.release("t").await.unwrap();
    assert_eq!(a.owner("t").await.unwrap(), Owner::Here, "let go: anyone may take it");

    // `a` took `t`, and its lease runs out at once again: `b` takes it back, and `a` hears of
    // it when it renews (and of `s`, whose append it had refused).
    assert_eq!(a.acquire("t").await.unwrap(), Owner::Here);
    assert_eq!(b.acquire("t").await.unwrap(), Owner::Here);
    let mut lost = a.renew().await.unwrap();
    lost.sort();
    assert_eq!(lost, ["s", "t"]);
    assert_eq!(b.events("s", None, 10).await.unwrap(), vec![event(0), event(1)]);
}

#[tokio::test]
#[ignore = "needs PostgreSQL (AIRLOCK_TEST_POSTGRES); .ci/run starts one"]
async fn an_append_fenced_off_says_so_at_once_and_the_next_renewal_reports_the_session_lost() {
    let Some(server) = postgres::server("an_append_fenced_off_says_so_at_once") else { return };
    let database = postgres::database(&server);
    let a = gateway(&database, "a", Duration::ZERO).await;
    let b = gateway(&database, "b", Duration::from_secs(30)).await;
    let mut fenced = a.fenced().expect("a shared store tells of fenced sessions");
    assert_eq!(a.acquire("s").await.unwrap(), Owner::Here);
    assert_eq!(b.acquire("s").await.unwrap(), Owner::Here, "a's lease ran out");

    // The append that finds the session taken, before `a` renews: `a` hears it at once, and its
    // renewal reports it lost too (it used to forget the lease there, and so never let go).
    let refused = a.append("s", vec![event(0)], Index::default()).await.unwrap_err();
    assert!(matches!(refused, StoreError::Fenced(_)), "{refused}");
    assert_eq!(fenced.recv().await.unwrap(), "s");
    assert_eq!(a.renew().await.unwrap(), vec!["s".to_owned()]);
    assert!(a.renew().await.unwrap().is_empty(), "reported once");
}

#[tokio::test]
#[ignore = "needs PostgreSQL (AIRLOCK_TEST_POSTGRES); .ci/run starts one"]
async fn the_leases_a_dead_gateway_left_are_swept_once_run_out_and_it_stays_fenced_off() {
    let Some(server) = postgres::server("the_leases_a_dead_gateway_left_are_swept") else { return };
    let database = postgres::database(&server);
    let dead = gateway(&database, "dead", Duration::ZERO).await;
    assert_eq!(dead.acquire("s").await.unwrap(), Owner::Here);
    let rows = || postgres::query(&database, "SELECT session_id FROM leases");
    assert_eq!(rows(), ["s"]);
    // Any gateway's renewal sweeps leases run out for a lease of its own.
    let live = gateway(&database, "live", Duration::ZERO).await;
    assert!(live.renew().await.unwrap().is_empty());
    assert!(rows().is_empty(), "swept");
    let refused = dead.append("s", vec![event(0)], Index::default()).await.unwrap_err();
    assert!(matches!(refused, StoreError::Fenced(_)), "{refused}");
    assert_eq!(live.owner("s").await.unwrap(), Owner::Here, "anyone may take it");
}

#[tokio::test]
#[ignore = "needs PostgreSQL (AIRLOCK_TEST_POSTGRES); .ci/run starts one"]
async fn a_gateway_paused_mid_append_lets_go_of_the_lease_row_so_another_takes_the_session() {
    let Some(server) = postgres::server("a_gateway_paused_mid_append") else { return };
    let database = postgres::database(&server);
    // `a`'s lease runs out at once; its transactions left idle end after 100 ms.
    let a = gateway(&database, "a", Duration::ZERO).await;
    let b = gateway(&database, "b", Duration::from_secs(30)).await;
    assert_eq!(a.acquire("s").await.unwrap(), Owner::Here);
    a.append("s", vec![event(0)], Index::default()).await.unwrap();
    let stall = a.faults().stall_next_append();
    let paused = tokio::spawn({
        let a = a.clone();
        async move { a.append("s", vec![event(1)], Index::default()).await }
    });
    stall.reached.notified().await;

    // `a` holds the lease's row locked and sends nothing: PostgreSQL ends its transaction, and
    // `b`, waiting for the row, takes the session (before, it waited as long as `a` was paused).
    let taken = tokio::time::timeout(Duration::from_secs(20), b.acquire("s")).await;
    assert_eq!(taken.expect("the paused gateway's lock is let go").unwrap(), Owner::Here);
    b.append("s", vec![event(1)], Index::default()).await.unwrap();
    stall.resume.notify_one();
    let late = paused.await.unwrap();
    assert!(late.is_err(), "the paused append wrote nothing: {late:?}");
    assert_eq!(b.events("s", None, 10).await.unwrap(), vec![event(0), event(1)]);
}

#[tokio::test]
#[ignore = "needs PostgreSQL (AIRLOCK_TEST_POSTGRES); .ci/run starts one"]
async fn a_takeover_that_finds_the_lease_row_locked_answers_moving_instead_of_waiting() {
    let Some(server) = postgres::server("a_takeover_that_finds_the_lease_row_locked") else {
        return;
    };
    let database = postgres::database(&server);
    let a = gateway(&database, "a", Duration::ZERO).await;
    let b = gateway(&database, "b", Duration::from_millis(400)).await;
    assert_eq!(a.acquire("s").await.unwrap(), Owner::Here);
    // Someone else holds the row (no bound of ours applies to this connection).
    let (locker, connection) =
        tokio_postgres::connect(&database, tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    locker
        .batch_execute("BEGIN; SELECT epoch FROM leases WHERE session_id = 's' FOR UPDATE")
        .await
        .unwrap();
    let moving = b.acquire("s").await.unwrap_err();
    assert!(matches!(moving, StoreError::Moving(ref s) if s == "s"), "{moving}");
    assert!(moving.to_string().contains("send again"), "{moving}");
    locker.batch_execute("COMMIT").await.unwrap();
    assert_eq!(b.acquire("s").await.unwrap(), Owner::Here);
}

#[tokio::test]
#[ignore = "needs PostgreSQL (AIRLOCK_TEST_POSTGRES); .ci/run starts one"]
async fn sslmode_require_encrypts_and_verify_ca_and_verify_full_check_the_servers_certificate() {
    let Some(server) = postgres::server("sslmode_require_encrypts") else { return };
    let database = postgres::database(&server);
    let with = |params: &str| {
        let join = if database.contains('?') { '&' } else { '?' };
        format!("{database}{join}{params}")
    };
    // The test cluster (`pg_virtualenv`) serves TLS with Debian's self-signed certificate.
    let encrypted = gateway(&with("sslmode=require"), "a", Duration::from_secs(30)).await;
    let version = encrypted.encryption().await.unwrap();
    assert!(version.as_deref().is_some_and(|v| v.starts_with("TLSv1.")), "{version:?}");
    assert_eq!(encrypted.acquire("s").await.unwrap(), Owner::Here);
    encrypted.append("s", vec![event(0)], Index::default()).await.unwrap();
    let plain = gateway(&with("sslmode=disable"), "b", Duration::from_secs(30)).await;
    assert_eq!(plain.encryption().await.unwrap(), None);
    assert_eq!(plain.events("s", None, 10).await.unwrap(), vec![event(0)]);

    // Verified against the certificate the server serves, made out to `localhost`: reached by
    // that name it is taken, by its IP only when the name is not checked (`verify-ca`).
    let certificate = &postgres::query(&database, "SHOW ssl_cert_file")[0];
    let root = format!("sslrootcert={certificate}");
    let verified =
        gateway(&with(&format!("sslmode=verify-full&{root}")), "c", Duration::ZERO).await;
    assert!(verified.encryption().await.unwrap().is_some());
    let by_ip = |params: &str| with(params).replacen("@localhost:", "@127.0.0.1:", 1);
    assert!(by_ip("").contains("@127.0.0.1:"), "the test cluster is on localhost: {database}");
    let any_name = gateway(&by_ip(&format!("sslmode=verify-ca&{root}")), "d", Duration::ZERO).await;
    assert!(any_name.encryption().await.unwrap().is_some());
    let refused = |url: String| async move {
        let (node, address) = ("e".into(), "http://e".into());
        let cluster = Cluster { node, address, lease: Duration::ZERO, pool: 1 };
        Store::connect(&url, cluster).await.err().expect("refused").to_string()
    };
    let wrong_name = refused(by_ip(&format!("sslmode=verify-full&{root}"))).await;
    assert!(wrong_name.contains("certificate"), "it says why: {wrong_name}");
    // Signed by none of these roots (Debian's public CAs).
    let bundle = "sslrootcert=/etc/ssl/certs/ca-certificates.crt";
    let unknown = refused(with(&format!("sslmode=verify-full&{bundle}"))).await;
    assert!(unknown.contains("certificate"), "it says why: {unknown}");
}

#[tokio::test]
#[ignore = "needs PostgreSQL (AIRLOCK_TEST_POSTGRES); .ci/run starts one"]
async fn keys_on_postgres_are_found_by_their_secret_until_revoked() {
    let Some(server) = postgres::server("keys_on_postgres") else { return };
    let store = gateway(&postgres::database(&server), "a", Duration::from_secs(30)).await;
    assert!(!store.has_keys().await.unwrap());
    let made = store.create_key("acme", false, 1).await.unwrap();
    assert_eq!(store.live_key(&made.secret).await.unwrap(), Some(made.key.clone()));
    assert_eq!(store.keys().await.unwrap(), vec![made.key.clone()]);
    let revoked = store.revoke_key(&made.key.key_id, 2).await.unwrap();
    assert_eq!(revoked.revoked_at, Some(2));
    assert_eq!(store.live_key(&made.secret).await.unwrap(), None);
    assert!(store.has_keys().await.unwrap(), "a revoked key still keeps auth on");
}

#[tokio::test]
#[ignore = "needs PostgreSQL (AIRLOCK_TEST_POSTGRES); .ci/run starts one"]
async fn a_lease_given_up_late_never_ends_a_newer_lease_of_the_session() {
    let Some(server) = postgres::server("a_lease_given_up_late") else { return };
    let database = postgres::database(&server);
    let store = gateway(&database, "a", Duration::from_secs(30)).await;
    assert_eq!(store.acquire("s").await.unwrap(), Owner::Here);
    // The session leaves memory: its lease is given up in the background, here late.
    let late = store.release("s");
    // Woken and evicted again meanwhile, the second release done at once; then woken again.
    assert_eq!(store.acquire("s").await.unwrap(), Owner::Here);
    store.release("s").await.unwrap();
    assert_eq!(store.acquire("s").await.unwrap(), Owner::Here);
    late.await.unwrap();
    store.append("s", vec![event(0)], Index::default()).await.unwrap();
}
