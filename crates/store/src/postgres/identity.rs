//! A gateway's name and address are its own: while it runs it holds an advisory lock on each, on
//! a connection of its own, so a second gateway started with either is refused and says who has
//! it. The `nodes` table says which gateway advertised which address.

use std::time::Duration;

use tokio::task::JoinHandle;

use super::tls::Connect;
use super::{Cluster, StoreError, keep_connected};

/// How long a starting gateway waits for a name or address to be let go: a gateway that just
/// stopped (or was killed) in its place holds them until PostgreSQL sees its connection close.
const TAKE_WAIT: Duration = Duration::from_secs(5);

/// Why a gateway may not start under its name or address.
enum Refusal {
    Name,
    Address,
}

/// Takes `cluster`'s name and address for as long as this process runs (taken again if the
/// connection holding them is lost); refuses with what to change when a running gateway has
/// either.
pub(super) async fn claim(connect: &Connect, cluster: &Cluster) -> Result<(), StoreError> {
    let held = hold(connect, cluster).await?;
    let (connect, cluster) = (connect.clone(), cluster.clone());
    tokio::spawn(keep_connected(held, "the connection holding this gateway's name", move || {
        let (connect, cluster) = (connect.clone(), cluster.clone());
        async move { hold(&connect, &cluster).await }
    }));
    Ok(())
}

/// Opens a connection and takes the two locks on it; answers the task that keeps the connection
/// (and so the locks), which ends when the connection does.
async fn hold(connect: &Connect, cluster: &Cluster) -> Result<JoinHandle<()>, StoreError> {
    let (client, connection) = connect.0.connect(connect.1.clone()).await?;
    let driver = tokio::spawn(async move {
        let _ = connection.await;
    });
    let wait = format!("SET lock_timeout = {}", TAKE_WAIT.as_millis());
    client.batch_execute(&wait).await?;
    let take = "SELECT pg_advisory_lock(hashtextextended($1, 0))";
    let taken = async {
        let name = format!("airlock-node:{}", cluster.node);
        client.execute(take, &[&name]).await.map_err(|e| (Refusal::Name, e))?;
        let address = format!("airlock-address:{}", cluster.address);
        client.execute(take, &[&address]).await.map_err(|e| (Refusal::Address, e))?;
        Ok::<_, (Refusal, tokio_postgres::Error)>(())
    };
    if let Err((refusal, error)) = taken.await {
        let lock_wait = error.code() == Some(&tokio_postgres::error::SqlState::LOCK_NOT_AVAILABLE);
        let refusal = match lock_wait {
            true => refused(&client, cluster, refusal).await,
            false => error.into(),
        };
        driver.abort();
        return Err(refusal);
    }
    let sql = "INSERT INTO nodes (node, address, started_at) VALUES ($1, $2, now()) \
               ON CONFLICT (node) DO UPDATE SET address = EXCLUDED.address, started_at = now()";
    client.execute(sql, &[&cluster.node, &cluster.address]).await?;
    client.batch_execute("RESET lock_timeout").await?;
    // The client must live as long as the connection holds the locks.
    Ok(tokio::spawn(async move {
        let _client = client;
        let _ = driver.await;
    }))
}

/// The refusal, naming the gateway that has the address when the `nodes` table says.
async fn refused(
    client: &tokio_postgres::Client,
    cluster: &Cluster,
    refusal: Refusal,
) -> StoreError {
    let message = match refusal {
        Refusal::Name => format!(
            "a running gateway already has the node id {:?} (the same --node-id, or the same \
             --data, whose file beside it keeps the id); give each gateway its own",
            cluster.node
        ),
        Refusal::Address => {
            let sql = "SELECT node FROM nodes WHERE address = $1 ORDER BY started_at DESC LIMIT 1";
            let holder = client.query_opt(sql, &[&cluster.address]).await.ok().flatten();
            let who = holder.map_or_else(
                || "another running gateway".to_owned(),
                |row| format!("the running gateway {:?}", row.get::<_, String>(0)),
            );
            format!(
                "{who} already advertises {} to the others; give each gateway its own --advertise \
                 (the address the other gateways reach it at)",
                cluster.address
            )
        }
    };
    StoreError::Taken(message)
}
