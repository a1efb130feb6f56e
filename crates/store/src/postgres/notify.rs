//! Word between gateways through PostgreSQL's LISTEN/NOTIFY: what one gateway's cross-session
//! stream (`GET /v1/events`) shows of the sessions the others run.

use futures::StreamExt;
use tokio::sync::broadcast;
use tokio::task::JoinHandle;
use tokio_postgres::AsyncMessage;

use super::{Postgres, StoreError, keep_connected};

/// The channel every gateway listens on.
const CHANNEL: &str = "airlock_hub";

/// How many notices a slow reader may fall behind before it misses some.
const BUFFER: usize = 1024;

impl Postgres {
    /// Tells every gateway listening (this one too) `payload`. PostgreSQL delivers it once the
    /// statement commits, in order with this connection's other notices.
    pub async fn publish(&self, payload: &str) -> Result<(), StoreError> {
        let client = self.client().await?;
        client.execute("SELECT pg_notify($1, $2)", &[&CHANNEL, &payload]).await?;
        Ok(())
    }

    /// Starts listening, on a connection of its own, for what the gateways publish; resolves
    /// once PostgreSQL listens. The connection is opened again when it is lost (what is published
    /// meanwhile is missed). Called once; again, it does nothing.
    pub async fn listen(&self) -> Result<(), StoreError> {
        if self.inner.notices.get().is_some() {
            return Ok(());
        }
        let sender = broadcast::channel(BUFFER).0;
        let connect = self.inner.connect.clone();
        let listening = listen(&connect, sender.clone()).await?;
        if self.inner.notices.set(sender.clone()).is_ok() {
            let what = "the connection listening for other gateways' notices";
            tokio::spawn(keep_connected(listening, what, move || {
                let (connect, sender) = (connect.clone(), sender.clone());
                async move { listen(&connect, sender).await }
            }));
        }
        Ok(())
    }

    /// What the gateways publish from now on, once [`Postgres::listen`] started.
    pub fn notices(&self) -> Option<broadcast::Receiver<String>> {
        self.inner.notices.get().map(broadcast::Sender::subscribe)
    }
}

/// Opens a connection and listens on it; answers the task that passes on what it hears, which
/// ends when the connection does.
async fn listen(
    (config, tls): &super::tls::Connect,
    notices: broadcast::Sender<String>,
) -> Result<JoinHandle<()>, StoreError> {
    let (client, mut connection) = config.connect(tls.clone()).await?;
    // The connection delivers notifications to whoever polls it.
    let driver = tokio::spawn(async move {
        let mut messages = futures::stream::poll_fn(|cx| connection.poll_message(cx));
        while let Some(Ok(message)) = messages.next().await {
            if let AsyncMessage::Notification(notice) = message {
                let _ = notices.send(notice.payload().to_owned());
            }
        }
    });
    if let Err(error) = client.batch_execute(&format!("LISTEN {CHANNEL}")).await {
        driver.abort();
        return Err(error.into());
    }
    // The client must live as long as the connection listens.
    Ok(tokio::spawn(async move {
        let _client = client;
        let _ = driver.await;
    }))
}
