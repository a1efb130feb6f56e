// A person in the loop through the client: approve, deny, client tools' results, the waiting
// list, and forks, each against a gateway of its own.

import assert from "node:assert/strict";

import type { Airlock, LogEvent } from "@airlock/client";

import { type EventOf, check, isType, rejectsWith } from "./support.js";

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
