// The shapes the client hands out, all from the generated `openapi.ts`: the gateway's
// /openapi.json types every answer, every log event (a union tagged by `type`) and the data of
// every stream frame.
import type { components } from "./openapi.js";

type Schemas = components["schemas"];

export type Session = Schemas["SessionView"];
export type SessionStatus = Schemas["StatusView"];
export type SessionPage = Schemas["SessionPage"];
export type Receipt = Schemas["Receipt"];
export type Goal = Schemas["GoalView"];
export type Tool = Schemas["ToolView"];
/** A non-empty string, or a non-empty list of `text` and `image` blocks. */
export type Content = Schemas["Content"];
export type Delivery = "followup" | "steer" | "inject";
export type Target = "next-turn" | "next-step";
/** The answer to a send: the message is durable, `seq` is its insert splice. */
export type MessageAccepted = Schemas["MessageAccepted"];

export type CreateSessionOptions = Omit<Schemas["CreateBody"], "tools"> & {
  /** Tool names (see `tools()`); plugin tools are not in the generated enum. */
  tools?: string[] | null;
};

export type QueueItem = Schemas["QueueItem"];
/** What an owned run produced: the events from its message's insert splice to the next idle. */
export type RunResult = Schemas["RunResult"];
export type EventsPage = Schemas["EventsPage"];
export type Message = Schemas["Message"];
export type ContentBlock = Schemas["ContentBlock"];
export type StreamChunk = Schemas["StreamChunk"];
export type Usage = Schemas["Usage"];
export type ModelError = Schemas["ModelError"];
export type TurnEndReason = Schemas["TurnEndReason"];

/** One event of a session's log; narrow it by `type`. */
export type LogEvent = Schemas["Event"];
export type LogEventType = LogEvent["type"];
/** The `data` of each log event type. */
export type LogEventData = { [T in LogEventType]: Extract<LogEvent, { type: T }>["data"] };

/** The frames of a session's stream that are not log events (never stored, no seq). */
export type Notice =
  | { event: "session.status"; data: Schemas["StatusNotice"] }
  | { event: "session.queue"; data: Schemas["QueueNotice"] }
  | { event: "subagent.started"; data: Schemas["SubagentStarted"] }
  | { event: "subagent.finished"; data: Schemas["SubagentFinished"] };
