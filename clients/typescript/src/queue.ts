// The inbox lists of a session, kept by `Airlock.events` from its stream: a `session.queue`
// frame lists them, then each `agent/inbox/spliced` event changes one.
import type { QueueItem } from "./types.js";

/** The two inbox lists, each in order. */
export type Lists = Record<"next-step" | "next-turn", QueueItem[]>;

/** One change to an inbox list, as `agent/inbox/spliced` logs it. */
export interface Splice {
  target: "next-step" | "next-turn";
  start: number;
  removedCount?: number;
  inserted?: QueueItem["message"][];
}

/** The lists of a `session.queue` frame's items. */
export function listed(items: QueueItem[]): Lists {
  const lists: Lists = { "next-step": [], "next-turn": [] };
  for (const item of items) lists[item.target].push(item);
  return lists;
}

/** Applies a splice to `lists` as `Array.splice`; answers the queue after it. */
export function spliced(lists: Lists, { target, start, removedCount = 0, inserted = [] }: Splice): QueueItem[] {
  const items = inserted.map((message) => ({
    messageId: message.id,
    target,
    delivery: (message.source as { delivery?: string }).delivery ?? "inject",
    message,
  }));
  lists[target].splice(start, removedCount, ...(items as QueueItem[]));
  return [...lists["next-step"], ...lists["next-turn"]];
}
