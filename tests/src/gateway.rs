//! The real `airlock serve` process for end-to-end tests: port 0, a temp SQLite file, the mock
//! model over HTTP, `kill -9` and restart on the same file. An SSE reader waits for frames; no
//! test sleeps to wait for something.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

pub use crate::sse::{Frame, Sse, seqs, types};

/// The `airlock` binary of this build's profile (`target/<profile>/airlock`), for tests (which
/// run from `target/<profile>/deps`) and the benchmarks (from `target/release`).
///
/// `cargo test --workspace` builds it with everything else. Only when it is missing or older than
/// a source it was built from (a lone `cargo test -p airlock-tests` after an edit, or the
/// benchmarks) is it built here: always building would rebuild it with this package's feature
/// set on every run.
pub fn airlock_bin() -> PathBuf {
    static BIN: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BIN.get_or_init(|| {
        let profile_dir = profile_dir();
        let bin = profile_dir.join(format!("airlock{}", std::env::consts::EXE_SUFFIX));
        if stale(&bin) {
            let mut build = Command::new(env!("CARGO"));
            build.args(["build", "--quiet", "-p", "airlock-gateway", "--bin", "airlock"]);
            if profile_dir.file_name().is_some_and(|p| p == "release") {
                build.arg("--release");
            }
            let status = build.status().expect("cargo runs");
            assert!(status.success(), "building the airlock binary failed");
        }
        bin
    })
    .clone()
}

/// Where every gateway of a test run keeps its compiled machine code (`--cache-dir`):
/// `target/<profile>/airlock-cache`. Compiling the core takes a CPU-second or two and a file there
/// is never changed, only replaced whole, so the tests share it rather than compile per test; a
/// test of the cache itself gives its own.
pub fn compiled_cache() -> PathBuf {
    profile_dir().join("airlock-cache")
}

/// `target/<profile>`: where this executable is (tests run from its `deps`).
fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the process knows its path");
    let dir = exe.parent().expect("an executable is in a directory");
    match dir.file_name() {
        Some(name) if name == "deps" => dir.parent().expect("deps is in target/<profile>").into(),
        _ => dir.into(),
    }
}

/// A client that sends `Authorization: Bearer <key>` with every request.
pub fn keyed_client(key: &str) -> reqwest::Client {
    let mut headers = reqwest::header::HeaderMap::new();
    let bearer = format!("Bearer {key}").parse().expect("a key is a header value");
    headers.insert(reqwest::header::AUTHORIZATION, bearer);
    crate::http_client().default_headers(headers).build().expect("an HTTP client")
}

/// The value of the metric `name` (with its labels, if any) in a `/metrics` answer (Prometheus
/// text: `name value`).
pub fn metric_in(text: &str, name: &str) -> f64 {
    let value = text.lines().find_map(|line| {
        line.strip_prefix(name)?.strip_prefix(' ').and_then(|v| v.trim().parse().ok())
    });
    value.unwrap_or_else(|| panic!("no metric {name} in:\n{text}"))
}

/// Runs `airlock keys ARGS --data DATA` and answers its stdout, trimmed: a new key, or the list.
pub fn keys(data: &Path, args: &[&str]) -> String {
    let out = Command::new(airlock_bin())
        .arg("keys")
        .args(args)
        .arg("--data")
        .arg(data)
        .env_remove("AIRLOCK_DATA")
        .envs(shared_store(data).map(|url| ("AIRLOCK_DATABASE_URL", url)))
        .output()
        .expect("airlock runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "airlock keys {args:?}: {stderr}");
    String::from_utf8(out.stdout).expect("stdout is text").trim().to_owned()
}

/// With `AIRLOCK_TEST_STORE=postgres`, the tests' gateways keep everything in PostgreSQL
/// instead of their data files: one fresh database per data file (so a restart on the same file
/// finds its sessions), on the server [`crate::postgres::server`] names. Answers its URL.
pub fn shared_store(data: &Path) -> Option<String> {
    static DATABASES: std::sync::Mutex<Vec<(PathBuf, String)>> = std::sync::Mutex::new(Vec::new());
    // A test of an in-memory store means one.
    if std::env::var("AIRLOCK_TEST_STORE").ok()? != "postgres" || data == Path::new(":memory:") {
        return None;
    }
    let server = crate::postgres::server("this test on PostgreSQL")
        .expect("AIRLOCK_TEST_STORE=postgres needs AIRLOCK_TEST_POSTGRES");
    let mut databases = DATABASES.lock().unwrap();
    if let Some((_, url)) = databases.iter().find(|(file, _)| file == data) {
        return Some(url.clone());
    }
    let url = crate::postgres::database(&server);
    databases.push((data.to_owned(), url.clone()));
    Some(url)
}

/// Whether `bin` is missing, or older than one of the sources it was built from. Those are what
/// cargo's dep-info beside it (`airlock.d`) lists: exactly the files compiled or embedded into
/// it, and the folders its build scripts watch. `cargo build` writes that file and `cargo test`
/// does not, so without it (a clean checkout's test run) they are the folders of the sources the
/// binary may be built from.
fn stale(bin: &Path) -> bool {
    let Ok(built) = std::fs::metadata(bin).and_then(|m| m.modified()) else { return true };
    let sources: Vec<PathBuf> = match std::fs::read_to_string(bin.with_extension("d")) {
        // `target: source source …`, a space inside a path written `\ `.
        Ok(deps) => deps
            .lines()
            .filter_map(|line| line.split_once(": "))
            .flat_map(|(_, paths)| {
                let paths = paths.replace("\\ ", "\0");
                let paths = paths.split_whitespace().map(|p| PathBuf::from(p.replace('\0', " ")));
                paths.collect::<Vec<_>>()
            })
            .collect(),
        Err(_) => {
            let workspace =
                Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("tests/ is in the workspace");
            let folders = ["gateway/src", "crates", "core-wasm/src", "wit", "web-demo"];
            folders.into_iter().map(|folder| workspace.join(folder)).collect()
        }
    };
    sources.iter().any(|source| newer_than(source, built))
}

/// Whether `path`, or any file under it, was modified after `time`.
fn newer_than(path: &Path, time: std::time::SystemTime) -> bool {
    if path.is_file() {
        return std::fs::metadata(path).and_then(|m| m.modified()).is_ok_and(|m| m > time);
    }
    let Ok(entries) = std::fs::read_dir(path) else { return false };
    entries.flatten().any(|entry| {
        let path = entry.path();
        if path.is_dir() {
            // npm's installs sit beside the page's files; none of them is built in.
            return entry.file_name() != "node_modules" && newer_than(&path, time);
        }
        entry.metadata().and_then(|m| m.modified()).is_ok_and(|modified| modified > time)
    })
}

/// A running `airlock serve`; dropping it kills the process.
pub struct Gateway {
    child: Child,
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    /// A client for it.
    pub client: reqwest::Client,
    data: PathBuf,
    model_url: String,
    env: Vec<(String, String)>,
    /// What it wrote to stderr.
    logged: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    drain: Option<std::thread::JoinHandle<()>>,
}

/// The address a "listening" line names: `airlock: listening on URL`, or with
/// `--log-format json` an object whose `message` is `listening` and whose `address` is URL.
fn listening(line: &str) -> Option<String> {
    if let Some(url) = line.strip_prefix("airlock: listening on ") {
        return Some(url.trim().to_owned());
    }
    let event: Value = serde_json::from_str(line).ok()?;
    (event["message"] == "listening").then(|| event["address"].as_str().map(str::to_owned))?
}

impl Gateway {
    /// Starts `airlock serve` on `data`, its `openai:` sessions answered by the mock at `model_url`.
    pub fn start(data: &Path, model_url: &str) -> Gateway {
        Self::start_with(data, model_url, &[])
    }

    /// [`Gateway::start`] with more environment (e.g. `AIRLOCK_STALL_TIMEOUT_MS`).
    pub fn start_with(data: &Path, model_url: &str, env: &[(&str, &str)]) -> Gateway {
        Self::launch(data, model_url, env, "127.0.0.1:0")
    }

    /// A gateway as `airlock serve` starts with nothing set: the demo model alone, no provider
    /// key or base URL, no plugins (what `/openapi.json` says of a plain gateway).
    pub fn start_plain(data: &Path) -> Gateway {
        Self::launch(data, "", &[], "127.0.0.1:0")
    }

    /// [`Gateway::start_with`], answering as soon as it listens: before it has brought back the
    /// sessions stored at start (`/readyz` says when it has).
    pub fn start_listening(data: &Path, model_url: &str, env: &[(&str, &str)]) -> Gateway {
        Self::launch_as(data, model_url, env, "127.0.0.1:0", false)
    }

    fn launch(data: &Path, model_url: &str, env: &[(&str, &str)], listen: &str) -> Gateway {
        Self::launch_as(data, model_url, env, listen, true)
    }

    fn launch_as(
        data: &Path,
        model_url: &str,
        env: &[(&str, &str)],
        listen: &str,
        wait_recovered: bool,
    ) -> Gateway {
        // A quieter level would hide the lines waited for below, and the wait would never end.
        let level = env.iter().find(|(k, _)| *k == "AIRLOCK_LOG").map_or("info", |(_, v)| v);
        assert!(
            matches!(level, "info" | "debug" | "trace"),
            "AIRLOCK_LOG={level} hides the info lines the harness waits for (where it listens, \
             that its sessions recovered): leave AIRLOCK_LOG out or make it info or louder"
        );
        let mut command = Command::new(airlock_bin());
        if model_url.is_empty() {
            // A plain gateway: no provider reachable from what this process inherited either.
            let providers = ["AIRLOCK_", "OPENAI_", "DEEPSEEK_", "ANTHROPIC_"];
            for (name, _) in std::env::vars() {
                if providers.iter().any(|p| name.starts_with(p)) {
                    command.env_remove(name);
                }
            }
        } else {
            command.env("AIRLOCK_BASE_URL", model_url);
        }
        let mut child = command
            .args(["serve", "--listen", listen, "--durability", "full", "--data"])
            .arg(data)
            .env("AIRLOCK_CACHE_DIR", compiled_cache())
            .env_remove("AIRLOCK_MODEL")
            // The harness reads "sessions recovered" from the log.
            .env("AIRLOCK_LOG", "info")
            .envs(shared_store(data).map(|url| ("AIRLOCK_DATABASE_URL", url)))
            .envs(env.iter().copied()) // the caller's environment wins
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("airlock starts");
        let stderr = child.stderr.take().expect("stderr is piped");
        let mut lines = BufReader::new(stderr).lines();
        let logged = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        // It listens at once and brings its stored sessions back in the background: a test
        // starts once both are done (unless it watches the recovery itself).
        let (mut base, mut recovered) = (None, !wait_recovered);
        while base.is_none() || !recovered {
            let line = lines.next().expect("airlock says where it listens and that it recovered");
            let line = line.expect("stderr is text");
            logged.lock().unwrap().push(line.clone());
            base = base.or_else(|| listening(&line));
            recovered |= line.contains("sessions recovered");
        }
        let base = base.expect("the loop ends once it listens");
        // Keep draining stderr so the gateway never blocks on a full pipe.
        let keep = logged.clone();
        let drain = std::thread::spawn(move || {
            lines.map_while(Result::ok).for_each(|line| keep.lock().unwrap().push(line))
        });
        Gateway {
            child,
            base,
            client: crate::http_client().build().expect("an HTTP client"),
            data: data.to_owned(),
            model_url: model_url.to_owned(),
            env: env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            logged,
            drain: Some(drain),
        }
    }

    /// SIGTERM, as a service manager stops it; answers once the process has exited and its
    /// whole log is read.
    pub fn terminate(&mut self) -> std::process::ExitStatus {
        let pid = self.child.id().to_string();
        let sent = Command::new("kill").args(["-TERM", &pid]).status().expect("kill runs");
        assert!(sent.success(), "SIGTERM to {pid}");
        let status = self.child.wait().expect("the process is reaped");
        if let Some(drain) = self.drain.take() {
            drain.join().expect("the stderr reader ends with the process");
        }
        status
    }

    /// Every line the gateway wrote to stderr so far.
    pub fn log_lines(&self) -> Vec<String> {
        self.logged.lock().unwrap().clone()
    }

    /// `kill -9`, then a new process on the same file.
    pub fn crash_and_restart(self) -> Gateway {
        let model_url = self.model_url.clone();
        self.crash_and_restart_on(&model_url)
    }

    /// `kill -9`, then a new process on the same file whose `openai:` sessions go to
    /// `model_url`.
    pub fn crash_and_restart_on(mut self, model_url: &str) -> Gateway {
        self.child.kill().expect("SIGKILL");
        self.child.wait().expect("the process is reaped");
        let env: Vec<(&str, &str)> =
            self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        // On PostgreSQL a gateway is known by its node id, kept beside its data file: restarted,
        // it takes its sessions back at once; it keeps its address, which it still holds.
        let listen = match shared_store(&self.data) {
            Some(_) => self.base.trim_start_matches("http://").to_owned(),
            None => "127.0.0.1:0".to_owned(),
        };
        Gateway::launch(&self.data, model_url, &env, &listen)
    }

    /// `kill -9`, then a new process on the same file and the same port (a browser page keeps
    /// its URL).
    pub fn crash_and_restart_in_place(mut self) -> Gateway {
        self.child.kill().expect("SIGKILL");
        self.child.wait().expect("the process is reaped");
        let env: Vec<(&str, &str)> =
            self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let listen = self.base.trim_start_matches("http://").to_owned();
        Gateway::launch(&self.data, &self.model_url, &env, &listen)
    }

    /// SIGTERM, then a new process on the same file (or database) and the same port: a rolling
    /// restart's step.
    pub fn restart_in_place(mut self) -> Gateway {
        self.terminate();
        let env: Vec<(&str, &str)> =
            self.env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let listen = self.base.trim_start_matches("http://").to_owned();
        Gateway::launch(&self.data, &self.model_url, &env, &listen)
    }

    /// `kill -9`: the process is gone at once, its sockets closed.
    pub fn kill_9(&mut self) {
        self.child.kill().expect("SIGKILL");
        self.child.wait().expect("the process is reaped");
    }

    /// Sends a signal (`STOP`, `CONT`, ...) to the process.
    pub fn signal(&self, signal: &str) {
        let pid = self.child.id().to_string();
        let sent = Command::new("kill").args([&format!("-{signal}"), &pid]).status();
        assert!(sent.expect("kill runs").success(), "SIG{signal} to {pid}");
    }

    /// The same gateway, its [`Gateway::client`] sending `Authorization: Bearer <key>`.
    pub fn with_key(mut self, key: &str) -> Gateway {
        self.client = keyed_client(key);
        self
    }

    /// The process id (to read its memory in `/proc`).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// `url` under the gateway.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// A session whose model is the mock.
    pub async fn session(&self) -> String {
        let res = self
            .client
            .post(self.url("/v1/sessions"))
            .json(&json!({"model": "openai:mock"}))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 201);
        res.json::<Value>().await.unwrap()["sessionId"].as_str().unwrap().to_owned()
    }

    /// POST JSON → (status, body).
    pub async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        let res = self.client.post(self.url(path)).json(&body).send().await.unwrap();
        (res.status().as_u16(), res.json().await.unwrap_or(Value::Null))
    }

    /// PUT JSON → (status, body).
    pub async fn put(&self, path: &str, body: Value) -> (u16, Value) {
        let res = self.client.put(self.url(path)).json(&body).send().await.unwrap();
        (res.status().as_u16(), res.json().await.unwrap_or(Value::Null))
    }

    /// PATCH JSON → (status, body).
    pub async fn patch(&self, path: &str, body: Value) -> (u16, Value) {
        let res = self.client.patch(self.url(path)).json(&body).send().await.unwrap();
        (res.status().as_u16(), res.json().await.unwrap_or(Value::Null))
    }

    /// GET → (status, body).
    pub async fn get(&self, path: &str) -> (u16, Value) {
        let res = self.client.get(self.url(path)).send().await.unwrap();
        (res.status().as_u16(), res.json().await.unwrap_or(Value::Null))
    }

    /// The whole log of a session.
    pub async fn log(&self, session: &str) -> Vec<Value> {
        let (status, page) =
            self.get(&format!("/v1/sessions/{session}/events?format=json&limit=5000")).await;
        assert_eq!(status, 200);
        page["events"].as_array().unwrap().clone()
    }

    /// The value of a metric of `/metrics` (Prometheus text: `name value`).
    pub async fn metric(&self, name: &str) -> f64 {
        let res = self.client.get(self.url("/metrics")).send().await.unwrap();
        metric_in(&res.text().await.unwrap(), name)
    }

    /// Waits until a metric satisfies `holds` (it changes in the gateway's own time: an
    /// eviction is not announced to clients, so this polls `/metrics`, for at most 30 s).
    pub async fn until_metric(&self, name: &str, holds: impl Fn(f64) -> bool) -> f64 {
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        loop {
            let value = self.metric(name).await;
            if holds(value) {
                return value;
            }
            assert!(std::time::Instant::now() < deadline, "{name} stayed at {value}");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// Reads `path` (a JSON answer, 200) until it satisfies `holds`, for at most a minute: for
    /// what the gateway does in its own time and no stream announces (a schedule's firing, how a
    /// webhook delivery went).
    pub async fn until(&self, path: &str, holds: impl Fn(&Value) -> bool) -> Value {
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        loop {
            let (code, value) = self.get(path).await;
            assert_eq!(code, 200, "{path}: {value}");
            if holds(&value) {
                return value;
            }
            assert!(std::time::Instant::now() < deadline, "{path} stayed at {value}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// The SSE stream of a session with a query string (e.g. `?after=7`).
    pub async fn sse_query(&self, session: &str, query: &str) -> Sse {
        let res = self
            .client
            .get(self.url(&format!("/v1/sessions/{session}/events{query}")))
            .send()
            .await
            .unwrap();
        Sse::of(res)
    }

    /// POST JSON whose answer is an SSE stream (e.g. `…/runs?stream=true`).
    pub async fn post_sse(&self, path: &str, body: Value) -> Sse {
        let res = self.client.post(self.url(path)).json(&body).send().await.unwrap();
        Sse::of(res)
    }

    /// The SSE stream of a session, resumed after `last_event_id` if given.
    pub async fn sse(&self, session: &str, last_event_id: Option<u64>) -> Sse {
        let mut req = self.client.get(self.url(&format!("/v1/sessions/{session}/events")));
        if let Some(id) = last_event_id {
            req = req.header("last-event-id", id.to_string());
        }
        let res = req.send().await.unwrap();
        Sse::of(res)
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
