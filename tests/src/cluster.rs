//! Gateways sharing one PostgreSQL database, and clients that reach them as a load balancer
//! would: a node at random, the next one when a node does not answer, a 503 retried when it says.
//! Used by `tests/cluster.rs`.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::watch;

use crate::gateway::{Frame, Gateway, Sse};
use crate::{MockModel, postgres};

/// Short, so that a test waits little for a dead node's sessions to move.
pub const LEASE: &str = "2s";

/// Gateways sharing one fresh database.
pub struct Cluster {
    dir: tempfile::TempDir,
    /// The model of `openai:` sessions.
    pub mock: MockModel,
    /// The database URL.
    pub database: String,
    /// The gateways.
    pub nodes: Vec<Gateway>,
}

impl Cluster {
    /// `nodes` gateways on a fresh database; `None` (the test skips) without PostgreSQL.
    pub async fn start(nodes: usize, test: &str) -> Option<Cluster> {
        let database = postgres::database(&postgres::server(test)?);
        let dir = tempfile::tempdir().unwrap();
        let mock = MockModel::start().await;
        let mut cluster = Cluster { dir, mock, database, nodes: Vec::new() };
        for i in 0..nodes {
            let node = cluster.node(i);
            cluster.nodes.push(node);
        }
        Some(cluster)
    }

    /// Starts the `i`th gateway.
    pub fn node(&self, i: usize) -> Gateway {
        let env = [("AIRLOCK_DATABASE_URL", self.database.as_str()), ("AIRLOCK_LEASE", LEASE)];
        let unused = self.dir.path().join(format!("unused-{i}.db"));
        Gateway::start_with(&unused, &self.mock.base_url(), &env)
    }

    /// The node id the `i`th gateway made at its first start (kept beside its data file).
    pub fn node_id(&self, i: usize) -> String {
        let kept = self.dir.path().join(format!("unused-{i}.db.node-id"));
        std::fs::read_to_string(&kept).expect("a node id beside the data file").trim().to_owned()
    }

    /// `airlock serve` on the database with `args`, which must refuse to start (exit code 1):
    /// answers what it wrote to stderr.
    pub fn refused(&self, args: &[&str]) -> String {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let data =
            self.dir.path().join(format!("refused-{}.db", NEXT.fetch_add(1, Ordering::SeqCst)));
        let out = std::process::Command::new(crate::gateway::airlock_bin())
            .args(["serve", "--data"])
            .arg(&data)
            .args(args)
            .env("AIRLOCK_DATABASE_URL", &self.database)
            .env("AIRLOCK_LEASE", LEASE)
            .env("AIRLOCK_CACHE_DIR", crate::gateway::compiled_cache())
            .output()
            .expect("airlock runs");
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(1), "airlock serve {args:?} refuses: {stderr}");
        stderr
    }
}

/// Gateways on one database as a client reaches them, and what a test that kills one needs to
/// know: a [`Cluster`] of processes (the client picks among them) or the compose file's
/// containers behind its proxy (`crate::compose`).
pub trait Topology {
    /// A client of the whole topology, picking gateways in the sequence `seed` makes.
    fn client(&self, seed: u64) -> Client;

    /// The address of each gateway, as each advertises itself to the others.
    fn addresses(&self) -> Vec<String>;

    /// The address of the gateway that holds a session's lease.
    fn holder(&self, session: &str) -> String;

    /// `kill -9` of the gateway advertising `address`.
    fn kill_9(&mut self, address: &str);

    /// The URL of that gateway's `/metrics`.
    fn metrics_url(&self, address: &str) -> String;
}

impl Topology for Cluster {
    fn client(&self, seed: u64) -> Client {
        let bases = self.nodes.iter().map(|n| n.base.clone()).collect();
        Client::new(bases, seed)
    }

    fn addresses(&self) -> Vec<String> {
        self.nodes.iter().map(|n| n.base.clone()).collect()
    }

    fn holder(&self, session: &str) -> String {
        let rows = postgres::query(
            &self.database,
            &format!("SELECT address FROM leases WHERE session_id = '{session}'"),
        );
        rows.into_iter().next().unwrap_or_default()
    }

    fn kill_9(&mut self, address: &str) {
        let node = self.nodes.iter_mut().find(|n| n.base == address);
        node.unwrap_or_else(|| panic!("no gateway at {address}")).kill_9();
    }

    fn metrics_url(&self, address: &str) -> String {
        format!("{address}/metrics")
    }
}

/// A client of the whole cluster: each request goes to a node picked at random (a fixed
/// sequence per seed); a node that does not answer is passed over (as is a proxy's page saying
/// its gateway did not), and a 503, which must say when to come back, is retried then. Every other
/// answer is the caller's.
#[derive(Clone)]
pub struct Client {
    http: reqwest::Client,
    bases: Arc<Vec<String>>,
    state: u64,
    /// 503s seen, across clones.
    pub unavailable: Arc<AtomicUsize>,
}

impl Client {
    /// A client of the gateways at `bases`.
    pub fn new(bases: Vec<String>, seed: u64) -> Client {
        Client::with(crate::http_client().build().unwrap(), bases, seed)
    }

    /// A client of the gateways at `bases` sending `Authorization: Bearer <key>`.
    pub fn keyed(key: &str, bases: Vec<String>, seed: u64) -> Client {
        Client::with(crate::gateway::keyed_client(key), bases, seed)
    }

    fn with(http: reqwest::Client, bases: Vec<String>, seed: u64) -> Client {
        let unavailable = Arc::default();
        Client { http, bases: Arc::new(bases), state: 0, unavailable }.reseeded(seed)
    }

    /// The same cluster, another sequence of picks.
    pub fn reseeded(&self, seed: u64) -> Client {
        Client { state: seed.wrapping_mul(0x9E37_79B9) | 1, ..self.clone() }
    }

    /// The next number of this client's sequence (xorshift64: deterministic per seed).
    pub fn random(&mut self) -> usize {
        self.state ^= self.state << 13;
        self.state ^= self.state >> 7;
        self.state ^= self.state << 17;
        self.state as usize
    }

    /// A gateway at random.
    pub fn pick(&mut self) -> String {
        let i = self.random() % self.bases.len();
        self.bases[i].clone()
    }

    /// Sends the request `request` builds for a gateway until one answers, and answers that:
    /// a success (anything else fails the test).
    pub async fn call(
        &mut self,
        request: impl Fn(&reqwest::Client, &str) -> reqwest::RequestBuilder,
    ) -> reqwest::Response {
        loop {
            let base = self.pick();
            match request(&self.http, &base).send().await {
                Err(_) => tokio::task::yield_now().await, // that node is down: another one
                Ok(res) if proxy_lost_its_gateway(&res) => tokio::task::yield_now().await,
                Ok(res) if res.status() == 503 => {
                    let wait = res.headers().get("retry-after").map(|v| v.to_str().unwrap());
                    let wait: u64 = wait.expect("a 503 says when to retry").parse().unwrap();
                    self.unavailable.fetch_add(1, Ordering::SeqCst);
                    tokio::time::sleep(Duration::from_secs(wait)).await;
                }
                Ok(res) => {
                    let status = res.status();
                    assert!(status.is_success(), "{status}: {}", res.text().await.unwrap());
                    return res;
                }
            }
        }
    }

    /// `n` sessions created through this client, each followed from its start by its own
    /// client (the `seed`th sequence on).
    pub async fn followed_sessions(
        &self,
        n: usize,
        seed: u64,
    ) -> (Vec<String>, BTreeMap<String, Follower>) {
        let mut client = self.reseeded(seed);
        let mut sessions = Vec::with_capacity(n);
        for _ in 0..n {
            sessions.push(client.create(json!({})).await);
        }
        let followers = sessions
            .iter()
            .enumerate()
            .map(|(i, s)| {
                (s.clone(), Follower::start(self.reseeded(seed + 1 + i as u64), s.clone()))
            })
            .collect();
        (sessions, followers)
    }

    /// The value of a metric at `url` (a gateway's `/metrics`).
    pub async fn metric(&self, url: &str, name: &str) -> f64 {
        let text = self.http.get(url).send().await.unwrap().text().await.unwrap();
        crate::gateway::metric_in(&text, name)
    }

    /// Creates a session; answers its id.
    pub async fn create(&mut self, body: Value) -> String {
        let res =
            self.call(|http, base| http.post(format!("{base}/v1/sessions")).json(&body)).await;
        res.json::<Value>().await.unwrap()["sessionId"].as_str().unwrap().to_owned()
    }

    /// Sends a message under an idempotency key (a retry after a cut connection is the same
    /// message); answers the receipt.
    pub async fn send(&mut self, session: &str, key: &str, text: &str) -> Value {
        let url = |base: &str| format!("{base}/v1/sessions/{session}/messages");
        let res = self
            .call(|http, base| {
                http.post(url(base)).header("idempotency-key", key).json(&json!({"content": text}))
            })
            .await;
        assert_eq!(res.status(), 202);
        res.json().await.unwrap()
    }

    /// The whole log of a session.
    pub async fn log(&mut self, session: &str) -> Vec<Value> {
        let url = |base: &str| format!("{base}/v1/sessions/{session}/events/page?limit=5000");
        let res = self.call(|http, base| http.get(url(base))).await;
        res.json::<Value>().await.unwrap()["events"].as_array().unwrap().clone()
    }
}

/// A 502 or 504 page from a proxy (HTML, not a gateway's JSON error): the gateway it passed the
/// request to died or did not answer in time, as a cut connection would say. Sent again, under
/// its idempotency key where it has one.
fn proxy_lost_its_gateway(res: &reqwest::Response) -> bool {
    let html =
        res.headers().get("content-type").is_some_and(|t| t.as_bytes().starts_with(b"text/html"));
    matches!(res.status().as_u16(), 502 | 504) && html
}

/// What a follower of a session saw, over every connection it made.
#[derive(Default)]
pub struct Seen {
    /// The events, in seq order.
    pub events: Vec<Value>,
    /// The statuses, in the order they came.
    pub statuses: Vec<String>,
    /// How many streams it opened.
    pub connections: usize,
}

impl Seen {
    /// How many events of this type it saw.
    pub fn count(&self, kind: &str) -> usize {
        self.events.iter().filter(|e| e["type"] == kind).count()
    }
}

/// Follows a session's stream from its first event through any node, resuming with
/// `Last-Event-ID` wherever it is cut; checks that no seq is skipped or repeated.
pub struct Follower {
    /// What it saw.
    pub seen: Arc<Mutex<Seen>>,
    changed: watch::Receiver<()>,
    task: tokio::task::JoinHandle<()>,
}

impl Follower {
    /// Starts following `session`.
    pub fn start(mut client: Client, session: String) -> Follower {
        let seen = Arc::new(Mutex::new(Seen::default()));
        let (tx, changed) = watch::channel(());
        let shared = seen.clone();
        let task = tokio::spawn(async move {
            loop {
                let last = shared.lock().unwrap().events.len().checked_sub(1);
                let url = |base: &str| format!("{base}/v1/sessions/{session}/events");
                let res = client
                    .call(|http, base| {
                        let request = http.get(url(base));
                        match last {
                            Some(id) => request.header("last-event-id", id.to_string()),
                            None => request,
                        }
                    })
                    .await;
                shared.lock().unwrap().connections += 1;
                let url = res.url().to_string();
                let mut sse = Sse::of(res);
                loop {
                    let next = tokio::time::timeout(Duration::from_secs(30), sse.next_unless_cut());
                    let Some(frame) = next.await.unwrap_or_else(|_| {
                        let seen = shared.lock().unwrap().events.len();
                        panic!(
                            "{url} sent nothing for 30 s after event {seen} (a stream gone silent)"
                        )
                    }) else {
                        break;
                    };
                    let mut seen = shared.lock().unwrap();
                    match frame {
                        Frame::Event(seq, event) => {
                            assert_eq!(seq, seen.events.len() as u64, "no gap, no duplicate");
                            seen.events.push(event);
                        }
                        Frame::Status(status) => seen.statuses.push(status),
                        _ => {}
                    }
                    drop(seen);
                    tx.send_replace(());
                }
            }
        });
        Follower { seen, changed, task }
    }

    /// Waits until `turns` turns have ended and the session is idle again.
    pub async fn until_done(&mut self, turns: usize) {
        if turns == 0 {
            return;
        }
        let seen = self.seen.clone();
        let done = move || {
            let seen = seen.lock().unwrap();
            seen.count("turn/end") >= turns
                && seen.events.last().is_some_and(|e| e["type"] == "turn/end")
                && seen.statuses.last().is_some_and(|s| s == "idle")
        };
        while !done() {
            tokio::time::timeout(Duration::from_secs(60), self.changed.changed())
                .await
                .expect("the session settles within a minute")
                .unwrap();
        }
    }
}

impl Drop for Follower {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The receipts clients were given, per session (a retried send may repeat one).
pub type Receipts = Arc<Mutex<BTreeMap<String, Vec<Value>>>>;

/// `clients` clients like `client` each sending `sends` messages to sessions picked at random,
/// all at once; `batch` keeps their idempotency keys apart from another load's.
pub async fn load(
    client: &Client,
    sessions: &[String],
    clients: u64,
    sends: usize,
    batch: &str,
) -> Receipts {
    let receipts = Receipts::default();
    // Each batch picks its own sessions: a load run again in rounds reaches every session.
    let seed = batch.bytes().fold(100, |seed: u64, b| seed.wrapping_mul(31).wrapping_add(b.into()));
    let tasks = (0..clients).map(|c| {
        let (mut client, sessions) = (client.reseeded(seed + c), sessions.to_vec());
        let (receipts, batch) = (receipts.clone(), batch.to_owned());
        tokio::spawn(async move {
            for i in 0..sends {
                let session = &sessions[client.random() % sessions.len()];
                let key = format!("{batch}-c{c}-m{i}");
                let receipt = client.send(session, &key, &format!("client {c} message {i}")).await;
                receipts.lock().unwrap().entry(session.clone()).or_default().push(receipt);
            }
        })
    });
    for task in futures::future::join_all(tasks).await {
        task.unwrap();
    }
    receipts
}

/// Adds the receipts of `from` to `into`.
pub fn merge(into: &Receipts, from: &Receipts) {
    let mut into = into.lock().unwrap();
    for (session, list) in std::mem::take(&mut *from.lock().unwrap()) {
        into.entry(session).or_default().extend(list);
    }
}
