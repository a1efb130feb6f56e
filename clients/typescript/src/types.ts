// The shapes the client hands out, all from the generated `openapi.ts`: the gateway's
// /openapi.json types every answer, every log event (a union tagged by `type`) and the data of
// every stream frame.
import type { components, paths } from "./openapi.js";

type Schemas = components["schemas"];
/** The budget's route, whose answer and body name the budget types whatever the document calls
 * their schemas. */
type BudgetRoute = paths["/v1/sessions/{id}/budget"];

export type Session = Schemas["SessionView"];
export type SessionStatus = Schemas["StatusView"];
export type SessionPage = Schemas["SessionPage"];
/** What sessions spent: tokens in all and by model, and their cost in US dollars. */
export type Spending = Schemas["UsageView"];
/** A session's budget (`null`: it has none), what it spent (`tokens`: input plus output tokens
 * of every response; `costUsd`: their cost, as `usage()` prices it) and whether the budget holds
 * it `paused`. */
export type BudgetState = BudgetRoute["get"]["responses"][200]["content"]["application/json"];
/** The most a session's responses may spend: `tokens` and `costUsd`; a field absent is no limit
 * of that kind. */
export type Budget = NonNullable<BudgetState["budget"]>;
/** A new budget, replacing the old one whole: a limit absent (or `null`) is no limit, and `{}`
 * removes the budget. */
export type BudgetUpdate =
  NonNullable<BudgetRoute["patch"]["requestBody"]>["content"]["application/json"];
/** A session's workspace: its files (those its code tools wrote and those uploaded for them), what
 * it counts against the quota and what all of the tenant's workspaces may hold. */
export type Files = Schemas["FilesView"];
/** A workspace file: its `/`-separated `path`, `bytes` and `modifiedAt` (ms since the epoch). */
export type WorkspaceFile = Schemas["FileView"];
export type Receipt = Schemas["Receipt"];
export type Goal = Schemas["GoalView"];
export type Tool = Schemas["ToolView"];
/** A non-empty string, or a non-empty list of `text` and `image` blocks. */
export type Content = Schemas["Content"];
export type Delivery = "followup" | "steer" | "inject";
export type Target = "next-turn" | "next-step";
/** The answer to a send: the message is durable, `seq` is its insert splice. */
export type MessageAccepted = Schemas["MessageAccepted"];

/** Whether a session's calls of a tool wait for a person: `always` (each call waits for
 * `approve` or `deny`) or `never`. */
export type Approval = Schemas["Approval"];
/** A gateway tool with an approval policy for the session; it overrides the gateway's
 * `--approval-for` and a plugin's own default. */
export interface ToolPolicy {
  name: string;
  approval: Approval;
}
/** A tool a session offers: its name, or its name with an approval policy. */
export type ToolChoice = string | ToolPolicy;
/** A tool the client runs: `{name, description?, parameters?, timeoutMs?}`. Each call waits for
 * the client's `postToolResult` (or `timeoutMs`, 10 minutes by default). */
export type ClientTool = Schemas["ClientTool"];

export type CreateSessionOptions = Omit<Schemas["CreateBody"], "tools"> & {
  /** Tool names (see `tools()`) or `{name, approval}` policies; plugin tools are not in the
   * generated enum. */
  tools?: ToolChoice[] | null;
};

/** A call of the running step that waits: for a person's approval (`approve`, `deny`) or for
 * the client's result (`postToolResult`). `arguments` is the model's raw JSON text; `since` when
 * it started waiting (epoch ms). */
export type WaitingCall = Omit<Schemas["WaitingView"], "kind"> & { kind: "approval" | "client" };
/** Where a fork starts: `atSeq` (the source's last event when absent) and the fork's own
 * `sessionId` (a fresh one when absent). */
export type ForkOptions = Schemas["ForkBody"];
/** Where a fork's log was copied from: the source session and the last seq copied. */
export type ForkedFrom = Schemas["ForkedFrom"];

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

/** A webhook subscription: where it posts, what it is told, and how its deliveries went (`status`
 * `failing`: a delivery was retried for the whole window; nothing is sent until resumed). */
export type Webhook = Schemas["WebhookView"];
/** A subscription just made, with its `secret` (`whsec_…`), shown only now. */
export type CreatedWebhook = Schemas["CreatedWebhook"];
/** A subscription to make: `url`, `events` and, to hear one session only, `sessionId`. */
export type CreateWebhookOptions = Schemas["CreateWebhookBody"];
/** An event type a subscription may ask for. */
export type WebhookEventType = Schemas["WebhookEventType"];
/** A schedule: its expression and zone, where its messages go, its next due time and what it did. */
export type Schedule = Schemas["ScheduleView"];
/** A schedule to make: `cron`, `content`, and `sessionId` or `session` (with `fresh`). */
export type CreateScheduleOptions = Schemas["CreateScheduleBody"];
