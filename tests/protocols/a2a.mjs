// A2A's own client (`@a2a-js/sdk`'s ClientFactory and Client, JSON-RPC binding) against a running
// gateway, as another agent uses it: `node a2a.mjs BASE SCENARIO`. Every answer is parsed by the
// SDK's own protobuf-JSON codecs; the script prints what it saw as one JSON object, which
// tests/tests/all/protocols/a2a.rs asserts on.
import { Role, StreamResponse, Task } from "@a2a-js/sdk";
import { ClientFactory } from "@a2a-js/sdk/client";
import { randomUUID } from "node:crypto";

const [base, scenario] = process.argv.slice(2);

/** A user message; `content` is a part's oneof: `{ $case: "text", value }` or `{ $case: "data", value }`. */
function message(content, { contextId = "", taskId = "", messageId = randomUUID() } = {}) {
  return {
    messageId,
    contextId,
    taskId,
    role: Role.ROLE_USER,
    parts: [{ content, metadata: undefined, filename: "", mediaType: "" }],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}

const text = (value, options) => message({ $case: "text", value }, options);

function request(message, configuration = undefined) {
  return { tenant: "", message, configuration, metadata: undefined };
}

/** A task as its wire JSON, which the test reads. */
const wire = (task) => Task.toJSON(task);

/** Every event of a stream, as its wire JSON. */
async function collect(stream) {
  const events = [];
  for await (const event of stream) events.push(StreamResponse.toJSON(event));
  return events;
}

const client = await new ClientFactory().createFromUrl(base);

const scenarios = {
  async card() {
    return { card: client.agentCard };
  },

  async send() {
    const task = await client.sendMessage(request(text("hello from A2A")));
    const got = await client.getTask({ tenant: "", id: task.id, historyLength: undefined });
    const listed = await client.listTasks({
      tenant: "",
      contextId: task.contextId,
      status: 0,
      pageSize: undefined,
      pageToken: "",
      historyLength: undefined,
      statusTimestampAfter: undefined,
      includeArtifacts: true,
    });
    return { task: wire(task), got: wire(got), listed: listed.tasks.map(wire) };
  },

  async stream() {
    return { events: await collect(client.sendMessageStream(request(text("stream to me")))) };
  },

  async cancel() {
    // The model is held: the turn runs until it is canceled.
    const stream = client.sendMessageStream(request(text("take your time")));
    const events = [];
    let canceled = null;
    for await (const event of stream) {
      events.push(StreamResponse.toJSON(event));
      if (event.payload?.$case === "statusUpdate" && !canceled) {
        canceled = wire(await client.cancelTask({ tenant: "", id: event.payload.value.taskId, metadata: undefined }));
      }
    }
    let again = null;
    try {
      await client.cancelTask({ tenant: "", id: canceled.id, metadata: undefined });
    } catch (e) {
      again = { name: e.name, message: e.message };
    }
    return { events, canceled, again };
  },

  async approval() {
    const first = await client.sendMessage(request(text('/tool echo {"text":"approved?"}')));
    const answer = message(
      { $case: "data", value: { approved: true } },
      { contextId: first.contextId, taskId: first.id },
    );
    const second = await client.sendMessage(request(answer));
    return { first: wire(first), second: wire(second) };
  },

  async sameMessageId() {
    const once = text("only once", { messageId: randomUUID() });
    const first = await client.sendMessage(request(once));
    const second = await client.sendMessage(request(once));
    return { first: wire(first), second: wire(second) };
  },
};

const run = scenarios[scenario];
if (!run) throw new Error(`no scenario ${scenario}`);
console.log(JSON.stringify(await run()));
