//! `airlock serve`: the gateway. Every flag also reads an `AIRLOCK_*` environment variable.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;

use super::args::{DurabilityArg, LimitsArgs, MODELS, ModelArgs, SandboxArgs, TOOLS};
use super::data_lock::DataLock;
use crate::server::{Gateway, Settings, Shared, WebhookSettings, shutdown_signal};
use airlock_http::DEFAULT_MAX_BODY;
use airlock_http::connections::Connections;
use airlock_sessions::{Eviction, Limits, Rules, TenantLimits};

/// `serve --help`'s headings, one per group of flags (with [`MODELS`] and [`TOOLS`]).
const ACCESS: &str = "Listening and access";
const STORAGE: &str = "Storage and cluster";
const LIMITS: &str = "Limits";
const WEBHOOKS: &str = "Webhooks";
const TRACES: &str = "Traces";

/// Arguments of `airlock serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Settings file (default: `./airlock.toml` when it exists); a flag or its variable wins
    /// over the file.
    #[arg(long, env = "AIRLOCK_CONFIG")]
    pub config: Option<PathBuf>,
    /// Address to listen on (port 0 picks a free port).
    #[arg(help_heading = ACCESS, long, env = "AIRLOCK_LISTEN", default_value = "127.0.0.1:7700")]
    pub listen: String,
    /// Where clients reach the gateway when that is not where it listens (behind a proxy), e.g.
    /// `https://agents.example.com`; an `https://` URL makes the browser's sign-in cookie
    /// `Secure`.
    #[arg(help_heading = ACCESS, long, env = "AIRLOCK_PUBLIC_URL", value_name = "URL", value_parser = public_url)]
    pub public_url: Option<String>,
    /// Origins allowed by CORS (repeat, or `*`); none sends no CORS headers.
    #[arg(help_heading = ACCESS, long = "cors-origin", env = "AIRLOCK_CORS_ORIGINS", value_delimiter = ',')]
    pub cors_origins: Vec<String>,
    /// Request body limit in bytes.
    #[arg(help_heading = ACCESS, long, env = "AIRLOCK_MAX_BODY", default_value_t = DEFAULT_MAX_BODY)]
    pub max_body: usize,
    /// A request's head must arrive within this long; a connection idle between requests is
    /// closed after it.
    #[arg(help_heading = ACCESS, long, env = "AIRLOCK_HEADER_TIMEOUT", default_value = "30s", value_parser = humantime::parse_duration)]
    pub header_timeout: Duration,
    /// A request's body must arrive within this long (else 408).
    #[arg(help_heading = ACCESS, long, env = "AIRLOCK_BODY_TIMEOUT", default_value = "60s", value_parser = humantime::parse_duration)]
    pub body_timeout: Duration,
    /// Connections open at once; one more is answered 503 and closed (default: the open-files
    /// limit less 512).
    #[arg(help_heading = ACCESS, long, env = "AIRLOCK_MAX_CONNECTIONS")]
    pub max_connections: Option<usize>,
    /// Serve `/metrics` on this address instead of the API's (then the API's answers 404).
    #[arg(help_heading = ACCESS, long, env = "AIRLOCK_METRICS_LISTEN", value_name = "ADDR")]
    pub metrics_listen: Option<String>,
    /// `/metrics` asks for `Authorization: Bearer <this>` (keep it out of the command line: set
    /// `AIRLOCK_METRICS_KEY`).
    #[arg(help_heading = ACCESS, long, env = "AIRLOCK_METRICS_KEY", value_name = "KEY", hide_env_values = true)]
    pub metrics_key: Option<String>,
    /// The model of sessions that name none, its window and its fallbacks.
    #[command(flatten, next_help_heading = MODELS)]
    pub model: ModelArgs,
    /// `[models."NAME"]` of `airlock.toml`: each model's context window and compaction share,
    /// endpoint, fallbacks and retries.
    #[arg(skip)]
    pub models: airlock_providers::model::ModelTable,
    /// The SQLite file holding every session.
    #[arg(help_heading = STORAGE, long, env = "AIRLOCK_DATA", default_value = "./airlock.db")]
    pub data: PathBuf,
    /// `full` survives power loss; `normal` is faster and may lose the last commits then.
    #[arg(help_heading = STORAGE, long, env = "AIRLOCK_DURABILITY", value_enum, default_value = "full")]
    pub durability: DurabilityArg,
    /// Where the store is, when not in `--data`.
    #[command(flatten, next_help_heading = STORAGE)]
    pub cluster: ClusterArgs,
    /// Drop a session from memory after it has been at rest (idle, nothing pending, unused) this
    /// long, e.g. `60s`, `500ms`, `1h`; it comes back from its log when used.
    #[arg(help_heading = STORAGE, long, env = "AIRLOCK_IDLE_EVICT", default_value = "60s", value_parser = humantime::parse_duration)]
    pub idle_evict: Duration,
    /// Past this many sessions in memory, drop those at rest, least recently used first.
    #[arg(help_heading = STORAGE, long, env = "AIRLOCK_MAX_LIVE_SESSIONS", default_value_t = Eviction::default().max_live)]
    pub max_live_sessions: usize,
    /// What no turn may exceed.
    #[command(flatten, next_help_heading = LIMITS)]
    pub limits: LimitsArgs,
    /// How many messages may wait in one session's queue; one more is refused (429).
    #[arg(help_heading = LIMITS, long, env = "AIRLOCK_MAX_QUEUE", default_value_t = Limits::default().queue)]
    pub max_queue: usize,
    /// Sessions a tenant may have stored (not disposed); 0: no quota.
    #[arg(help_heading = LIMITS, long, env = "AIRLOCK_TENANT_SESSIONS", default_value_t = TenantLimits::default().sessions)]
    pub tenant_sessions: u64,
    /// Event streams a tenant may have open at once; 0: no quota.
    #[arg(help_heading = LIMITS, long, env = "AIRLOCK_TENANT_STREAMS", default_value_t = TenantLimits::default().streams)]
    pub tenant_streams: usize,
    /// Messages and runs a tenant may enqueue per second (bursts of twice as many); 0: no quota.
    #[arg(help_heading = LIMITS, long, env = "AIRLOCK_TENANT_RATE", default_value_t = TenantLimits::default().per_second)]
    pub tenant_rate: u32,
    /// Sessions of a tenant running a turn at once (its subagents' too); a message that would
    /// wake one more is refused (429), a goal round waits. 0: no quota.
    #[arg(help_heading = LIMITS, long, env = "AIRLOCK_TENANT_TURNS", default_value_t = TenantLimits::default().turns)]
    pub tenant_turns: usize,
    /// Sessions (subagents included) and forks a tenant may create a minute, in bursts of as
    /// many; 0: no quota.
    #[arg(help_heading = LIMITS, long, env = "AIRLOCK_TENANT_CREATES", default_value_t = TenantLimits::default().creates_per_minute)]
    pub tenant_creates: u32,
    /// Bytes of log a tenant's sessions (not disposed) may keep; past it new sessions, forks and
    /// messages are refused (429). 0: no quota.
    #[arg(help_heading = LIMITS, long, env = "AIRLOCK_TENANT_BYTES", default_value_t = TenantLimits::default().bytes)]
    pub tenant_bytes: u64,
    /// How many levels of subagents a session may have below it: the model's `agent` or
    /// `spawn_agent` one level deeper gets the tool error `LIMIT_EXCEEDED`.
    #[arg(help_heading = LIMITS, long, env = "AIRLOCK_MAX_SUBAGENT_DEPTH", default_value_t = Limits::default().depth)]
    pub max_subagent_depth: u32,
    /// How many subagents below one root session may work (run a turn) at once.
    #[arg(help_heading = LIMITS, long, env = "AIRLOCK_MAX_DESCENDANTS", default_value_t = Limits::default().descendants)]
    pub max_descendants: usize,
    /// How many sessions may have a core instance in memory at once (default: what this
    /// machine's memory and memory-map limit hold); past it new work is refused with 503
    /// `overloaded` and running sessions go on.
    #[arg(help_heading = LIMITS, long, env = "AIRLOCK_MAX_INSTANCES", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_instances: Option<u64>,
    /// The core and the plugins.
    #[command(flatten, next_help_heading = TOOLS)]
    pub sandbox: SandboxArgs,
    /// `[webhooks.NAME]` and `[schedules.NAME]` of `airlock.toml`: the operator's webhook
    /// subscriptions and schedules.
    #[arg(skip)]
    pub declared: airlock_hooks::operator::Declared,
    /// How webhooks are delivered.
    #[command(flatten, next_help_heading = WEBHOOKS)]
    pub webhooks: WebhookArgs,
    /// Where traces go.
    #[command(flatten, next_help_heading = TRACES)]
    pub traces: TraceArgs,
}

/// Where traces go (`docs/deploy.md`, "Traces"). The other standard `OTEL_*` variables
/// (`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, `…_HEADERS`, `…_PROTOCOL`, `OTEL_SERVICE_NAME`,
/// `OTEL_BSP_*`, `OTEL_SDK_DISABLED`) are read too.
#[derive(Debug, Args)]
pub struct TraceArgs {
    /// Export each turn, model call and tool call as OpenTelemetry GenAI spans to this OTLP/HTTP
    /// collector (its base URL: spans go to URL/v1/traces). Off when unset.
    #[arg(long, env = "OTEL_EXPORTER_OTLP_ENDPOINT", value_name = "URL")]
    pub otlp_endpoint: Option<String>,
    /// Put message contents (prompts, answers, tool arguments and results) into the spans. Off
    /// by default: contents are sensitive. (`--otel-capture-content` alone is `true`.)
    #[arg(long, env = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT",
        action = clap::ArgAction::Set, num_args = 0..=1, default_value_t = false,
        default_missing_value = "true")]
    pub otel_capture_content: bool,
}

/// How webhooks are delivered (`docs/http-api.md`, "Webhooks").
#[derive(Debug, Args)]
pub struct WebhookArgs {
    /// Let webhook subscriptions name this machine (`http://127.0.0.1:…`, `localhost`): a
    /// receiver on the same host, for development and tests. Off, only https elsewhere is taken.
    /// (`--webhooks-allow-loopback` alone is `true`; `=false`, and `true`/`false` in
    /// `airlock.toml`, are taken too.)
    #[arg(long, env = "AIRLOCK_WEBHOOKS_ALLOW_LOOPBACK", action = clap::ArgAction::Set,
        num_args = 0..=1, default_value_t = false, default_missing_value = "true")]
    pub webhooks_allow_loopback: bool,
    /// How long a webhook receiver has to answer a delivery before it is tried again.
    #[arg(long, env = "AIRLOCK_WEBHOOK_TIMEOUT", default_value = "10s", value_parser = humantime::parse_duration)]
    pub webhook_timeout: Duration,
    /// The wait before a failed delivery is tried again; each next wait is three times longer
    /// (at most two hours), give or take a fifth at random.
    #[arg(long, env = "AIRLOCK_WEBHOOK_RETRY_AFTER", default_value = "5s", value_parser = humantime::parse_duration)]
    pub webhook_retry_after: Duration,
    /// How long a delivery is retried before its subscription is marked failing (and gets no
    /// more deliveries until it is resumed).
    #[arg(long, env = "AIRLOCK_WEBHOOK_RETRY_FOR", default_value = "24h", value_parser = humantime::parse_duration)]
    pub webhook_retry_for: Duration,
}

impl From<&WebhookArgs> for WebhookSettings {
    fn from(args: &WebhookArgs) -> WebhookSettings {
        WebhookSettings {
            allow_loopback: args.webhooks_allow_loopback,
            timeout: args.webhook_timeout,
            retry_after: args.webhook_retry_after,
            retry_for: args.webhook_retry_for,
        }
    }
}

/// A store several gateways share, instead of the SQLite file (`docs/deploy.md`).
#[derive(Debug, Args)]
pub struct ClusterArgs {
    /// A PostgreSQL database URL (`postgres://user:password@host:5432/db`) to keep everything
    /// in, shared by every gateway given the same URL; `--data` is then unused.
    #[arg(long, env = "AIRLOCK_DATABASE_URL", value_name = "URL")]
    pub store: Option<String>,
    /// With `--store`: where the other gateways reach this one (`http://host:port`), to forward
    /// requests for the sessions it runs (default: the address it listens on).
    #[arg(long, env = "AIRLOCK_ADVERTISE", value_name = "URL")]
    pub advertise: Option<String>,
    /// With `--store`: this gateway's name among those sharing the database, unique among the
    /// running ones (default: one made at its first start and kept in the file `<--data>.node-id`,
    /// so a gateway restarted in place takes its sessions back at once).
    #[arg(long, env = "AIRLOCK_NODE_ID", value_name = "ID")]
    pub node_id: Option<String>,
    /// With `--store`: the most connections this gateway keeps to the database (two more of its
    /// own listen for the others' notices and hold its name).
    #[arg(long, env = "AIRLOCK_STORE_POOL", default_value_t = airlock_store::DEFAULT_POOL, value_name = "N")]
    pub store_pool: usize,
    /// With `--store`: how long a session stays with a gateway that stopped renewing its lease
    /// (it died or stalled) before another gateway takes it over, e.g. `5s`.
    #[arg(long, env = "AIRLOCK_LEASE", default_value = "4s", value_parser = humantime::parse_duration)]
    pub lease: Duration,
}

/// Runs the gateway until SIGINT or SIGTERM.
pub async fn serve(
    args: ServeArgs,
    cache_dir: Option<PathBuf>,
    log_format: super::log::LogFormat,
) -> ExitCode {
    // Only one process may use a SQLite file; a shared store is made for many.
    let lock = match args.cluster.store {
        Some(_) => None,
        None => Some(DataLock::take(&args.data)),
    };
    let _lock = match lock.transpose() {
        Ok(lock) => lock,
        Err(error) => {
            eprintln!("airlock: {error}");
            return ExitCode::FAILURE;
        }
    };
    let models = std::sync::Arc::new(args.model.table(args.models));
    let traces = airlock_traces::TraceSettings {
        endpoint: args.traces.otlp_endpoint.clone(),
        capture_content: args.traces.otel_capture_content,
    };
    let traces = match airlock_traces::Traces::from_settings(&traces) {
        Ok(traces) => traces,
        Err(error) => {
            eprintln!("airlock: {error}");
            return ExitCode::FAILURE;
        }
    };
    let rules = Rules {
        workspaces: args.sandbox.workspaces(&args.data),
        approval_for: args.sandbox.approval_for.clone(),
        default_model: args.model.model,
        models,
        eviction: Eviction { idle: args.idle_evict, max_live: args.max_live_sessions },
        limits: (&args.limits).into(),
        admission: Limits {
            tenant: TenantLimits {
                sessions: args.tenant_sessions,
                streams: args.tenant_streams,
                per_second: args.tenant_rate,
                turns: args.tenant_turns,
                creates_per_minute: args.tenant_creates,
                bytes: args.tenant_bytes,
            },
            depth: args.max_subagent_depth,
            descendants: args.max_descendants,
            queue: args.max_queue,
            instances: args.max_instances.map(|most| most as usize),
        },
        tap: None, // the trace exporter's, given where the sessions are built
    };
    let settings = Settings {
        rules,
        data: args.data,
        shared: None,
        durability: args.durability.into(),
        max_body: args.max_body,
        cors_origins: args.cors_origins,
        public_url: args.public_url,
        cache_dir,
        sandbox: args.sandbox.into(),
        metrics: crate::server::MetricsSettings {
            listen: args.metrics_listen,
            key: args.metrics_key,
        },
        connections: Connections {
            header_timeout: args.header_timeout,
            body_timeout: args.body_timeout,
            max: args.max_connections,
        },
        webhooks: (&args.webhooks).into(),
        declared: args.declared,
        traces,
    };
    let started = async {
        // Bound first: a gateway sharing its store tells the others its address as it starts.
        let (listener, addr) = Gateway::listen(&args.listen).await?;
        let mut settings = settings;
        if let Some(url) = args.cluster.store {
            let address = match args.cluster.advertise {
                Some(address) => address,
                None => advertised(addr).map_err(crate::server::ServeError::Setting)?,
            };
            let node = match args.cluster.node_id {
                Some(node) => node,
                None => kept_node_id(&settings.data).map_err(crate::server::ServeError::Setting)?,
            };
            let (lease, pool) = (args.cluster.lease, args.cluster.store_pool);
            settings.shared = Some(Shared { url, node, address, lease, pool });
        }
        let gateway = Gateway::start(settings).await?;
        gateway.check_exposure(addr).await?;
        let metrics = gateway.serve_metrics().await?;
        Ok::<_, crate::server::ServeError>((gateway, listener, addr, metrics))
    };
    let (gateway, listener, addr, metrics) = match started.await {
        Ok(parts) => parts,
        Err(error) => {
            eprintln!("airlock: {error}");
            return ExitCode::FAILURE;
        }
    };
    if let Some(metrics) = metrics {
        match log_format {
            super::log::LogFormat::Text => {
                eprintln!("airlock: metrics on http://{metrics}/metrics")
            }
            super::log::LogFormat::Json => {
                tracing::info!(address = %format!("http://{metrics}"), "serving metrics")
            }
        }
    }
    // Tests and scripts read the port from this line (in JSON, from its `address`).
    match log_format {
        super::log::LogFormat::Text => eprintln!("airlock: listening on http://{addr}"),
        super::log::LogFormat::Json => {
            tracing::info!(address = %format!("http://{addr}"), "listening")
        }
    }
    gateway.run(listener, shutdown_signal()).await;
    ExitCode::SUCCESS
}

/// `--public-url`: an http(s) URL.
fn public_url(url: &str) -> Result<String, String> {
    match url.starts_with("http://") || url.starts_with("https://") {
        true => Ok(url.trim_end_matches('/').to_owned()),
        false => Err(format!("{url:?} is not an http:// or https:// URL")),
    }
}

/// The address other gateways reach this one at when `--advertise` is not given: the one it
/// listens on. Listening on every interface names none of them, so that needs `--advertise`.
fn advertised(addr: std::net::SocketAddr) -> Result<String, String> {
    match addr.ip().is_unspecified() {
        true => Err(format!(
            "--listen {addr} takes connections on every interface, so it names no address the \
             other gateways can reach this one at: give --advertise http://HOST:{} (this \
             machine's address on their network)",
            addr.port()
        )),
        false => Ok(format!("http://{addr}")),
    }
}

/// The node id kept beside the data file (`<data>.node-id`), made at the first start.
fn kept_node_id(data: &std::path::Path) -> Result<String, String> {
    let mut path = data.as_os_str().to_owned();
    path.push(".node-id");
    let path = std::path::PathBuf::from(path);
    let failed = |e: std::io::Error| {
        format!(
            "cannot keep this gateway's node id in {}: {e}; give it one with --node-id, or a \
             --data path whose folder is writable",
            path.display()
        )
    };
    match std::fs::read_to_string(&path) {
        Ok(id) if !id.trim().is_empty() => Ok(id.trim().to_owned()),
        Ok(_) => Err(format!("{} is empty; delete it to have a new node id made", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let id = airlock_base::clock::fresh_id();
            std::fs::write(&path, format!("{id}\n")).map_err(failed)?;
            Ok(id)
        }
        Err(e) => Err(failed(e)),
    }
}
