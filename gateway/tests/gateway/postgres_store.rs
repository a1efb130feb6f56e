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
    let cluster = Cluster { node: node.to_owned(), address, lease };
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
    // it when it renews.
    assert_eq!(a.acquire("t").await.unwrap(), Owner::Here);
    assert_eq!(b.acquire("t").await.unwrap(), Owner::Here);
    assert_eq!(a.renew().await.unwrap(), vec!["t".to_owned()]);
    assert_eq!(b.events("s", None, 10).await.unwrap(), vec![event(0), event(1)]);
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
