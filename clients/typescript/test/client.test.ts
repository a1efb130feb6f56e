import assert from "node:assert/strict";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { test } from "node:test";

import { Airlock, AirlockError, type LogEvent, type Notice, type paths } from "@airlock/client";
import createClient from "openapi-fetch";

import { Gateway, packageDir, run } from "./gateway.js";

const timeout = 60_000;

/** A test against a gateway of its own, stopped and removed afterwards. */
function check(name: string, body: (airlock: Airlock, gateway: Gateway) => Promise<void>) {
  test(name, { timeout }, async () => {
    const gateway = await Gateway.start();
    try {
      await body(new Airlock({ baseUrl: gateway.url }), gateway);
    } finally {
      await gateway.stop();
    }
  });
}

/** Asserts that `promise` rejects with an AirlockError of this status and code. */
async function rejectsWith(promise: Promise<unknown>, status: number, code: string) {
  await assert.rejects(promise, (error: unknown) => {
    assert.ok(error instanceof AirlockError, `not an AirlockError: ${error}`);
    assert.equal(error.status, status);
    assert.equal(error.code, code);
    assert.ok(error.message.length > 0);
    return true;
  });
}

/** from, from + 1, …, to */
const range = (from: number, to: number) =>
  Array.from({ length: to - from + 1 }, (_, i) => from + i);

type EventOf<T extends LogEvent["type"]> = Extract<LogEvent, { type: T }>;

/** A log event of this type. */
const isType =
  <T extends LogEvent["type"]>(type: T) =>
  (event: LogEvent): event is EventOf<T> =>
    event.type === type;

/** A tool call waits for a person's approval. */
const approvalRequested = (event: LogEvent): event is EventOf<"tool/approval"> =>
  event.type === "tool/approval" && event.data.state === "requested";

/** A client tool's call waits for the client's result. */
const clientCall = (event: LogEvent): event is EventOf<"tool/call"> =>
  event.type === "tool/call" && event.data.client === true;

/** Follows a session's events (from the start of its log) while `body` runs, then stops. */
async function following<T>(
  airlock: Airlock,
  sessionId: string,
  body: (events: AsyncGenerator<LogEvent, void>) => Promise<T>,
): Promise<T> {
  const stop = new AbortController();
  const events = airlock.events(sessionId, { signal: stop.signal });
  try {
    return await body(events);
  } finally {
    stop.abort();
    await events.return();
  }
}

/** Reads `events` up to the first one that is `done`: the events read, and that one. No timer
 * is involved: the stream brings each event as it is committed. */
async function until<E extends LogEvent>(
  events: AsyncGenerator<LogEvent, void>,
  done: (event: LogEvent) => event is E,
): Promise<{ seen: LogEvent[]; found: E }> {
  const seen: LogEvent[] = [];
  for (;;) {
    const next = await events.next();
    if (next.done) throw new Error(`the stream ended before what was awaited: ${JSON.stringify(seen)}`);
    seen.push(next.value);
    if (done(next.value)) return { seen, found: next.value };
  }
}

/** The one `tool/result` among `events`, and the text of its result. */
function onlyResult(events: LogEvent[]): { event: EventOf<"tool/result">; text: string } {
  const results = events.filter(isType("tool/result"));
  assert.equal(results.length, 1);
  const event = results[0]!;
  const text = event.data.message.content
    .flatMap((block) => (block.type === "tool-result" ? block.content : []))
    .map((block) => (block.type === "text" ? block.text : ""))
    .join("");
  return { event, text };
}

const ECHO = '/tool echo {"text":"hi"}';
const ASK = '/tool ask_user {"question":"Colour?"}';

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

check("approve() runs a call that waits for approval: its tool/result has no error", async (airlock) => {
  const { sessionId } = await airlock.createSession({ tools: [{ name: "echo", approval: "always" }] });
  const { callId, rest } = await following(airlock, sessionId, async (events) => {
    await airlock.send(sessionId, ECHO);
    const { callId } = (await until(events, approvalRequested)).found.data;
    assert.equal((await airlock.status(sessionId)).status, "running");
    await airlock.approve(sessionId, callId);
    return { callId, rest: (await until(events, isType("turn/end"))).seen };
  });
  assert.deepEqual(
    rest.filter(isType("tool/approval")).map((event) => event.data.state),
    ["approved"],
  );
  const result = onlyResult(rest);
  assert.equal(result.event.data.error, undefined);
  assert.equal(result.text, "echo: hi");
  const end = rest.at(-1);
  assert.ok(end?.type === "turn/end" && end.data.reason.kind === "completed");
  await rejectsWith(airlock.approve(sessionId, callId), 409, "not-waiting");
});

check("deny() answers the call with the error DENIED_BY_USER and the reason", async (airlock) => {
  const { sessionId } = await airlock.createSession({ tools: [{ name: "echo", approval: "always" }] });
  const { callId, rest } = await following(airlock, sessionId, async (events) => {
    await airlock.send(sessionId, ECHO);
    const { callId } = (await until(events, approvalRequested)).found.data;
    await airlock.deny(sessionId, callId, { reason: "not today" });
    return { callId, rest: (await until(events, isType("turn/end"))).seen };
  });
  const [denied] = rest.filter(isType("tool/approval"));
  assert.equal(denied?.data.state, "denied");
  assert.equal(denied?.data.reason, "not today");
  const result = onlyResult(rest);
  assert.equal(result.event.data.error?.code, "DENIED_BY_USER");
  assert.match(result.text, /not today/);
  await rejectsWith(airlock.deny(sessionId, callId), 409, "not-waiting");
});

check("postToolResult() answers a client tool's call; a second result is 409 not-waiting", async (airlock) => {
  const { sessionId } = await airlock.createSession({
    clientTools: [
      {
        name: "ask_user",
        description: "Asks the person a question.",
        parameters: { type: "object", properties: { question: { type: "string" } } },
        timeoutMs: 60_000,
      },
    ],
  });
  const rest = await following(airlock, sessionId, async (events) => {
    await airlock.send(sessionId, ASK);
    const call = (await until(events, clientCall)).found.data;
    assert.deepEqual([call.name, call.arguments], ["ask_user", '{"question":"Colour?"}']);
    await airlock.postToolResult(sessionId, call.callId, "Blue");
    await rejectsWith(airlock.postToolResult(sessionId, call.callId, "Green"), 409, "not-waiting");
    return (await until(events, isType("turn/end"))).seen;
  });
  const result = onlyResult(rest);
  assert.equal(result.event.data.error, undefined);
  assert.equal(result.text, "Blue");
  const answer = rest.filter(isType("assistant/message")).at(-1)?.data.message.content[0];
  assert.deepEqual(answer, { type: "text", text: "The ask_user tool returned: Blue" });
});

check("postToolResult() with isError reaches the model as CLIENT_TOOL_ERROR", async (airlock) => {
  const { sessionId } = await airlock.createSession({ clientTools: [{ name: "ask_user" }] });
  const rest = await following(airlock, sessionId, async (events) => {
    await airlock.send(sessionId, ASK);
    const { callId } = (await until(events, clientCall)).found.data;
    await airlock.postToolResult(sessionId, callId, [{ type: "text", text: "nobody answered" }], {
      isError: true,
    });
    return (await until(events, isType("turn/end"))).seen;
  });
  const result = onlyResult(rest);
  assert.equal(result.event.data.error?.code, "CLIENT_TOOL_ERROR");
  assert.equal(result.text, "nobody answered");
});

check("toolCalls() lists the waiting call with its kind, approval or client", async (airlock) => {
  const made = await airlock.createSession({
    tools: [{ name: "echo", approval: "always" }],
    clientTools: [{ name: "ask_user" }],
  });
  const { sessionId } = made;
  assert.deepEqual(await airlock.toolCalls(sessionId), []);
  await following(airlock, sessionId, async (events) => {
    await airlock.send(sessionId, ECHO);
    const approval = (await until(events, approvalRequested)).found.data.callId;
    const [waiting, ...more] = await airlock.toolCalls(sessionId);
    assert.deepEqual(more, []);
    assert.deepEqual(
      [waiting?.callId, waiting?.name, waiting?.arguments, waiting?.kind],
      [approval, "echo", '{"text":"hi"}', "approval"],
    );
    assert.ok((waiting?.since ?? 0) >= made.createdAt);
    await rejectsWith(airlock.postToolResult(sessionId, approval, "not yet"), 409, "not-waiting");
    await airlock.approve(sessionId, approval);
    await until(events, isType("turn/end"));
    assert.deepEqual(await airlock.toolCalls(sessionId), []);

    await airlock.send(sessionId, ASK);
    const client = (await until(events, clientCall)).found.data.callId;
    assert.deepEqual(
      (await airlock.toolCalls(sessionId)).map((call) => [call.callId, call.name, call.kind]),
      [[client, "ask_user", "client"]],
    );
    await rejectsWith(airlock.approve(sessionId, client), 409, "not-waiting");
    await airlock.postToolResult(sessionId, client, "Blue");
    await until(events, isType("turn/end"));
  });
  assert.deepEqual(await airlock.toolCalls(sessionId), []);
  await rejectsWith(airlock.approve(sessionId, "no-such-call"), 404, "tool-call-not-found");
});

check("fork() at a seq returns a session forkedFrom the source and seq; its log is a copy through it", async (airlock) => {
  const source = await airlock.run("hello");
  const { sessionId } = source;
  assert.equal(source.events[4]?.type, "user/message"); // the turn is open at seq 4
  const fork = await airlock.fork(sessionId, { atSeq: 4, sessionId: "ts-fork" });
  assert.equal(fork.sessionId, "ts-fork");
  assert.deepEqual(fork.forkedFrom, { sessionId, seq: 4 });
  assert.equal(fork.status, "idle");
  assert.deepEqual((await airlock.getSession("ts-fork")).forkedFrom, { sessionId, seq: 4 });
  assert.equal((await airlock.getSession(sessionId)).forkedFrom ?? null, null);

  const log = (await airlock.eventsPage("ts-fork")).events;
  assert.deepEqual(
    log.slice(0, 5).map((event) => [event.seq, event.type]),
    source.events.slice(0, 5).map((event) => [event.seq, event.type]),
  );
  assert.deepEqual(log.slice(-2).map((event) => event.type), ["turn/end", "session/end-seed"]);
  assert.equal(log.at(-1)?.seq, fork.lastSeq);
  const again = await airlock.run("again", { sessionId: "ts-fork" });
  assert.equal(again.firstSeq, fork.lastSeq + 1);
  assert.equal(again.finishReason, "completed");
  assert.equal((await airlock.status(sessionId)).lastSeq, source.lastSeq); // untouched
});

check("fork() refuses a seq not logged (409 seq-not-logged) and an id that exists (409 session-conflict)", async (airlock) => {
  const { sessionId } = await airlock.createSession();
  await rejectsWith(airlock.fork(sessionId), 409, "seq-not-logged");
  const { lastSeq } = await airlock.run("hello", { sessionId });
  await rejectsWith(airlock.fork(sessionId, { atSeq: lastSeq + 1 }), 409, "seq-not-logged");
  const whole = await airlock.fork(sessionId);
  assert.deepEqual(whole.forkedFrom, { sessionId, seq: lastSeq });
  await rejectsWith(airlock.fork(sessionId, { sessionId: whole.sessionId }), 409, "session-conflict");
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

check("the README's example runs as written and prints the answer and the run's events", async (_, gateway) => {
  const readme = await readFile(join(packageDir, "README.md"), "utf8");
  const example = /```js\n([\s\S]*?)```/.exec(readme)?.[1] ?? "";
  assert.ok(example.includes('baseUrl: "http://127.0.0.1:7700"'));
  // Inside the package, so that "@airlock/client" resolves to it.
  const file = join(packageDir, "build", "readme-example.mjs");
  await writeFile(file, example.replace("http://127.0.0.1:7700", gateway.url));
  const { stdout } = await run(process.execPath, [file]);
  const [answer, ...events] = stdout.trim().split("\n");
  assert.match(answer ?? "", /^You said: "hello"\. .* completed$/);
  assert.equal(events[0], "0 agent/inbox/spliced");
  assert.match(events.at(-1) ?? "", /^\d+ turn\/end$/);
  assert.deepEqual(
    events.map((line) => Number(line.split(" ")[0])),
    range(0, events.length - 1),
  );
});
