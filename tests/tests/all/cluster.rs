//! Several `airlock serve` processes on one PostgreSQL database (`docs/deploy.md`), reached the
//! way a load balancer reaches them (`airlock_tests::cluster`). Then what a deployment lives
//! through: `kill -9`, a stalled process, a rolling restart.
//!
//! Each test needs PostgreSQL (`AIRLOCK_TEST_POSTGRES`, see `airlock_tests::postgres`): ignored by
//! a plain `cargo test`, and with `--ignored` it says it was skipped without a server, except in
//! CI (`AIRLOCK_REQUIRE_POSTGRES`), where it fails.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use airlock_tests::Reply;
use airlock_tests::cluster::{Client, Cluster, Follower, Receipts, Topology, load, merge};
use airlock_tests::gateway::{Frame, Sse};
use serde_json::{Value, json};

/// Checks a session's log against the receipts its clients got: seqs without a gap; every
/// acknowledged message inserted once; messages entered turns in receipt order, one turn each;
/// every turn ended. Answers how many messages it had.
fn check(log: &[Value], receipts: &[Value]) -> usize {
    let seqs: Vec<u64> = log.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, (0..seqs.len() as u64).collect::<Vec<_>>(), "the log has no gap");
    let mut by_seq: BTreeMap<u64, &str> = BTreeMap::new();
    for receipt in receipts {
        let id = receipt["messageId"].as_str().unwrap();
        let previous = by_seq.insert(receipt["seq"].as_u64().unwrap(), id);
        assert!(previous.is_none_or(|p| p == id), "one receipt per splice seq");
    }
    let acknowledged: Vec<&str> = by_seq.values().copied().collect();
    let inserted = airlock_tests::inserted_ids(log);
    for id in &acknowledged {
        let times = inserted.iter().filter(|i| *i == id).count();
        assert_eq!(times, 1, "acknowledged message {id} is in the log once");
    }
    let entered: Vec<&str> = log
        .iter()
        .filter(|e| e["type"] == "user/message")
        .filter_map(|e| e["data"]["id"].as_str())
        .collect();
    assert_eq!(entered, acknowledged, "one turn per message, in receipt order");
    let count = |kind: &str| log.iter().filter(|e| e["type"] == kind).count();
    assert_eq!(count("turn/start"), acknowledged.len(), "one turn per send");
    assert_eq!(count("turn/end"), acknowledged.len(), "every turn ended");
    acknowledged.len()
}

/// Waits for every session to settle, then checks its log and what its follower saw.
async fn settle_and_check(
    topology: &impl Topology,
    followers: &mut BTreeMap<String, Follower>,
    receipts: &Receipts,
) -> usize {
    let receipts = receipts.lock().unwrap().clone();
    let mut client = topology.client(7);
    let mut total = 0;
    for (session, follower) in followers.iter_mut() {
        let mine = receipts.get(session).cloned().unwrap_or_default();
        let unique: HashSet<&str> = mine.iter().map(|r| r["messageId"].as_str().unwrap()).collect();
        follower.until_done(unique.len()).await;
        let log = client.log(session).await;
        total += check(&log, &mine);
        let seen = follower.seen.lock().unwrap();
        assert_eq!(seen.events, log, "the follower saw exactly the log");
    }
    total
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs PostgreSQL (AIRLOCK_TEST_POSTGRES); .ci/run starts one"]
async fn three_gateways_take_eight_clients_posting_to_fifty_sessions_through_any_of_them() {
    let test = "three_gateways_take_eight_clients_posting_to_fifty_sessions_through_any_of_them";
    let Some(cluster) = Cluster::start(3, test).await else { return };
    let client = cluster.client(1);
    let (sessions, mut followers) = client.followed_sessions(50, 1000).await;
    let receipts = load(&client, &sessions, 8, 25, "load").await;
    let total = settle_and_check(&cluster, &mut followers, &receipts).await;
    assert_eq!(total, 8 * 25, "every send was acknowledged once");
    for (session, follower) in &followers {
        let seen = follower.seen.lock().unwrap();
        assert_eq!(seen.connections, 1, "{session}: nothing cut its stream");
        let repeated = seen.statuses.windows(2).any(|pair| pair[0] == pair[1]);
        assert!(!repeated, "{session}: one running and one idle per burst: {:?}", seen.statuses);
    }
    let holders: HashSet<String> = sessions.iter().map(|s| cluster.holder(s)).collect();
    assert!(holders.len() > 1, "the sessions ran on more than one gateway: {holders:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs PostgreSQL (AIRLOCK_TEST_POSTGRES); .ci/run starts one"]
async fn kill_9_of_one_gateway_under_load_moves_its_sessions_and_loses_no_acknowledged_input() {
    let test =
        "kill_9_of_one_gateway_under_load_moves_its_sessions_and_loses_no_acknowledged_input";
    let Some(mut cluster) = Cluster::start(3, test).await else { return };
    kill_9_under_load(&mut cluster).await;
}

/// The kill -9 test, on gateways however they are reached: clients post to twelve followed
/// sessions; the gateway holding the most is killed mid-load; its sessions take input again
/// elsewhere, every acknowledged send is in its log once, every follower saw exactly the log, and
/// the survivors' metrics count the takeovers and the requests they forwarded.
pub(crate) async fn kill_9_under_load(topology: &mut impl Topology) {
    let client = topology.client(2);
    let (sessions, mut followers) = client.followed_sessions(12, 2000).await;
    // The victim is the gateway holding the most sessions.
    let mut held: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for session in &sessions {
        held.entry(topology.holder(session)).or_default().push(session.clone());
    }
    let (victim, moved) = held.into_iter().max_by_key(|(_, s)| s.len()).unwrap();

    let receipts = load(&client, &sessions, 4, 10, "before").await;
    topology.kill_9(&victim);
    let killed = std::time::Instant::now();
    let mut probe = client.reseeded(3);
    let resumed = async {
        // A session of the dead gateway takes input again once another gateway has it.
        let receipt = probe.send(&moved[0], "probe", "are you there?").await;
        eprintln!("a session of the killed gateway took input again after {:?}", killed.elapsed());
        receipt
    };
    let (after, probed) = tokio::join!(load(&client, &sessions, 4, 10, "after"), resumed);
    merge(&receipts, &after);
    receipts.lock().unwrap().entry(moved[0].clone()).or_default().push(probed);

    let total = settle_and_check(topology, &mut followers, &receipts).await;
    assert_eq!(total, 4 * 10 * 2 + 1, "every acknowledged send is in a log once");
    for session in &moved {
        assert_ne!(topology.holder(session), victim, "{session} moved off the dead gateway");
    }
    // The survivors' metrics say so: each moved session was taken over from the dead gateway, and
    // requests reached the gateways that run their sessions through the others.
    let (mut takeovers, mut forwarded, mut held) = (0.0, 0.0, 0.0);
    for node in topology.addresses().into_iter().filter(|a| *a != victim) {
        let metrics = topology.metrics_url(&node);
        takeovers += client.metric(&metrics, "airlock_lease_takeovers_total").await;
        let answered = "airlock_forwarded_requests_total{outcome=\"answered\"}";
        forwarded += client.metric(&metrics, answered).await;
        held += client.metric(&metrics, "airlock_leases_held").await;
        eprintln!("{node}: {takeovers} takeovers, {forwarded} forwarded, {held} held so far");
    }
    assert!(takeovers >= moved.len() as f64, "{takeovers} takeovers of {} moved", moved.len());
    assert!(forwarded > 0.0, "requests were forwarded");
    assert!(held >= moved.len() as f64, "the survivors hold the moved sessions: {held}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs PostgreSQL (AIRLOCK_TEST_POSTGRES); .ci/run starts one"]
async fn a_gateway_paused_past_its_lease_never_appends_again_and_lets_the_session_go() {
    let test = "a_gateway_paused_past_its_lease_never_appends_again_and_lets_the_session_go";
    let Some(cluster) = Cluster::start(2, test).await else { return };
    let (a, b) = (&cluster.nodes[0], &cluster.nodes[1]);
    let gate = Arc::new(tokio::sync::Notify::new());
    cluster.mock.push(Reply::text("Held on the paused gateway.", 3).hold_until(gate.clone()));
    cluster.mock.push(Reply::text("Answered after the move.", 2));
    cluster.mock.push(Reply::text("And once more.", 2));
    let s = a.session().await;
    let mut sse = a.sse(&s, None).await;
    let (code, _) = a.post(&format!("/v1/sessions/{s}/messages"), json!({"content": "one"})).await;
    assert_eq!(code, 202);
    sse.until(|f| matches!(f, Frame::Event(_, e) if e["type"] == "assistant/chunk")).await;

    a.signal("STOP");
    let stopped = std::time::Instant::now();
    // Through the other gateway only: it forwards to the paused one until its lease runs out,
    // then takes the session, closes the open turn and runs this message.
    let mut via_b = Client::new(vec![b.base.clone()], 5);
    let two = via_b.send(&s, "two", "two").await;
    // The request that waited for the paused gateway is told to come back at once
    // (`Retry-After: 0`) when its lease runs out: the session takes input within two leases.
    let lease = airlock_tests::cluster::LEASE.trim_end_matches('s').parse::<u64>().unwrap();
    let took = stopped.elapsed();
    assert!(took < std::time::Duration::from_secs(2 * lease), "input taken after {took:?}");
    a.signal("CONT");
    gate.notify_one(); // the paused gateway's model stream goes on: its append must fail

    // The paused gateway forwards to the new owner once it let go (until then it answers 503).
    let mut via_a = Client::new(vec![a.base.clone()], 6);
    let three = via_a.send(&s, "three", "three").await;
    let mut follower = Follower::start(via_b.clone(), s.clone());
    follower.until_done(3).await;
    let log = via_b.log(&s).await;
    let ends: Vec<&str> = log
        .iter()
        .filter(|e| e["type"] == "turn/end")
        .map(|e| e["data"]["reason"]["kind"].as_str().unwrap())
        .collect();
    assert_eq!(ends, ["interrupted", "completed", "completed"], "{log:#?}");
    let chunks_of_first = log
        .iter()
        .take_while(|e| e["type"] != "turn/end")
        .filter(|e| e["type"] == "assistant/chunk")
        .count();
    assert_eq!(chunks_of_first, 1, "nothing the paused gateway streamed after it lost the lease");
    let one = airlock_tests::inserted_ids(&log)[0];
    check(&log, &[json!({"messageId": one, "seq": 0}), two, three]);
    let lines = a.log_lines();
    assert!(
        lines
            .iter()
            .any(|l| l.contains("lost the session's lease")
                || l.contains("took this session's lease")),
        "the paused gateway says it let go: {lines:#?}"
    );
    assert_eq!(cluster.holder(&s), b.base);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs PostgreSQL (AIRLOCK_TEST_POSTGRES); .ci/run starts one"]
async fn a_rolling_restart_of_all_three_gateways_loses_nothing_and_answers_only_2xx_or_retryable_503()
 {
    let test = "a_rolling_restart_of_all_three_gateways_loses_nothing_and_answers_only_2xx_or_retryable_503";
    let Some(mut cluster) = Cluster::start(3, test).await else { return };
    let client = cluster.client(8);
    let (sessions, mut followers) = client.followed_sessions(10, 3000).await;
    // Load while every gateway is restarted in turn. `Client::call` fails the test on any
    // answer but 2xx or a 503 with Retry-After.
    let nodes = std::mem::take(&mut cluster.nodes);
    let restarting = std::sync::atomic::AtomicBool::new(true);
    let restarts = async {
        let mut restarted = Vec::new();
        for node in nodes {
            let node = tokio::task::spawn_blocking(move || node.restart_in_place()).await.unwrap();
            restarted.push(node);
        }
        restarting.store(false, Ordering::SeqCst);
        restarted
    };
    let loads = async {
        let receipts = Receipts::default();
        let mut rounds = 0;
        while rounds == 0 || restarting.load(Ordering::SeqCst) {
            let round = load(&client, &sessions, 4, 5, &format!("round{rounds}")).await;
            merge(&receipts, &round);
            rounds += 1;
        }
        (receipts, rounds)
    };
    let ((receipts, rounds), restarted) = tokio::join!(loads, restarts);
    cluster.nodes = restarted;
    let total = settle_and_check(&cluster, &mut followers, &receipts).await;
    assert_eq!(total, 4 * 5 * rounds, "every acknowledged send is in a log once");
    let retried = client.unavailable.load(Ordering::SeqCst);
    eprintln!("{rounds} rounds of sends during the restarts; {retried} answers were a 503");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs PostgreSQL (AIRLOCK_TEST_POSTGRES); .ci/run starts one"]
async fn the_same_idempotency_key_on_two_gateways_makes_one_message() {
    let test = "the_same_idempotency_key_on_two_gateways_makes_one_message";
    let Some(cluster) = Cluster::start(3, test).await else { return };
    let s = cluster.client(9).create(json!({})).await;
    let mut receipts = Vec::new();
    for k in 0..10 {
        let key = format!("key-{k}");
        let sends = cluster.nodes.iter().map(|node| {
            let (mut one, s, key) =
                (Client::new(vec![node.base.clone()], k), s.clone(), key.clone());
            async move { one.send(&s, &key, "the same body").await }
        });
        let answers = futures::future::join_all(sends).await;
        let ids: HashSet<&str> = answers.iter().map(|r| r["messageId"].as_str().unwrap()).collect();
        assert_eq!(ids.len(), 1, "one message for key {key}: {answers:?}");
        receipts.push(answers[0].clone());
    }
    let mut follower = Follower::start(cluster.client(10), s.clone());
    follower.until_done(10).await;
    check(&cluster.client(11).log(&s).await, &receipts);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs PostgreSQL (AIRLOCK_TEST_POSTGRES); .ci/run starts one"]
async fn the_cross_session_stream_of_any_gateway_shows_the_sessions_the_others_run() {
    let test = "the_cross_session_stream_of_any_gateway_shows_the_sessions_the_others_run";
    let Some(cluster) = Cluster::start(2, test).await else { return };
    let (a, b) = (&cluster.nodes[0], &cluster.nodes[1]);
    let res = a.client.get(a.url("/v1/events")).send().await.unwrap();
    let mut hub = Sse::of(res);
    let s = Client::new(vec![b.base.clone()], 12).create(json!({})).await;
    let added = Frame::Other("session.added".into(), json!({"sessionId": s}));
    assert_eq!(hub.next().await, added, "announced on the gateway that did not create it");
    let (code, _) = b.post(&format!("/v1/sessions/{s}/messages"), json!({"content": "hi"})).await;
    assert_eq!(code, 202);
    let statuses = [hub.next().await, hub.next().await];
    let status = |status: &str| Frame::Status(status.into());
    assert_eq!(statuses, [status("running"), status("idle")], "the other gateway's turn");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs PostgreSQL (AIRLOCK_TEST_POSTGRES); .ci/run starts one"]
async fn a_percent_encoded_session_id_is_decoded_before_the_gateway_that_holds_it_is_found() {
    let test = "a_percent_encoded_session_id_is_decoded_before_the_gateway_that_holds_it_is_found";
    let Some(cluster) = Cluster::start(2, test).await else { return };
    let (a, b) = (&cluster.nodes[0], &cluster.nodes[1]);
    let (code, made) = a.post("/v1/sessions", json!({"sessionId": "team:one"})).await;
    assert_eq!(code, 201, "{made}");
    let send = json!({"content": "hi"});
    let (code, sent) = a.post("/v1/sessions/team%3Aone/messages", send.clone()).await;
    assert_eq!(code, 202, "{sent}");
    assert!(!cluster.holder("team:one").is_empty(), "the gateway that ran it holds it");
    let (code, sent) = b.post("/v1/sessions/team%3Aone/messages", send).await;
    assert_eq!(code, 202, "the other gateway finds who holds `team:one`: {sent}");
    let (code, status) = b.get("/v1/sessions/team%3Aone/status").await;
    assert_eq!((code, &status["sessionId"]), (200, &json!("team:one")), "{status}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs PostgreSQL (AIRLOCK_TEST_POSTGRES); .ci/run starts one"]
async fn a_second_gateway_advertising_a_running_ones_address_refuses_to_start_and_names_it() {
    let test = "a_second_gateway_advertising_a_running_ones_address_refuses_to_start";
    let Some(cluster) = Cluster::start(1, test).await else { return };
    let first = &cluster.nodes[0];
    let stderr = cluster.refused(&["--listen", "127.0.0.1:0", "--advertise", &first.base]);
    assert!(stderr.contains(&cluster.node_id(0)), "it names the gateway there: {stderr}");
    assert!(stderr.contains(&first.base), "{stderr}");
    assert!(stderr.contains("give each gateway its own --advertise"), "{stderr}");
    // The first one runs on, its sessions untouched.
    let s = first.session().await;
    let (code, _) =
        first.post(&format!("/v1/sessions/{s}/messages"), json!({"content": "hi"})).await;
    assert_eq!(code, 202);
    assert_eq!(cluster.holder(&s), first.base);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs PostgreSQL (AIRLOCK_TEST_POSTGRES); .ci/run starts one"]
async fn a_second_gateway_with_a_running_ones_node_id_refuses_to_start() {
    let test = "a_second_gateway_with_a_running_ones_node_id_refuses_to_start";
    let Some(cluster) = Cluster::start(1, test).await else { return };
    let id = cluster.node_id(0);
    let stderr = cluster.refused(&["--listen", "127.0.0.1:0", "--node-id", &id]);
    assert!(stderr.contains(&format!("node id {id:?}")), "{stderr}");
    assert!(stderr.contains("give each gateway its own"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs PostgreSQL (AIRLOCK_TEST_POSTGRES); .ci/run starts one"]
async fn a_gateway_listening_on_every_interface_without_advertise_refuses_to_guess_its_address() {
    let test = "a_gateway_listening_on_every_interface_without_advertise_refuses";
    let Some(cluster) = Cluster::start(0, test).await else { return };
    let stderr = cluster.refused(&["--listen", "0.0.0.0:0"]);
    assert!(stderr.contains("every interface"), "{stderr}");
    assert!(stderr.contains("give --advertise http://HOST:"), "it says what to give: {stderr}");
}

/// `SIGSTOP`/`SIGCONT` of a gateway at random, 30 times, for a tenth of a lease to one and a half,
/// while clients send through every gateway: each pause's sessions take input through the others
/// within two leases, and afterwards every log holds each acknowledged send once and every
/// follower (checked at each frame) saw exactly the log.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs PostgreSQL (AIRLOCK_TEST_POSTGRES); .ci/run starts one"]
async fn thirty_random_pauses_of_a_gateway_under_load_lose_nothing_and_silence_no_follower() {
    let test = "thirty_random_pauses_of_a_gateway_under_load_lose_nothing_and_silence_no_follower";
    let Some(cluster) = Cluster::start(3, test).await else { return };
    let lease =
        Duration::from_secs(airlock_tests::cluster::LEASE.trim_end_matches('s').parse().unwrap());
    let client = cluster.client(11);
    let (sessions, mut followers) = client.followed_sessions(9, 4000).await;
    let loading = std::sync::atomic::AtomicBool::new(true);
    let loads = async {
        let receipts = Receipts::default();
        let mut rounds = 0;
        while loading.load(Ordering::SeqCst) {
            merge(&receipts, &load(&client, &sessions, 3, 4, &format!("round{rounds}")).await);
            rounds += 1;
        }
        receipts
    };
    let probes = Receipts::default();
    let pauses = async {
        let mut dice = client.reseeded(12);
        let mut slowest = Duration::ZERO;
        for pause in 0..30 {
            let victim = dice.random() % cluster.nodes.len();
            let node = &cluster.nodes[victim];
            // From a tenth of a lease to 1.5 leases: some pauses cost the node its sessions.
            let length = lease / 10 + lease * (dice.random() % 15) as u32 / 10;
            let held = sessions.iter().find(|s| cluster.holder(s) == node.base).cloned();
            node.signal("STOP");
            let stopped = tokio::time::Instant::now();
            // A session the paused node ran takes input through the others.
            let others: Vec<String> = cluster
                .nodes
                .iter()
                .filter(|n| n.base != node.base)
                .map(|n| n.base.clone())
                .collect();
            let mut probe = Client::new(others, 100 + pause);
            let probed = async {
                if let Some(session) = &held {
                    let receipt =
                        probe.send(session, &format!("probe{pause}"), "are you there?").await;
                    probes.lock().unwrap().entry(session.clone()).or_default().push(receipt);
                }
                stopped.elapsed()
            };
            let resume = async {
                tokio::time::sleep_until(stopped + length).await;
                node.signal("CONT");
            };
            let (took, ()) = tokio::join!(probed, resume);
            eprintln!(
                "pause {pause}: node {victim} for {length:?}; its session took input after {took:?}"
            );
            slowest = slowest.max(took);
        }
        loading.store(false, Ordering::SeqCst);
        slowest
    };
    let (receipts, slowest) = tokio::join!(loads, pauses);
    assert!(slowest <= 2 * lease, "every session took input within twice the lease: {slowest:?}");
    merge(&receipts, &probes);
    let sent: usize = receipts.lock().unwrap().values().map(Vec::len).sum();
    let total = settle_and_check(&cluster, &mut followers, &receipts).await;
    assert_eq!(total, sent, "every acknowledged send is in a log once");
}

#[tokio::test]
#[ignore = "needs PostgreSQL (AIRLOCK_TEST_POSTGRES); .ci/run starts one"]
async fn an_ag_ui_run_through_any_gateway_is_run_by_the_one_that_holds_its_thread() {
    let test = "an_ag_ui_run_through_any_gateway_is_run_by_the_one_that_holds_its_thread";
    let Some(cluster) = Cluster::start(2, test).await else { return };
    let (a, b) = (&cluster.nodes[0], &cluster.nodes[1]);
    // The thread is named in the body, not the path: the gateway asked reads it from there.
    let run = |gateway: &airlock_tests::gateway::Gateway, run: &str, text: &str| {
        let input = json!({"threadId": "shared-thread", "runId": run,
            "messages": [{"id": format!("{run}-m"), "role": "user", "content": text}]});
        let request = gateway.client.post(gateway.url("/ag-ui")).json(&input);
        async move {
            let res = request.send().await.unwrap();
            assert_eq!(res.status(), 200);
            res.text().await.unwrap()
        }
    };
    let first = run(a, "r1", "made on a").await;
    assert!(first.contains("RUN_FINISHED"), "{first}");
    let second = run(b, "r2", "sent through b").await;
    assert!(second.contains("RUN_FINISHED") && second.contains("sent through b"), "{second}");
    assert_eq!(cluster.holder("shared-thread"), a.base, "b forwarded; a kept the thread");
    let log = a.log("shared-thread").await;
    let turns = log.iter().filter(|e| e["type"] == "turn/end").count();
    assert_eq!(turns, 2, "{log:#?}");
}

#[tokio::test]
#[ignore = "needs PostgreSQL: set AIRLOCK_TEST_POSTGRES (.ci/run does)"]
async fn an_a2a_task_through_any_gateway_is_run_by_the_one_that_holds_its_context() {
    let test = "an_a2a_task_through_any_gateway_is_run_by_the_one_that_holds_its_context";
    let Some(cluster) = Cluster::start(2, test).await else { return };
    let (a, b) = (&cluster.nodes[0], &cluster.nodes[1]);
    // The context is named in the JSON-RPC body: the gateway asked reads it from there.
    let call = |gateway: &airlock_tests::gateway::Gateway, method: &str, params: Value| {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let request = gateway.client.post(gateway.url("/a2a")).json(&body);
        async move {
            let res = request.send().await.unwrap();
            assert_eq!(res.status(), 200);
            res.json::<Value>().await.unwrap()
        }
    };
    let say = |id: &str, text: &str| {
        json!({"message": {"messageId": id, "contextId": "shared-context", "role": "ROLE_USER",
            "parts": [{"text": text}]}})
    };
    let first = call(a, "SendMessage", say("m1", "made on a")).await;
    let task = &first["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{first}");
    let second = call(b, "SendMessage", say("m2", "sent through b")).await;
    let answer = &second["result"]["task"]["artifacts"][0]["parts"][0]["text"];
    assert!(answer.as_str().unwrap().contains("sent through b"), "{second}");
    let got = call(b, "GetTask", json!({"id": task["id"]})).await;
    assert_eq!(got["result"], *task, "a task read through b is the one a ran");
    assert_eq!(cluster.holder("shared-context"), a.base, "b forwarded; a kept the context");
    let log = a.log("shared-context").await;
    let turns = log.iter().filter(|e| e["type"] == "turn/end").count();
    assert_eq!(turns, 2, "{log:#?}");
}

#[tokio::test]
#[ignore = "needs PostgreSQL: set AIRLOCK_TEST_POSTGRES (.ci/run does)"]
async fn a_langgraph_run_through_any_gateway_is_run_by_the_one_that_holds_its_thread() {
    let test = "a_langgraph_run_through_any_gateway_is_run_by_the_one_that_holds_its_thread";
    let Some(cluster) = Cluster::start(2, test).await else { return };
    let (a, b) = (&cluster.nodes[0], &cluster.nodes[1]);
    let made = a.client.post(a.url("/langgraph/threads")).json(&json!({"thread_id": "lg-shared"}));
    assert_eq!(made.send().await.unwrap().status(), 200);
    // The thread is named in the path, as a session is on /v1.
    let body = json!({"assistant_id": "agent",
        "input": {"messages": [{"type": "human", "content": "sent through b"}]}});
    let run = b.client.post(b.url("/langgraph/threads/lg-shared/runs/stream")).json(&body);
    let stream = run.send().await.unwrap().text().await.unwrap();
    assert!(stream.contains("event: values") && stream.contains("sent through b"), "{stream}");
    assert_eq!(cluster.holder("lg-shared"), a.base, "b forwarded; a kept the thread");
    let state = b.client.get(b.url("/langgraph/threads/lg-shared/state")).send().await.unwrap();
    let state: Value = state.json().await.unwrap();
    assert_eq!(state["values"]["messages"].as_array().unwrap().len(), 2, "{state}");
}
