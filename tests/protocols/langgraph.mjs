// LangGraph's own SDK (`@langchain/langgraph-sdk`'s Client) against a running gateway, as an app
// built on the LangGraph Platform uses it: `node langgraph.mjs BASE SCENARIO`. The script prints
// what it saw as one JSON object, which tests/tests/all/protocols/langgraph.rs asserts on.
import { Client } from "@langchain/langgraph-sdk";

const [base, scenario] = process.argv.slice(2);
const client = new Client({ apiUrl: `${base}/langgraph`, apiKey: process.env.AIRLOCK_KEY ?? null });

/** Every part of a run's stream, and the run's id (from the response's Content-Location). */
async function run(thread, payload) {
  const parts = [];
  let runId = null;
  const stream = client.runs.stream(thread, "agent", {
    ...payload,
    onRunCreated: ({ run_id }) => (runId = run_id),
  });
  for await (const part of stream) parts.push(part);
  return { parts, runId };
}

/** The `values` parts' last state. */
const lastValues = ({ parts }) => parts.filter((p) => p.event === "values").at(-1)?.data;

const human = (content) => ({ input: { messages: [{ type: "human", content }] } });

const scenarios = {
  async values() {
    const assistants = await client.assistants.search();
    const thread = await client.threads.create({ metadata: { owner: "values" } });
    const first = await run(thread.thread_id, { ...human("hello from LangGraph"), streamMode: "values" });
    const second = await run(thread.thread_id, { ...human("and again"), streamMode: ["values", "updates", "messages-tuple"] });
    const history = await client.threads.getHistory(thread.thread_id);
    const state = await client.threads.getState(thread.thread_id);
    const found = await client.threads.search({ metadata: { owner: "values" } });
    return {
      assistants,
      thread,
      first: { events: first.parts.map((p) => p.event), values: lastValues(first), runId: first.runId },
      second: { events: second.parts.map((p) => p.event), parts: second.parts },
      history,
      state,
      found: found.map((t) => t.thread_id),
      after: await client.threads.get(thread.thread_id),
    };
  },

  async interrupt() {
    const thread = await client.threads.create();
    const asked = await run(thread.thread_id, { ...human('/tool echo {"text":"approved?"}'), streamMode: ["values", "updates"] });
    const waiting = await client.threads.get(thread.thread_id);
    const resumed = await run(thread.thread_id, {
      command: { resume: { decisions: [{ type: "approve" }] } },
      streamMode: "values",
    });
    return { asked: lastValues(asked), waiting, resumed: lastValues(resumed) };
  },

  async cancel() {
    // The model is held: the run goes on until it is canceled.
    const thread = await client.threads.create();
    const events = [];
    // The SDK calls onRunCreated without waiting for it: the cancel is awaited below.
    let cancel = null;
    const stream = client.runs.stream(thread.thread_id, "agent", {
      ...human("take your time"),
      streamMode: "values",
      onRunCreated: ({ run_id }) => (cancel = client.runs.cancel(thread.thread_id, run_id, true)),
    });
    for await (const part of stream) events.push(part.event);
    const canceled = cancel !== null && (await cancel, true);
    return { events, canceled, after: await client.threads.get(thread.thread_id) };
  },

  async join() {
    // The first connection reads up to its first text and drops; the run joined by id goes on.
    const thread = await client.threads.create();
    const controller = new AbortController();
    let runId = null;
    let lastId = null;
    const seen = [];
    const stream = client.runs.stream(thread.thread_id, "agent", {
      ...human("tell me something"),
      streamMode: ["messages-tuple", "values"],
      signal: controller.signal,
      onRunCreated: ({ run_id }) => (runId = run_id),
    });
    for await (const part of stream) {
      seen.push(part);
      lastId = part.id ?? lastId;
      if (part.event === "messages") {
        controller.abort();
        break;
      }
    }
    const rest = [];
    for await (const part of client.runs.joinStream(thread.thread_id, runId, {
      lastEventId: lastId,
      streamMode: ["messages-tuple", "values"],
    })) {
      rest.push(part);
    }
    const text = (parts) =>
      parts.filter((p) => p.event === "messages").map((p) => p.data[0].content).join("");
    return { text: text(seen) + text(rest), lastId, rest: rest.map((p) => p.event), values: lastValues({ parts: rest }) };
  },
};

const runScenario = scenarios[scenario];
if (!runScenario) throw new Error(`no scenario ${scenario}`);
console.log(JSON.stringify(await runScenario()));
