//! `deploy/compose.yaml` run as an operator runs it, by Docker's engine: PostgreSQL, three
//! gateways and nginx in front of them, each in its container, the clients reaching only the
//! proxy. Laid over it, `tests/compose/stand-ins.yaml` puts in the binary the tests built and
//! images of Debian's PostgreSQL and nginx (Docker Hub is out of this network's reach); the base
//! image they start from is made by `tests/compose/engine.sh`, which also starts the engine.
//!
//! `.ci/run` runs that script and sets `AIRLOCK_TEST_COMPOSE=1`; without it these tests say they
//! were skipped and pass.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use crate::cluster::{Client, Topology};

/// The compose file's gateways, as its services are named (each is also its node id).
const GATEWAYS: [&str; 3] = ["gateway-1", "gateway-2", "gateway-3"];

/// How long the gateways' containers may take to be healthy (the first check comes after the
/// file's 5 s interval; the first start compiles the core).
const HEALTHY_WITHIN: Duration = Duration::from_secs(120);

/// A compose project of `deploy/compose.yaml`, up; `down` (volumes and all) when dropped.
pub struct Compose {
    project: String,
    /// The admin key the project's `keys` service made.
    pub key: String,
    /// The proxy's URL, on a port of this host.
    pub proxy: String,
    /// The URL of the project's database, at its container's address.
    pub database: String,
}

impl Compose {
    /// The project of `test`, up with every gateway healthy; `None` (the test skips) unless
    /// `AIRLOCK_TEST_COMPOSE` is set.
    pub fn up(test: &str) -> Option<Compose> {
        if std::env::var_os("AIRLOCK_TEST_COMPOSE").is_none() {
            eprintln!(
                "skipped {test}: it needs Docker's engine. Run tests/compose/engine.sh and set \
                 AIRLOCK_TEST_COMPOSE=1 (as .ci/run does)"
            );
            return None;
        }
        build_gateway_image();
        let project = format!("airlock-test-{}", std::process::id());
        let mut compose =
            Compose { project, key: String::new(), proxy: String::new(), database: String::new() };
        compose.run(&["build", "postgres", "proxy"]);
        // As deploy/compose.yaml says to: a key first (the gateways listen off loopback, so they
        // refuse to start without one), then the whole file.
        compose.key = String::from_utf8(compose.run(&["run", "--rm", "keys"]).stdout)
            .expect("a key is text")
            .trim()
            .to_owned();
        let since = unix_seconds();
        compose.run(&["up", "-d"]);
        compose.until_gateways_healthy(since);
        let port = String::from_utf8(compose.run(&["port", "proxy", "80"]).stdout).unwrap();
        compose.proxy = format!("http://{}", port.trim());
        compose.database =
            format!("postgres://airlock:airlock@{}:5432/airlock", compose.address("postgres"));
        Some(compose)
    }

    /// `docker-compose` with the project's name and files; answers its output (it must succeed).
    fn run(&self, args: &[&str]) -> Output {
        let out = self.command(args).stderr(Stdio::piped()).output().expect("docker-compose runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "docker-compose {args:?} failed: {stderr}");
        out
    }

    fn command(&self, args: &[&str]) -> Command {
        let deploy = repository().join("deploy");
        let mut command = Command::new("docker-compose");
        command
            .current_dir(&deploy)
            .args(["--project-name", &self.project, "--file", "compose.yaml"])
            .args(["--file", "../tests/compose/stand-ins.yaml"])
            .args(args)
            // The proxy on a port of loopback that the engine picks, not the file's 8080.
            .env("AIRLOCK_PROXY_PORT", "127.0.0.1:0");
        command
    }

    /// Waits for the engine to report each gateway healthy (its `/readyz`, the file's check).
    fn until_gateways_healthy(&self, since: u64) {
        let until = since + HEALTHY_WITHIN.as_secs();
        let mut events = Command::new("docker")
            .args(["events", "--since", &since.to_string(), "--until", &until.to_string()])
            .args(["--filter", "type=container"])
            .args(["--filter", &format!("label=com.docker.compose.project={}", self.project)])
            .args([
                "--format",
                "{{.Status}}|{{index .Actor.Attributes \"com.docker.compose.service\"}}",
            ])
            .stdout(Stdio::piped())
            .spawn()
            .expect("docker events runs");
        let lines = std::io::BufRead::lines(std::io::BufReader::new(events.stdout.take().unwrap()));
        let mut waiting: Vec<&str> = GATEWAYS.to_vec();
        for line in lines {
            let line = line.expect("docker events writes lines");
            let (status, service) = line.rsplit_once('|').unwrap_or((&line, ""));
            if status == "die" && service != "keys" {
                panic!("{service} stopped before it was healthy:\n{}", self.logs(service));
            }
            if status == "health_status: healthy" {
                waiting.retain(|s| *s != service);
            }
            if waiting.is_empty() {
                break;
            }
        }
        events.kill().ok();
        events.wait().ok();
        assert!(waiting.is_empty(), "{waiting:?} not healthy within {HEALTHY_WITHIN:?}");
    }

    /// The container of a service.
    fn container(&self, service: &str) -> String {
        let id = String::from_utf8(self.run(&["ps", "-q", service]).stdout).unwrap();
        assert!(!id.trim().is_empty(), "{service} has no container");
        id.trim().to_owned()
    }

    /// The address of a service's container on the project's network (which this host reaches).
    pub fn address(&self, service: &str) -> String {
        let format = "{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}";
        docker(&["inspect", "--format", format, &self.container(service)]).trim().to_owned()
    }

    /// The last lines a service wrote.
    pub fn logs(&self, service: &str) -> String {
        let out = self.command(&["logs", "--no-color", "--tail", "40", service]).output();
        out.map(|o| String::from_utf8_lossy(&o.stdout).into_owned()).unwrap_or_default()
    }
}

impl Topology for Compose {
    fn client(&self, seed: u64) -> Client {
        Client::keyed(&self.key, vec![self.proxy.clone()], seed)
    }

    fn addresses(&self) -> Vec<String> {
        GATEWAYS.iter().map(|g| format!("http://{g}:7700")).collect()
    }

    fn holder(&self, session: &str) -> String {
        let sql = format!("SELECT address FROM leases WHERE session_id = '{session}'");
        crate::postgres::query(&self.database, &sql).into_iter().next().unwrap_or_default()
    }

    fn kill_9(&mut self, address: &str) {
        docker(&["kill", "--signal", "KILL", &self.container(service_of(address))]);
    }

    fn metrics_url(&self, address: &str) -> String {
        format!("http://{}:7700/metrics", self.address(service_of(address)))
    }
}

impl Drop for Compose {
    fn drop(&mut self) {
        if std::thread::panicking() {
            for service in GATEWAYS.iter().chain(&["proxy"]) {
                eprintln!("{}", self.logs(service));
            }
        }
        let mut down = self.command(&["down", "--volumes", "--remove-orphans", "--timeout", "1"]);
        let _ = down.stdout(Stdio::null()).stderr(Stdio::null()).status();
    }
}

/// The service of the gateway advertising `address` (`http://gateway-2:7700`).
fn service_of(address: &str) -> &str {
    let host = address.trim_start_matches("http://").split(':').next().unwrap_or_default();
    GATEWAYS.iter().find(|g| **g == host).unwrap_or_else(|| panic!("no gateway at {address}"))
}

/// Tags `airlock-test/airlock`: `deploy/Dockerfile`'s `runtime` stage, then its final stage with
/// what that copies from the `build` stage taken from this checkout instead, the binary being the
/// one the tests built (the `build` stage compiles one from the sources, a release build of many
/// minutes, which also builds the plugins this checkout has built already).
fn build_gateway_image() {
    let root = repository();
    let dockerfile = root.join("deploy/Dockerfile");
    let runtime = ["--target", "runtime", "--tag", "airlock-test/runtime", root.to_str().unwrap()];
    docker(&[&["build", "--quiet", "--file", dockerfile.to_str().unwrap()][..], &runtime].concat());
    let context = tempfile::tempdir().unwrap();
    let mut image = String::from("FROM airlock-test/runtime\n");
    let shipped = std::fs::read_to_string(&dockerfile).unwrap();
    let last_stage = shipped.rsplit("\nFROM ").next().unwrap();
    for line in last_stage.lines().filter_map(|line| line.strip_prefix("COPY --from=build ")) {
        let mut words: Vec<&str> = line.split_whitespace().collect();
        let destination = words.pop().expect("a COPY names where to");
        for source in words {
            let path = source.strip_prefix("/src/").expect("the build stage works in /src");
            let from = match path {
                "target/release/airlock" => crate::gateway::airlock_bin(),
                path => root.join(path),
            };
            let to = context.path().join(path);
            std::fs::create_dir_all(to.parent().unwrap()).unwrap();
            std::fs::hard_link(&from, &to)
                .or_else(|_| std::fs::copy(&from, &to).map(drop))
                .unwrap_or_else(|e| panic!("{} goes into the image: {e}", from.display()));
            image.push_str(&format!("COPY {path} {destination}\n"));
        }
    }
    std::fs::write(context.path().join("Dockerfile"), image).unwrap();
    let tag = ["build", "--quiet", "--tag", "airlock-test/airlock"];
    docker(&[&tag[..], &[context.path().to_str().unwrap()]].concat());
}

/// `docker ARGS`; answers its stdout (it must succeed).
fn docker(args: &[&str]) -> String {
    let out = Command::new("docker").args(args).output().expect("docker runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "docker {args:?} failed: {stderr}");
    String::from_utf8(out.stdout).unwrap()
}

/// The repository's root.
fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_owned()
}

/// Now, in seconds since the epoch (what `docker events --since` takes).
fn unix_seconds() -> u64 {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    now.map(|d| d.as_secs()).unwrap_or_default()
}
