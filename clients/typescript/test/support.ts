// What the client's test files share: a gateway per test, error and event assertions.

import assert from "node:assert/strict";
import { test } from "node:test";

import { Airlock, AirlockError, type LogEvent } from "@airlock/client";

import { Gateway } from "./gateway.js";

export const timeout = 60_000;

/** A test against a gateway of its own, stopped and removed afterwards. */
export function check(name: string, body: (airlock: Airlock, gateway: Gateway) => Promise<void>) {
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
export async function rejectsWith(promise: Promise<unknown>, status: number, code: string) {
  await assert.rejects(promise, (error: unknown) => {
    assert.ok(error instanceof AirlockError, `not an AirlockError: ${error}`);
    assert.equal(error.status, status);
    assert.equal(error.code, code);
    assert.ok(error.message.length > 0);
    return true;
  });
}

/** from, from + 1, …, to */
export const range = (from: number, to: number) =>
  Array.from({ length: to - from + 1 }, (_, i) => from + i);

export type EventOf<T extends LogEvent["type"]> = Extract<LogEvent, { type: T }>;

/** A log event of this type. */
export const isType =
  <T extends LogEvent["type"]>(type: T) =>
  (event: LogEvent): event is EventOf<T> =>
    event.type === type;
