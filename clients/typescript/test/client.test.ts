import assert from "node:assert/strict";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";

import { Airlock, type LogEvent, type Notice, type paths } from "@airlock/client";
import createClient from "openapi-fetch";

import { Gateway, packageDir, run } from "./gateway.js";
import { check, range, rejectsWith, timeout } from "./support.js";

check("run() returns the RunResult: finalResponse, finishReason, usage and the interval's events", async (airlock) => {
  const result = await airlock.run("hello");
  assert.match(result.finalResponse, /^You said: "hello"/);
  assert.equal(result.finishReason, "completed");
  assert.ok(result.usage && result.usage.outputTokens > 0);
  assert.equal(result.firstSeq, 0);
  assert.deepEqual(
    result.events.map((event) => event.seq),
    range(result.firstSeq, result.lastSeq),
  );
  const end = result.events.at(-1);
  assert.equal(end?.type, "turn/end");
  if (end?.type === "turn/end") assert.deepEqual(end.data.reason, { kind: "completed" });

  const again = await airlock.run("and now?", { sessionId: result.sessionId });
  assert.equal(again.sessionId, result.sessionId);
  assert.equal(again.firstSeq, result.lastSeq + 1);
  assert.match(again.finalResponse, /^You said: "and now\?"/);
});

check("a client generated from /openapi.json type-checks and its events page returns typed events", async (_, gateway) => {
  // openapi-fetch over the types openapi-typescript generated from the served document: no
  // hand-written type in between, so this file compiles only if the document types the events.
  // `application/json`: the answers to take where a route also streams (`runs?stream=true`).
  const api = createClient<paths, "application/json">({ baseUrl: gateway.url });
  const created = await api.POST("/v1/sessions", { body: {} });
  const id = created.data!.sessionId;
  const run = await api.POST("/v1/sessions/{id}/runs", { params: { path: { id } }, body: { content: "hello" } });
  assert.equal(run.data?.finishReason, "completed");
  const { data: page, error } = await api.GET("/v1/sessions/{id}/events/page", {
    params: { path: { id }, query: { after: 0, limit: 100 } },
  });
  assert.equal(error, undefined);
  const seen: string[] = [];
  for (const event of page!.events) {
    switch (event.type) {
      case "turn/end":
        seen.push(`end ${event.data.turn} ${event.data.reason.kind}`);
        break;
      case "assistant/message":
        seen.push(`${event.data.message.role} ${event.data.usage?.outputTokens ? "with" : "without"} usage`);
        break;
      case "user/message":
        seen.push(`user ${event.data.content.map((block) => block.type).join()}`);
        break;
    }
  }
  assert.deepEqual(seen, ["user text", "assistant with usage", "end 1 completed"]);
  assert.equal(page!.events[0]?.seq, 1);
});

/** A client that notes the `Last-Event-ID` of each request for an event stream (null: none),
 * and tells when such a request fails to connect. */
function recordingClient(gateway: Gateway) {
  const lastEventIds: (string | null)[] = [];
  let refused = () => {};
  const airlock = new Airlock({
    baseUrl: gateway.url,
    fetch: async (input, init) => {
      if (!`${input}`.endsWith("/events")) return fetch(input, init);
      lastEventIds.push(new Headers(init?.headers).get("last-event-id"));
      try {
        return await fetch(input, init);
      } catch (error) {
        refused();
        throw error;
      }
    },
  });
  /** Resolves at the next refused connection. */
  const nextRefusal = () => new Promise<void>((resolve) => (refused = resolve));
  return { airlock, lastEventIds, nextRefusal };
}

check("events() resumes across a gateway restart with no gap and no duplicate", async (_, gateway) => {
  const { airlock, lastEventIds } = recordingClient(gateway);
  const first = await airlock.run("hello");
  const stop = new AbortController();
  const notices: Notice["event"][] = [];
  const events = airlock.events(first.sessionId, {
    signal: stop.signal,
    retryMs: 20,
    onNotice: (notice) => notices.push(notice.event),
  });
  const seqs: number[] = [];
  for (let i = 0; i < 5; i++) {
    const next = await events.next();
    assert.equal(next.done, false);
    seqs.push((next.value as LogEvent).seq);
  }

  await gateway.kill();
  await gateway.start(); // the same data file and port
  const second = await airlock.run("after the restart", { sessionId: first.sessionId });
  assert.ok(second.firstSeq > first.lastSeq);

  for await (const event of events) {
    seqs.push(event.seq);
    if (event.seq === second.lastSeq) stop.abort(); // the loop ends at the next step
  }
  assert.deepEqual(seqs, range(0, second.lastSeq));
  assert.equal(lastEventIds[0], null);
  assert.ok(lastEventIds.length >= 2 && lastEventIds.slice(1).every((id) => Number(id) >= 4));
  assert.ok(notices.includes("session.status"));
});

check("events() retries while the gateway is down and goes on when it is back", async (_, gateway) => {
  const { airlock, lastEventIds, nextRefusal } = recordingClient(gateway);
  const first = await airlock.run("hello");
  const stop = new AbortController();
  const seqs: number[] = [];
  let until = Infinity;
  let caughtUp = () => {};
  const caughtUpNow = new Promise<void>((resolve) => (caughtUp = resolve));
  const reading = (async () => {
    const events = airlock.events(first.sessionId, { signal: stop.signal, retryMs: 20 });
    for await (const event of events) {
      seqs.push(event.seq);
      if (event.seq === first.lastSeq) caughtUp();
      if (event.seq >= until) stop.abort();
    }
  })();

  await caughtUpNow; // the reader now waits on an open stream
  const refusal = nextRefusal();
  await gateway.kill();
  await refusal; // it noticed, and tried again while the gateway was down
  await gateway.start();
  const second = await airlock.run("after the restart", { sessionId: first.sessionId });
  until = second.lastSeq;
  if (seqs.at(-1) === until) stop.abort();
  await reading;

  assert.deepEqual(seqs, range(0, second.lastSeq));
  assert.equal(lastEventIds[0], null);
  assert.ok(lastEventIds.length >= 3); // the first, a refused one, the one that resumed
  assert.deepEqual(new Set(lastEventIds.slice(1)), new Set([`${first.lastSeq}`]));
});

check("events() starts after `after` and ends by itself once the session is disposed", async (airlock) => {
  const { sessionId, lastSeq } = await airlock.run("hello");
  await airlock.disposeSession(sessionId);
  const seqs: number[] = [];
  for await (const event of airlock.events(sessionId, { after: 3 })) seqs.push(event.seq);
  const log = await airlock.eventsPage(sessionId, { limit: 5000 });
  assert.ok(log.lastSeq >= lastSeq);
  assert.deepEqual(seqs, range(4, log.lastSeq));
});

check("an idempotent send returns the same messageId; the key with another body is 409 idempotency-conflict", async (airlock) => {
  const { sessionId } = await airlock.createSession();
  const options = { delivery: "inject", idempotencyKey: "ts-client-key-1" } as const;
  const first = await airlock.send(sessionId, "hello", options);
  const retry = await airlock.send(sessionId, "hello", options);
  assert.deepEqual(retry, first);
  await rejectsWith(airlock.send(sessionId, "other", options), 409, "idempotency-conflict");
  assert.deepEqual(
    (await airlock.listQueue(sessionId)).map((item) => item.messageId),
    [first.messageId],
  );
});

check("queue ops list, edit, remove and steer pending items; receipts follow them", async (airlock) => {
  const { sessionId } = await airlock.createSession();
  const a = await airlock.send(sessionId, "first", { delivery: "inject" });
  const b = await airlock.send(sessionId, [{ type: "text", text: "second" }], {
    delivery: "inject",
  });
  assert.deepEqual(b.seq, a.seq + 1);
  const queue = await airlock.listQueue(sessionId);
  assert.deepEqual(
    queue.map((item) => [item.messageId, item.delivery, item.target]),
    [
      [a.messageId, "inject", "next-step"],
      [b.messageId, "inject", "next-step"],
    ],
  );

  await airlock.editQueued(sessionId, a.messageId, "first, edited");
  const [edited] = await airlock.listQueue(sessionId);
  assert.equal(edited?.messageId, a.messageId);
  assert.deepEqual(edited?.message.content, [{ type: "text", text: "first, edited" }]);

  await airlock.removeQueued(sessionId, b.messageId);
  assert.deepEqual(
    (await airlock.listQueue(sessionId)).map((item) => item.messageId),
    [a.messageId],
  );
  assert.equal((await airlock.receipt(sessionId, b.messageId)).state, "canceled");
  assert.equal((await airlock.receipt(sessionId, a.messageId)).state, "pending");
  await rejectsWith(airlock.removeQueued(sessionId, b.messageId), 404, "queue-item-not-found");
  await rejectsWith(airlock.steerQueued(sessionId, a.messageId), 409, "steer-unavailable");
  await rejectsWith(airlock.receipt(sessionId, "no-such-message"), 404, "message-not-found");
});

check("cancel and compact: cancel at idle keeps the queue, compact logs a manual compaction", async (airlock) => {
  const { sessionId } = await airlock.createSession();
  await rejectsWith(airlock.compact(sessionId), 409, "nothing-to-compact");
  await airlock.run("hello", { sessionId });

  const context = await airlock.send(sessionId, "context", { delivery: "inject" });
  await airlock.cancel(sessionId);
  await airlock.cancel(sessionId, { keepInbox: false }); // idle: a no-op
  assert.deepEqual(
    (await airlock.listQueue(sessionId)).map((item) => item.messageId),
    [context.messageId],
  );

  const { lastSeq } = await airlock.status(sessionId);
  await airlock.compact(sessionId);
  for await (const event of airlock.events(sessionId, { after: lastSeq })) {
    if (event.type !== "context/compaction") continue;
    assert.equal(event.data.trigger, "manual");
    const [block] = event.data.summary.content;
    assert.match(block?.type === "text" ? block.text : "", /^Summary of the earlier conversation/);
    break;
  }
  assert.equal((await airlock.status(sessionId)).status, "idle");
});

check("usage counts a session's run and its compaction summary, at no cost on the demo", async (airlock) => {
  const { sessionId } = await airlock.createSession();
  const run = await airlock.run("hello", { sessionId });
  await airlock.compact(sessionId);
  let summary = 0;
  for await (const event of airlock.events(sessionId)) {
    if (event.type !== "context/compaction") continue;
    summary = event.data.usage?.outputTokens ?? 0;
    break;
  }
  assert.ok(summary > 0, "the demo counts its summary");
  const spent = await airlock.usage(sessionId);
  assert.equal(spent.usage.outputTokens, (run.usage?.outputTokens ?? 0) + summary);
  assert.equal(spent.models[0]?.responses, 2);
  assert.equal(spent.costUsd, 0);
  assert.equal((await airlock.tenantUsage({ since: 2 ** 53 })).usage.outputTokens, 0);
});

check("a spent budget pauses the session; setBudget reads, replaces and raises it, and the work resumes", async (airlock) => {
  const plain = await airlock.createSession();
  assert.equal(plain.budget ?? null, null);
  assert.equal(plain.paused, false);
  await rejectsWith(airlock.createSession({ budget: { tokens: -1 } }), 400, "bad-request");

  // The demo counts tokens, so one answer spends a budget of one token.
  const { sessionId, budget } = await airlock.createSession({ budget: { tokens: 1 } });
  assert.deepEqual([budget?.tokens, budget?.costUsd ?? null], [1, null]);
  const fresh = await airlock.budget(sessionId);
  assert.deepEqual([fresh.budget?.tokens, fresh.spent.tokens, fresh.paused], [1, 0, false]);
  assert.equal((await airlock.run("hello", { sessionId })).finishReason, "completed");

  const paused = await airlock.run("again", { sessionId });
  assert.equal(paused.finishReason, "paused");
  // `paused` is the `budget/exhausted` data: why the interval ended.
  const why = (paused as { paused?: { scope?: string; budget?: { tokens?: number } } }).paused;
  assert.deepEqual([why?.scope, why?.budget?.tokens], ["session", 1]);
  const types = paused.events.map((event) => event.type as string);
  assert.ok(types.includes("budget/exhausted"), `${types}`);
  assert.ok(!types.includes("assistant/message"), "no step ran");
  const end = paused.events[types.lastIndexOf("turn/end")];
  assert.deepEqual(end?.type === "turn/end" && end.data.reason, { kind: "paused" });
  const spent = (await airlock.usage(sessionId)).usage;
  const state = await airlock.budget(sessionId);
  assert.equal(state.paused, true);
  assert.equal(state.spent.tokens, spent.inputTokens + spent.outputTokens);
  assert.equal((await airlock.getSession(sessionId)).paused, true);

  // Still spent: still paused. Raised: it resumes, and the message that paused runs.
  assert.equal((await airlock.setBudget(sessionId, { tokens: 2 })).paused, true);
  const raised = await airlock.setBudget(sessionId, { tokens: 1_000_000, costUsd: 5 });
  assert.deepEqual([raised.budget?.tokens, raised.budget?.costUsd, raised.paused], [1_000_000, 5, false]);
  const after: string[] = [];
  for await (const event of airlock.events(sessionId, { after: paused.lastSeq })) {
    after.push(event.type);
    if (event.type === "turn/end") break;
  }
  assert.ok(after.includes("budget/resumed"), `${after}`);
  assert.ok(after.indexOf("budget/resumed") < after.indexOf("assistant/message"), `${after}`);
  assert.equal((await airlock.setBudget(sessionId, {})).budget, null);
});

check("goals are set, paused, resumed, completed and cleared", async (airlock) => {
  const { sessionId } = await airlock.createSession();
  await rejectsWith(airlock.getGoal(sessionId), 404, "goal-not-found");

  const goal = await airlock.setGoal(sessionId, "count to three", { maxRounds: 1000 });
  assert.equal(goal.objective, "count to three");
  assert.equal(goal.phase, "active");
  assert.equal(goal.maxRounds, 1000);

  const paused = await airlock.pauseGoal(sessionId);
  assert.equal(paused.phase, "paused");
  assert.equal(paused.paused?.code, "request");
  assert.equal((await airlock.getGoal(sessionId)).phase, "paused");
  assert.equal((await airlock.getSession(sessionId)).goal?.id, goal.id);

  assert.equal((await airlock.resumeGoal(sessionId)).phase, "active");
  assert.equal((await airlock.completeGoal(sessionId)).phase, "complete");
  await rejectsWith(airlock.completeGoal(sessionId), 409, "goal-conflict");
  await rejectsWith(airlock.setGoal(sessionId, " \n"), 400, "bad-request");

  await airlock.clearGoal(sessionId);
  await rejectsWith(airlock.getGoal(sessionId), 404, "goal-not-found");
});

check("sessions are created, read, listed and disposed; a disposed session takes no input", async (airlock) => {
  const created = await airlock.createSession({ sessionId: "ts:client.1", system: "Be brief." });
  assert.equal(created.sessionId, "ts:client.1");
  assert.equal(created.lastSeq, -1);
  assert.equal(created.status, "idle");
  const again = await airlock.createSession({ sessionId: "ts:client.1", system: "Be brief." });
  assert.deepEqual(again, created);
  await rejectsWith(airlock.createSession({ sessionId: "ts:client.1" }), 409, "session-conflict");

  assert.deepEqual(await airlock.getSession("ts:client.1"), created);
  const page = await airlock.listSessions({ limit: 10 });
  assert.deepEqual(page.items.map((session) => session.sessionId), ["ts:client.1"]);
  assert.deepEqual(await airlock.children("ts:client.1"), []);
  assert.ok((await airlock.tools()).some((tool) => tool.name === "echo"));

  await airlock.disposeSession("ts:client.1");
  assert.equal((await airlock.getSession("ts:client.1")).disposed, true);
  await rejectsWith(airlock.send("ts:client.1", "hello"), 409, "session-disposed");
  await rejectsWith(airlock.createSession({ model: "no-such-model" }), 400, "bad-request");
});

check("an unknown session throws AirlockError 404 session-not-found, also from events()", async (airlock) => {
  await rejectsWith(airlock.getSession("nope"), 404, "session-not-found");
  await rejectsWith(airlock.send("nope", "hello"), 404, "session-not-found");
  await rejectsWith(airlock.run("hello", { sessionId: "nope" }), 404, "session-not-found");
  await rejectsWith(airlock.cancel("nope"), 404, "session-not-found");
  await rejectsWith(airlock.events("nope").next(), 404, "session-not-found");
});

test("apiKey is sent as a bearer token; without it a gateway with keys answers 401 unauthorized", { timeout }, async () => {
  let key = "";
  const gateway = await Gateway.start(async (gateway) => {
    const made = await gateway.airlock("keys", "create", "--tenant", "ts", "--data", gateway.data);
    key = made.trim();
  });
  try {
    await rejectsWith(new Airlock({ baseUrl: gateway.url }).run("hello"), 401, "unauthorized");
    const result = await new Airlock({ baseUrl: gateway.url, apiKey: key }).run("hello");
    assert.match(result.finalResponse, /^You said: "hello"/);
  } finally {
    await gateway.stop();
  }
});

check("npm pack yields a package an app installs, and the README's example runs in it as written", async (_, gateway) => {
  const readme = await readFile(join(packageDir, "README.md"), "utf8");
  const example = /```js\n([\s\S]*?)```/.exec(readme)?.[1] ?? "";
  assert.ok(example.includes('baseUrl: "http://127.0.0.1:7700"'));
  // As the README's "Add it to your app" says: the package `npm pack` makes (dist/ is built by
  // `npm test`), installed into an app of its own, whose dependencies npm resolves.
  const app = await mkdtemp(join(tmpdir(), "airlock-app-"));
  try {
    const { stdout: packed } = await run("npm", ["pack", "--ignore-scripts", "--pack-destination", app], { cwd: packageDir });
    const tarball = join(app, packed.trim().split("\n").at(-1)!);
    await writeFile(join(app, "package.json"), JSON.stringify({ name: "app", private: true, type: "module" }));
    await run("npm", ["install", "--no-audit", "--no-fund", tarball], { cwd: app });
    const file = join(app, "app.mjs");
    await writeFile(file, example.replace("http://127.0.0.1:7700", gateway.url));
    const { stdout } = await run(process.execPath, [file], { cwd: app });
    const [answer, ...events] = stdout.trim().split("\n");
    assert.match(answer ?? "", /^You said: "hello"\. .* completed$/);
    assert.equal(events[0], "0 agent/inbox/spliced");
    assert.match(events.at(-1) ?? "", /^\d+ turn\/end$/);
    assert.deepEqual(
      events.map((line) => Number(line.split(" ")[0])),
      range(0, events.length - 1),
    );
  } finally {
    await rm(app, { recursive: true, force: true });
  }
});

check("setMetadata replaces a session's metadata whole, and null keeps nothing", async (airlock) => {
  const created = await airlock.createSession({ metadata: { title: "Draft", project: 7 } });
  assert.deepEqual(created.metadata, { title: "Draft", project: 7 });
  const changed = await airlock.setMetadata(created.sessionId, { title: "Launch plan" });
  assert.deepEqual(changed.metadata, { title: "Launch plan" });
  assert.deepEqual((await airlock.getSession(created.sessionId)).metadata, { title: "Launch plan" });
  assert.equal((await airlock.setMetadata(created.sessionId, null)).metadata, undefined);
});

check("a file uploaded to the workspace is listed, downloaded byte for byte and removed", async (airlock) => {
  const { sessionId } = await airlock.createSession();
  const bytes = new Uint8Array(256).map((_, i) => i);
  const stored = await airlock.uploadFile(sessionId, "in/ü data.bin", bytes);
  assert.deepEqual([stored.path, stored.bytes], ["in/ü data.bin", 256]);
  const files = await airlock.files(sessionId);
  assert.deepEqual(files.items.map((f) => f.path), ["in/ü data.bin"]);
  assert.equal(files.chargedBytes, 8192);
  assert.deepEqual(await airlock.downloadFile(sessionId, "in/ü data.bin"), bytes);
  await airlock.uploadFile(sessionId, "note.txt", "hello");
  assert.equal(new TextDecoder().decode(await airlock.downloadFile(sessionId, "note.txt")), "hello");
  await airlock.removeFile(sessionId, "in/ü data.bin");
  await rejectsWith(airlock.downloadFile(sessionId, "in/ü data.bin"), 404, "file-not-found");
  await rejectsWith(airlock.uploadFile(sessionId, "a//b", "x"), 400, "bad-request");
});
