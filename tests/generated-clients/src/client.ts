// What an app does with types openapi-typescript generated from the gateway's /openapi.json and
// openapi-fetch: create a session, send to it, run in it, run in a new session, read its events.
// Compiled with `tsc` against the generated `api.d.ts` (a mistyped field fails the build).
//
//     node build/client.js BASE_URL
//
// Prints one JSON line of what it saw, for tests/tests/all/generated_clients.rs to check.

import createClient from "openapi-fetch";
import type { components, paths } from "./api.js";

type Event = components["schemas"]["Event"];
type RunResult = components["schemas"]["RunResult"];

// The document types both answers a run gives: JSON, and with `?stream=true` its SSE frames
// (`RunStream`). This app asks for JSON.
function json(run: RunResult | components["schemas"]["RunStream"]): RunResult {
  if (!("finalResponse" in run)) {
    throw new Error(`not a run's JSON answer: ${JSON.stringify(run)}`);
  }
  return run;
}

const client = createClient<paths>({ baseUrl: process.argv[2] });

function ok<T>(answer: { data?: T; error?: unknown; response: Response }): T {
  if (answer.data === undefined) {
    throw new Error(`${answer.response.status}: ${JSON.stringify(answer.error)}`);
  }
  return answer.data;
}

const session = ok(await client.POST("/v1/sessions", { body: {} }));
const id = { path: { id: session.sessionId } };
const sent = ok(
  await client.POST("/v1/sessions/{id}/messages", {
    params: { ...id, header: { "Idempotency-Key": "hello-1" } },
    body: { content: "hello" },
  }),
);
const run = json(
  ok(await client.POST("/v1/sessions/{id}/runs", { params: id, body: { content: "and now?" } })),
);
const fresh = json(ok(await client.POST("/v1/runs", { body: { content: "hi" } })));
const page = ok(await client.GET("/v1/sessions/{id}/events/page", { params: id }));
const events: Event[] = page.events;

console.log(
  JSON.stringify({
    session: session.sessionId,
    sent: sent.messageId,
    run: run.finalResponse,
    fresh: fresh.finalResponse,
    freshSession: fresh.sessionId,
    events: events.map((event) => event.type),
  }),
);
