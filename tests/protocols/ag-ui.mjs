// AG-UI's own client (`@ag-ui/client`'s HttpAgent) against a running gateway, as a frontend
// uses it: `node ag-ui.mjs BASE SCENARIO`. Every event that crosses the wire is checked against
// `@ag-ui/core`'s schemas (the agent's own verifier checks their order); the script prints what
// it saw as one JSON object, which tests/tests/all/protocols/ag_ui.rs asserts on.
import { HttpAgent } from "@ag-ui/client";
import { EventSchema } from "@ag-ui/core/schemas";
import { randomUUID } from "node:crypto";

const [base, scenario] = process.argv.slice(2);

/** An agent on a new thread whose every wire event is validated and kept in `wire`. */
function agent(threadId = randomUUID()) {
  const wire = [];
  const fetchTeed = async (url, init) => {
    const response = await fetch(url, init);
    const [mine, theirs] = response.body.tee();
    (async () => {
      const text = await new Response(mine).text();
      for (const frame of text.split("\n\n")) {
        const data = frame
          .split("\n")
          .filter((line) => line.startsWith("data:"))
          .map((line) => line.slice(5).replace(/^ /, ""));
        if (data.length) wire.push(EventSchema.parse(JSON.parse(data.join("\n"))));
      }
    })();
    return new Response(theirs, { status: response.status, headers: response.headers });
  };
  const http = new HttpAgent({ url: `${base}/ag-ui`, threadId, fetch: fetchTeed });
  return { http, wire };
}

/** Runs the agent; answers the run's events (from the wire) and the run's result. */
async function run({ http, wire }, parameters = {}) {
  const from = wire.length;
  const seen = [];
  const result = await http.runAgent(parameters, { onEvent: ({ event }) => seen.push(event) });
  // The wire's copy of the stream is read beside the agent's: wait until it has the end.
  while (!wire.slice(from).some((e) => e.type === "RUN_FINISHED" || e.type === "RUN_ERROR")) {
    await new Promise((resolve) => setImmediate(resolve));
  }
  const events = wire.slice(from);
  const finished = events.find((e) => e.type === "RUN_FINISHED");
  return {
    types: events.map((e) => e.type),
    events,
    seen: seen.length,
    outcome: finished?.outcome ?? null,
    text: events
      .filter((e) => e.type === "TEXT_MESSAGE_CONTENT")
      .map((e) => e.delta)
      .join(""),
    newMessages: result.newMessages,
  };
}

function say(agentOf, text) {
  agentOf.http.addMessage({ id: randomUUID(), role: "user", content: text });
}

const scenarios = {
  // A demo turn: text streamed between RUN_STARTED and RUN_FINISHED.
  async turn() {
    const a = agent();
    say(a, "hello from AG-UI");
    const first = await run(a);
    return { threadId: a.http.threadId, first, messages: a.http.messages };
  },

  // The demo model calls `echo`; the call and its result come as TOOL_CALL_* events.
  async tool() {
    const a = agent();
    say(a, '/tool echo {"text":"ping"}');
    return { threadId: a.http.threadId, first: await run(a) };
  },

  // `echo` needs an approval (the gateway's --approval-for): the run ends with an interrupt,
  // and the next run's resume approves it.
  async approval() {
    const a = agent();
    say(a, '/tool echo {"text":"approved?"}');
    const first = await run(a);
    const interrupts = a.http.pendingInterrupts.map((i) => i.id);
    const resume = interrupts.map((id) => ({
      interruptId: id,
      status: "resolved",
      payload: { approved: true },
    }));
    const second = await run(a, { resume });
    return { threadId: a.http.threadId, first, interrupts, second };
  },

  // Two agents post the same run (thread, runId and messages): it runs once.
  async sameRunId() {
    const threadId = randomUUID();
    const runId = randomUUID();
    const message = { id: randomUUID(), role: "user", content: "only once, please" };
    const one = agent(threadId);
    one.http.addMessage(message);
    const first = await run(one, { runId });
    const two = agent(threadId);
    two.http.addMessage(message);
    const second = await run(two, { runId });
    return { threadId, first, second };
  },

  // A tool the frontend declares: the model's call to it ends the run with the call pending;
  // the frontend runs it and sends the result as a tool message on the next run.
  async clientTool() {
    const a = agent();
    const tools = [
      {
        name: "pick_color",
        description: "Asks the person to pick a color.",
        parameters: { type: "object", properties: { hint: { type: "string" } } },
      },
    ];
    say(a, '/tool pick_color {"hint":"sky"}');
    const first = await run(a, { tools });
    const pending = first.outcome?.pendingToolCallIds ?? [];
    for (const toolCallId of pending) {
      a.http.addMessage({ id: randomUUID(), role: "tool", toolCallId, content: "cerulean" });
    }
    const second = await run(a, { tools });
    return { threadId: a.http.threadId, first, pending, second };
  },
};

const chosen = scenarios[scenario];
if (!chosen) throw new Error(`no scenario ${scenario}; one of ${Object.keys(scenarios)}`);
console.log(JSON.stringify(await chosen()));
