// The shapes the client hands out. Those the OpenAPI document describes come from the generated
// `openapi.ts`; the log events and the SSE notices are only `{type: object}` or a JSON string
// there, so they are written out here after docs/events.md.
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

export type QueueItem = Omit<Schemas["QueueView"]["items"][number], "message"> & {
  message: Message;
};

/** What an owned run produced: the events from its message's insert splice to the next idle. */
export type RunResult = Omit<Schemas["RunResult"], "events" | "usage" | "finishReason"> & {
  /** The kind of the last `turn/end` in the interval (`completed`, …); `null` if none. */
  finishReason: TurnEndReason["kind"] | null;
  /** Summed over the interval's assistant messages; absent when the provider sent none. */
  usage?: Usage | null;
  events: LogEvent[];
};

export interface EventsPage {
  events: LogEvent[];
  lastSeq: number;
  nextAfter: number;
  hasMore: boolean;
}

export type ContentBlock =
  | { type: "text"; text: string }
  | { type: "reasoning"; text: string }
  | { type: "image"; mediaType: string; data: string }
  | { type: "tool-call"; id: string; name: string; arguments: string }
  | { type: "tool-result"; toolCallId: string; content: ContentBlock[]; isError?: true };

export interface Message {
  id: string;
  role: "user" | "assistant" | "tool";
  content: ContentBlock[];
  /** Who made it: `user`, `goal`, `coordinator`, `subagent`, `model`, `tool`, `compaction`. */
  source: { kind: string; delivery?: Delivery; [field: string]: unknown };
}

export interface Usage {
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens?: number;
  reasoningTokens?: number;
}

export interface ModelError {
  code: string;
  message: string;
  status?: number;
  retryAfterMs?: number;
}

export type StreamChunk =
  | { type: "text-delta"; index: number; text: string }
  | { type: "reasoning-delta"; index: number; text: string }
  | { type: "tool-call-delta"; index: number; id: string; name?: string; argumentsDelta: string }
  | { type: "usage"; usage: Usage }
  | { type: "finish"; reason: "stop" | "tool-calls" | "max-tokens" | "error" | "aborted" };

export type TurnEndReason =
  | { kind: "completed" }
  | { kind: "max-tokens" }
  | { kind: "aborted"; reason: { kind: "user" | "parent" | "hook" | "disposed" } }
  | { kind: "blocked" }
  | { kind: "error"; error: ModelError }
  | { kind: "interrupted" };

interface Step {
  turn: number;
  step: number;
}

/** The `data` of each log event type. */
export interface LogEventData {
  "agent/inbox/spliced": {
    target: Target;
    start: number;
    removedCount?: number;
    inserted: Message[];
    outcome?: "canceled";
  };
  "turn/start": { turn: number };
  "turn/end": { turn: number; reason: TurnEndReason };
  "step/start": Step;
  "step/end": Step;
  "user/message": Message;
  "request/header": {
    header: { model: string; system?: string; tools?: string[]; maxTokens?: number };
    reason: "initial" | "resume" | "change";
  };
  "request/context": { provider: string; model: string; contextWindow?: number };
  "assistant/chunk": Step & { chunk: StreamChunk };
  "assistant/message": Step & { message: Message; usage?: Usage; interrupted?: true };
  "tool/call": Step & { callId: string; name: string; arguments: string };
  "tool/result": Step & { message: Message; error?: { name: string; code: string } };
  "llm/retry": Step & { attempt: number; delayMs: number; error: ModelError };
  "context/compaction": Partial<Step> & {
    summary: Message;
    throughSeq: number;
    tokensBefore: number;
    tokensAfter?: number;
    trigger: "pressure" | "overflow" | "manual";
  };
  "goal/change": { goal: Schemas["Goal"] } | { cleared: true; goalId: string };
  "subagent/descriptor": {
    childId: string;
    name: string | null;
    parentSessionId: string;
    continuable: boolean;
    version: number;
  };
  "session/end-seed": Record<string, never>;
}

export type LogEventType = keyof LogEventData;

/** One event of a session's log; narrow it by `type`. */
export type LogEvent = {
  [T in LogEventType]: {
    type: T;
    /** Per session, contiguous from 0. */
    seq: number;
    /** Epoch milliseconds. */
    time: number;
    data: LogEventData[T];
    /** On `assistant/message`: the seqs of the chunks it was built from. */
    sourceEventSeqs?: number[];
  };
}[LogEventType];

/** The frames of a session's stream that are not log events (never stored, no seq). */
export type Notice =
  | { event: "session.status"; data: { sessionId: string; status: "idle" | "running" } }
  | { event: "session.queue"; data: { sessionId: string; items: QueueItem[] } }
  | {
      event: "subagent.started";
      data: { parentSessionId: string; childSessionId: string; name: string | null };
    }
  | {
      event: "subagent.finished";
      data: {
        parentSessionId: string;
        childSessionId: string;
        status: "ok" | "error";
        stopReason: string;
        lastAssistantMessage: string;
      };
    };
