//! The gateway process: open the store, bring every session back, serve the API until told to
//! stop, then close streams and let in-flight commits land.
//!
//! This is the composition root: the one place where the store, the core host and the tools
//! (built-in, plugins, MCP servers) are opened, [`Sessions`] is built over them (adding the
//! subagent and goal tools, which act on the sessions themselves), and the faces are put in
//! front. Every crate below it is handed what it needs.

use std::future::Future;
use std::net::SocketAddr;

use std::sync::Arc;

use tokio::net::TcpListener;
use tokio::sync::watch;
use tower_http::cors::{AllowOrigin, Any, CorsLayer};

use airlock_hooks::operator::{DeclarationError, Declared};
use airlock_hooks::schedules::Schedules;
use airlock_hooks::webhooks::{DeliverySettings, Webhooks};
use airlock_http::connections::{self, Connections};
use airlock_http::{
    Access, AccessSettings, AppState, Exposure, ExposureError, Handles, MetricsAccess, app,
    metrics_app,
};
use airlock_providers::tools::ToolRegistry;
use airlock_sandbox::core_host::{CoreError, CoreHost};
use airlock_sandbox::plugins::{PluginError, PluginHost};
use airlock_sessions::{RegistryError, Rules, Sessions};
use airlock_store::{Cluster, CommitOn, Durability, Store, StoreError};

/// How to run a gateway.
#[derive(Clone, Debug)]
pub struct Settings {
    /// The SQLite file.
    pub data: std::path::PathBuf,
    /// A PostgreSQL database shared with other gateways, instead of `data`.
    pub shared: Option<Shared>,
    /// Commit durability.
    pub durability: Durability,
    /// The request body limit in bytes.
    pub max_body: usize,
    /// Origins allowed by CORS (`*` for any); none: no CORS headers.
    pub cors_origins: Vec<String>,
    /// Where clients reach the gateway (`--public-url`), when not where it listens.
    pub public_url: Option<String>,
    /// Where compiled core code is cached.
    pub cache_dir: Option<std::path::PathBuf>,
    /// The core and the plugins.
    pub sandbox: Sandbox,
    /// What every session is built with: its default model, limits, admission, approvals,
    /// context windows, and when it leaves memory.
    pub rules: Rules,
    /// Timeouts and the cap on open connections.
    pub connections: Connections,
    /// Where `/metrics` is served, and who may read it.
    pub metrics: MetricsSettings,
    /// How webhooks are delivered.
    pub webhooks: WebhookSettings,
    /// The webhook subscriptions and schedules `airlock.toml` declares.
    pub declared: Declared,
    /// Where traces go (`--otlp-endpoint`); the sessions are built with its tap.
    pub traces: Option<airlock_traces::Traces>,
}

/// How webhooks are delivered (`docs/http-api.md`, "Webhooks").
#[derive(Clone, Debug)]
pub struct WebhookSettings {
    /// Deliveries may go to this machine (`--webhooks-allow-loopback`).
    pub allow_loopback: bool,
    /// How long a receiver has to answer.
    pub timeout: std::time::Duration,
    /// The wait before the first retry (tripled for each next one, at most two hours).
    pub retry_after: std::time::Duration,
    /// How long a delivery is retried before its subscription is marked failing.
    pub retry_for: std::time::Duration,
}

impl Default for WebhookSettings {
    fn default() -> WebhookSettings {
        use std::time::Duration;
        WebhookSettings {
            allow_loopback: false,
            timeout: Duration::from_secs(10),
            retry_after: Duration::from_secs(5),
            retry_for: Duration::from_secs(24 * 3600),
        }
    }
}

/// Where `/metrics` is served, and who may read it.
#[derive(Clone, Debug, Default)]
pub struct MetricsSettings {
    /// An address of its own (none: beside the API).
    pub listen: Option<String>,
    /// A key it asks for as `Authorization: Bearer <key>` (none: open to anyone who reaches it).
    pub key: Option<String>,
}

/// A store shared by several gateways (`docs/deploy.md`).
#[derive(Clone, Debug)]
pub struct Shared {
    /// The PostgreSQL database URL.
    pub url: String,
    /// This gateway's name among those sharing it (`--node-id`).
    pub node: String,
    /// Where the other gateways reach this one (`http://host:port`).
    pub address: String,
    /// How long a lease lasts unrenewed.
    pub lease: std::time::Duration,
    /// Connections kept to the database at most.
    pub pool: usize,
}

/// What runs sandboxed: the core (the built-in one unless `core` names another component) and the
/// plugin tools under `plugins`.
#[derive(Clone, Debug, Default)]
pub struct Sandbox {
    /// Plugin tools from this directory (`<name>/plugin.toml` and `<name>/<name>.wasm`).
    pub plugins: Option<std::path::PathBuf>,
    /// A component of the world `airlock:core/agent-core` to run instead of the built-in core.
    pub core: Option<std::path::PathBuf>,
    /// MCP servers whose tools every session may call (not sandboxed: see [`airlock_providers::mcp`]).
    pub mcp: Vec<airlock_providers::mcp::McpServer>,
}

/// Why the gateway could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The store.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The core.
    #[error(transparent)]
    Core(#[from] CoreError),
    /// `--approval-for` names a tool there is not.
    #[error("--approval-for: {0}")]
    Approval(String),
    /// Recovery.
    #[error("recovering the stored sessions failed: {0}")]
    Recover(#[from] RegistryError),
    /// The default model.
    #[error(transparent)]
    Model(#[from] airlock_providers::model::ModelSetupError),
    /// A plugin.
    #[error(transparent)]
    Plugin(#[from] airlock_sandbox::plugins::PluginError),
    /// An MCP server.
    #[error("{0}")]
    Mcp(#[from] airlock_providers::mcp::McpError),
    /// A webhook subscription or a schedule `airlock.toml` declares.
    #[error(transparent)]
    Declared(#[from] DeclarationError),
    /// Keys are missing for where it would listen.
    #[error(transparent)]
    Exposure(#[from] ExposureError),
    /// A setting that cannot work as given (what to give instead is said).
    #[error("{0}")]
    Setting(String),
    /// The `--core` file.
    #[error("cannot read the core component {path}: {source}")]
    CoreFile {
        /// The file.
        path: std::path::PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// The socket.
    #[error("cannot serve on {addr}: {source}")]
    Io {
        /// The address.
        addr: String,
        /// The error.
        source: std::io::Error,
    },
}

/// A gateway, ready to serve.
pub struct Gateway {
    state: AppState,
    stop: watch::Sender<bool>,
    settings: Settings,
    /// Whether the sessions stored at start are recovered.
    ready: Arc<watch::Sender<bool>>,
}

impl Gateway {
    /// Opens the store and the sessions, ready to serve at once. The sessions the store says
    /// were at work are brought back in the background, as far as the machine holds them
    /// (`/readyz` answers `ready` once they are); a request for one of them meanwhile brings it
    /// back first.
    pub async fn start(settings: Settings) -> Result<Gateway, ServeError> {
        let sessions = open_sessions(&settings).await?;
        if let Some(traces) = &settings.traces {
            traces.start(sessions.clone());
        }
        sessions.prepare().await?;
        let gateway = Gateway::over(sessions.clone(), settings.clone()).await?;
        let state = &gateway.state;
        settings.declared.apply(&state.webhooks, &state.schedules).await?;
        let ready = gateway.ready.clone();
        ready.send_replace(false);
        tokio::spawn(async move {
            let mut wait = std::time::Duration::from_millis(100);
            loop {
                match sessions.recover_stored().await {
                    Ok(recovered) => {
                        let (store, model) =
                            (sessions.store().flag(), &settings.rules.default_model);
                        tracing::info!(store, model, recovered, "sessions recovered");
                        break;
                    }
                    Err(error) => {
                        tracing::error!(%error, "recovering the stored sessions failed; trying again");
                        tokio::time::sleep(wait).await;
                        wait = (wait * 2).min(std::time::Duration::from_secs(5));
                    }
                }
            }
            ready.send_replace(true);
        });
        Ok(gateway)
    }

    /// Resolves once the sessions stored at start are recovered (at once for a gateway over a
    /// set of sessions that was recovered before).
    pub async fn recovered(&self) {
        let mut ready = self.state.ready.clone();
        let _ = ready.wait_for(|ready| *ready).await;
    }

    /// A gateway over sessions that are open already (`airlock acp --listen` shares its own).
    /// Whether the store has keys is read now, before anything is served.
    pub async fn over(sessions: Sessions, settings: Settings) -> Result<Gateway, ServeError> {
        let (stop, shutdown) = watch::channel(false);
        let access = AccessSettings {
            origins: settings.cors_origins.clone(),
            public_url: settings.public_url.clone(),
        };
        let access = Arc::new(Access::load(sessions.store(), access).await?);
        access.hear_keys(sessions.store());
        let body_timeout = settings.connections.body_timeout;
        let (ready, ready_rx) = watch::channel(true);
        let ready = Arc::new(ready);
        let runs = Arc::default();
        let metrics = MetricsAccess {
            elsewhere: settings.metrics.listen.is_some(),
            key: settings.metrics.key.as_deref().map(Arc::from),
        };
        let webhooks = deliver_webhooks(&sessions, &settings.webhooks, shutdown.clone());
        let schedules = fire_schedules(&sessions, shutdown.clone());
        let state = AppState::new(Handles {
            sessions,
            shutdown,
            access,
            body_timeout,
            ready: ready_rx,
            runs,
            metrics,
            webhooks,
            schedules,
            traces: settings.traces.clone(),
        });
        Ok(Gateway { state, stop, settings, ready })
    }

    /// The sessions it serves.
    pub fn sessions(&self) -> &Sessions {
        &self.state.sessions
    }

    /// Binds `addr` (port 0 picks a free one) for [`Gateway::run`]; an address off loopback is
    /// refused while the data file has no API keys.
    pub async fn bind(&self, addr: &str) -> Result<(TcpListener, SocketAddr), ServeError> {
        let (listener, local) = Gateway::listen(addr).await?;
        self.check_exposure(local).await?;
        Ok((listener, local))
    }

    /// Binds `addr` (port 0 picks a free one), before a gateway exists; check it with
    /// [`Gateway::check_exposure`] before serving.
    pub async fn listen(addr: &str) -> Result<(TcpListener, SocketAddr), ServeError> {
        let io = |source| ServeError::Io { addr: addr.to_owned(), source };
        let listener = TcpListener::bind(addr).await.map_err(io)?;
        let local = listener.local_addr().map_err(io)?;
        Ok((listener, local))
    }

    /// Serves `/metrics` on the address of its own `--metrics-listen` names, if any, until the
    /// gateway stops; answers where.
    pub async fn serve_metrics(&self) -> Result<Option<SocketAddr>, ServeError> {
        let Some(addr) = &self.settings.metrics.listen else { return Ok(None) };
        let (listener, local) = Gateway::listen(addr).await?;
        let app = metrics_app(self.state.metrics.key.clone());
        let mut stop = self.state.shutdown.clone();
        tokio::spawn(async move {
            let stopped = async move { while stop.changed().await.is_ok() && !*stop.borrow() {} };
            if let Err(error) = axum::serve(listener, app).with_graceful_shutdown(stopped).await {
                tracing::error!(%error, "serving /metrics failed");
            }
        });
        Ok(Some(local))
    }

    /// Refuses an address off loopback while the store has no API keys.
    pub async fn check_exposure(&self, local: SocketAddr) -> Result<(), ServeError> {
        Ok(Exposure::check(local, self.state.sessions.store()).await?)
    }

    /// Serves on `listener` until `shutdown` completes; then open streams end (clients resume
    /// with `Last-Event-ID`) and in-flight requests finish.
    pub async fn run(
        self,
        listener: TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) {
        let cors = cors(&self.settings.cors_origins);
        let sessions = self.state.sessions.clone();
        let store = sessions.store().clone();
        let traces = self.state.traces.clone();
        let router = app(self.state, self.settings.max_body, cors);
        let stop = self.stop;
        let stopping = move || {
            tracing::info!("shutting down: open streams end, requests in flight finish");
            sessions.begin_shutdown();
            let _ = stop.send(true);
        };
        connections::serve(listener, router, self.settings.connections, shutdown, stopping).await;
        // Another gateway sharing the store takes this one's sessions at once, not after the
        // lease time.
        if let Err(error) = store.release_all().await {
            tracing::warn!(%error, "giving up this gateway's leases failed; they run out by themselves");
        }
        if let Some(traces) = traces {
            traces.flush(std::time::Duration::from_secs(5)).await;
        }
        tracing::info!("stopped");
    }
}

/// The sessions over the store `settings` names, with the core and tools `settings.sandbox`
/// names, each built by `settings.rules`. Nothing is recovered yet.
pub async fn open_sessions(settings: &Settings) -> Result<Sessions, ServeError> {
    let (store, host, tools) = open_parts(settings).await?;
    let rules = &settings.rules;
    // Every session's commits also go to the trace exporter, when there is one.
    let tap = settings.traces.as_ref().map(airlock_traces::Traces::tap);
    let sessions = Sessions::new(store, Arc::new(host), tools, Rules { tap, ..rules.clone() });
    sessions.check_approval_for().map_err(ServeError::Approval)?;
    // The metrics' labels name only what this gateway was set up with.
    airlock_providers::model::allow_labels(&rules.default_model, &rules.models);
    for tool in sessions.tools().tools() {
        airlock_base::metrics::global().tools.allow(&tool.spec().name);
    }
    Ok(sessions)
}

/// The store, the core host and the tools `settings` name.
async fn open_parts(settings: &Settings) -> Result<(Store, CoreHost, ToolRegistry), ServeError> {
    settings.rules.models.chain(&settings.rules.default_model, None)?;
    let store = match &settings.shared {
        None => {
            // A runtime of one thread (`airlock stdio`, `Cli::runtime`) commits on that thread: a
            // commit goes to no writer thread and back.
            let on = match tokio::runtime::Handle::current().runtime_flavor() {
                tokio::runtime::RuntimeFlavor::CurrentThread => CommitOn::Caller,
                _ => CommitOn::Thread,
            };
            Store::open_with(&settings.data, settings.durability, on)?
        }
        Some(shared) => {
            // A gateway restarted under its node id takes its sessions back at once, while one
            // with a new id waits for their leases to run out.
            let (node, address) = (shared.node.clone(), shared.address.clone());
            let cluster = Cluster { node, address, lease: shared.lease, pool: shared.pool };
            let store = Store::connect(&shared.url, cluster).await?;
            match store.encryption().await? {
                Some(tls) => tracing::info!(tls, "connected to PostgreSQL over TLS"),
                None => tracing::warn!(
                    "the connection to PostgreSQL is not encrypted; add sslmode=require (or \
                     verify-full with sslrootcert) to the URL unless the network is private"
                ),
            }
            store
        }
    };
    let cache_dir = settings.cache_dir.as_deref();
    let host = match &settings.sandbox.core {
        None => CoreHost::new(cache_dir)?,
        Some(path) => {
            let wasm = std::fs::read(path)
                .map_err(|source| ServeError::CoreFile { path: path.clone(), source })?;
            CoreHost::from_component_bytes(&wasm, cache_dir)?
        }
    };
    let mut tools = ToolRegistry::builtin();
    if let Some(dir) = &settings.sandbox.plugins {
        let plugins = PluginHost::new(cache_dir)?;
        for plugin in plugins.load_dir(dir).await? {
            for tool in plugin.tools() {
                tools.add_new(tool).map_err(|e| PluginError::Load(plugin.name().into(), e))?;
            }
        }
    }
    for server in &settings.sandbox.mcp {
        for tool in airlock_providers::mcp::connect(server).await? {
            let clash = tools.add_new(tool);
            clash.map_err(|message| airlock_providers::mcp::McpError {
                server: server.name.clone(),
                message,
            })?;
        }
    }
    Ok((store, host, tools))
}

fn cors(origins: &[String]) -> Option<CorsLayer> {
    if origins.is_empty() {
        return None;
    }
    let layer = CorsLayer::new().allow_methods(Any).allow_headers(Any);
    Some(if origins.iter().any(|o| o == "*") {
        layer.allow_origin(Any)
    } else {
        layer.allow_origin(AllowOrigin::list(origins.iter().filter_map(|o| o.parse().ok())))
    })
}

/// Resolves on SIGINT or SIGTERM.
pub async fn shutdown_signal() {
    let interrupt = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut terminate =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
                .expect("installing the SIGTERM handler");
        tokio::select! {
            _ = interrupt => {}
            _ = terminate.recv() => {}
        }
    }
    #[cfg(not(unix))]
    let _ = interrupt.await;
}

/// The webhook subscriptions of `sessions`' store, and their deliverer, running until `shutdown`.
fn deliver_webhooks(
    sessions: &Sessions,
    settings: &WebhookSettings,
    shutdown: watch::Receiver<bool>,
) -> Webhooks {
    let store = sessions.store().clone();
    let delivery = DeliverySettings {
        timeout: settings.timeout,
        retry_after: settings.retry_after,
        retry_for: settings.retry_for,
        loopback: settings.allow_loopback,
        node: store.node().unwrap_or("local").to_owned(),
    };
    tokio::spawn(airlock_hooks::webhooks::deliver(store.clone(), delivery, shutdown));
    Webhooks::new(store, settings.allow_loopback)
}

/// The schedules of `sessions`' store, and what fires them, running until `shutdown`.
fn fire_schedules(sessions: &Sessions, shutdown: watch::Receiver<bool>) -> Schedules {
    let node = sessions.store().node().unwrap_or("local").to_owned();
    tokio::spawn(airlock_hooks::schedules::fire(sessions.clone(), node, shutdown));
    Schedules::new(sessions.clone())
}
