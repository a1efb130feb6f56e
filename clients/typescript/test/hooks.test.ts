import assert from "node:assert/strict";
import { writeFile } from "node:fs/promises";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { test } from "node:test";

import { Airlock, WebhookVerificationError, verifyWebhook } from "@airlock/client";

import { Gateway } from "./gateway.js";
import { check, rejectsWith, timeout } from "./support.js";

// The example of the Standard Webhooks specification.
const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const example = {
  "webhook-id": "msg_p5jXN8AQM9LWM0D4loKWxJek",
  "webhook-timestamp": "1614265330",
  "webhook-signature": "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
};
const body = '{"test": 2432232314}';

test("verifyWebhook takes the specification's example and refuses a forged or late one", async () => {
  assert.deepEqual(await verifyWebhook(secret, new Headers(example), body, { now: 1614265330 }), { test: 2432232314 });
  const refused = async (headers: Record<string, string>, text: string, now: number, why: RegExp) =>
    assert.rejects(verifyWebhook(secret, headers, text, { now }), (error: unknown) => {
      assert.ok(error instanceof WebhookVerificationError);
      assert.match(error.message, why);
      return true;
    });
  await refused({ ...example, "webhook-signature": "v1,bm90IGl0" }, body, 1614265330, /no signature/);
  await refused(example, '{"test": 1}', 1614265330, /no signature/);
  await refused(example, body, 1614265330 + 301, /too far/);
  await refused({ "webhook-id": "x", "webhook-timestamp": "1" }, body, 1, /webhook-signature/);
});

check("a subscription is made, listed, read and deleted, its secret shown once", async (airlock) => {
  const made = await airlock.createWebhook({ url: "https://hooks.example.com/in", events: ["session.idle"] });
  assert.match(made.secret, /^whsec_/);
  assert.deepEqual((await airlock.webhooks()).map((w) => w.id), [made.id]);
  assert.equal(((await airlock.webhook(made.id)) as { secret?: string }).secret, undefined);
  assert.equal((await airlock.resumeWebhook(made.id)).status, "active");
  await airlock.deleteWebhook(made.id);
  await rejectsWith(airlock.webhook(made.id), 404, "webhook-not-found");
  await rejectsWith(airlock.createWebhook({ url: "http://hooks.example.com/in", events: ["session.idle"] }), 400, "bad-request");
});

check("a schedule is made, paused, resumed and deleted", async (airlock) => {
  const session = await airlock.createSession();
  const made = await airlock.createSchedule({
    cron: "0 8 * * Mon-Fri",
    timezone: "Europe/Paris",
    sessionId: session.sessionId,
    content: "Good morning",
  });
  assert.deepEqual(made.content, [{ type: "text", text: "Good morning" }]);
  assert.deepEqual((await airlock.schedules()).map((s) => s.id), [made.id]);
  assert.equal((await airlock.pauseSchedule(made.id)).paused, true);
  assert.equal((await airlock.resumeSchedule(made.id)).paused, false);
  await airlock.deleteSchedule(made.id);
  await rejectsWith(airlock.schedule(made.id), 404, "schedule-not-found");
  await rejectsWith(airlock.createSchedule({ cron: "61 * * * *", sessionId: session.sessionId, content: "x" }), 400, "bad-request");
});

test("a delivery from the gateway verifies with the subscription's secret", { timeout }, async () => {
  // Deliveries may reach this machine: the gateway's airlock.toml says so.
  const gateway = await Gateway.start((g) => writeFile(join(g.dir, "airlock.toml"), "webhooks-allow-loopback = true\n"));
  let arrived: (delivery: { headers: Record<string, string>; body: string }) => void = () => {};
  const delivered = new Promise<{ headers: Record<string, string>; body: string }>((resolve) => {
    arrived = resolve;
  });
  const receiver = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      arrived({ headers: request.headers as Record<string, string>, body: Buffer.concat(chunks).toString() });
      response.writeHead(204).end();
    });
  });
  await new Promise<void>((listening) => receiver.listen(0, "127.0.0.1", listening));
  try {
    const airlock = new Airlock({ baseUrl: gateway.url });
    const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/in`;
    const made = await airlock.createWebhook({ url, events: ["session.idle"] });
    const session = await airlock.createSession();
    await airlock.send(session.sessionId, "hello");
    const got = await delivered;
    const payload = await verifyWebhook(made.secret, got.headers, got.body);
    assert.equal(payload.type, "session.idle");
    assert.equal(payload.data.sessionId, session.sessionId);
  } finally {
    receiver.closeAllConnections();
    receiver.close();
    await gateway.stop();
  }
});
