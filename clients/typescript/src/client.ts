import { AirlockError } from "./errors.js";
import { listed, spliced, type Lists, type Splice } from "./queue.js";
import { file, query, queued, schedule, segment, session, toolCall, webhook } from "./routes.js";
import { readFrames, sleep } from "./sse.js";
import type {
  BudgetState,
  BudgetUpdate,
  Content,
  CreateScheduleOptions,
  CreateSessionOptions,
  CreateWebhookOptions,
  CreatedWebhook,
  Delivery,
  EventsPage,
  Files,
  ForkOptions,
  Goal,
  LogEvent,
  MessageAccepted,
  Notice,
  QueueItem,
  Receipt,
  RunResult,
  Schedule,
  Session,
  SessionPage,
  SessionStatus,
  Spending,
  Tool,
  WaitingCall,
  Webhook,
  WorkspaceFile,
} from "./types.js";

export interface AirlockOptions {
  /** Where the gateway listens, e.g. `http://127.0.0.1:7700`. */
  baseUrl: string;
  /** Sent as `Authorization: Bearer <apiKey>`. A page served by the gateway may instead rely on
   * the cookie that `POST /v1/login` sets. */
  apiKey?: string;
  /** The `fetch` to use; the global one by default. */
  fetch?: typeof fetch;
}

export interface SendOptions {
  /** `followup` (the default) waits for the next turn, `steer` joins the running turn, `inject`
   * is context for the next step and wakes nothing. */
  delivery?: Delivery;
  /** A retry with the same key and body answers the first answer and inserts nothing. */
  idempotencyKey?: string;
}

interface RunCommon {
  /** Answer 504 `run-timeout` after this long; the agent keeps working. */
  timeoutMs?: number;
  /** Stops waiting (the run goes on in the gateway). */
  signal?: AbortSignal;
}

/** A run in a new session (`model`, `system`) or in an existing one (`sessionId`, `delivery`). */
export type RunOptions =
  | (RunCommon & { sessionId?: undefined; model?: string; system?: string })
  | (RunCommon & { sessionId: string; delivery?: Delivery });

export interface EventsOptions {
  /** Start after this seq; from the log's beginning when absent. */
  after?: number;
  /** Ends the iteration. */
  signal?: AbortSignal;
  /** Called with the stream's `session.status` and subagent frames, and with the queue: as the
   * stream's `session.queue` frame lists it, then after each `agent/inbox/spliced` event. */
  onNotice?: (notice: Notice) => void;
  /** The first reconnection delay (doubling on each failure up to 30 s); by default the
   * stream's own `retry:` value. */
  retryMs?: number;
}

type Method = "GET" | "POST" | "PUT" | "PATCH" | "DELETE";

interface RequestInit {
  body?: unknown;
  headers?: Record<string, string>;
  signal?: AbortSignal | undefined;
}

const NOTICES = new Set<string>([
  "session.status",
  "session.queue",
  "subagent.started",
  "subagent.finished",
] satisfies Notice["event"][]);
const RETRYABLE = new Set([408, 429, 500, 502, 503, 504]);

const MAX_RETRY_MS = 30_000;

/** A client for one Airlock gateway. */
export class Airlock {
  readonly baseUrl: string;
  readonly #apiKey: string | undefined;
  readonly #fetch: typeof fetch;

  constructor(options: AirlockOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, "");
    this.#apiKey = options.apiKey;
    this.#fetch = options.fetch ?? ((input, init) => fetch(input, init));
  }

  // Sessions

  createSession(options: CreateSessionOptions = {}): Promise<Session> {
    return this.#json("POST", "/v1/sessions", { body: options });
  }

  getSession(sessionId: string): Promise<Session> {
    return this.#json("GET", session(sessionId));
  }

  /** Replaces what the session keeps as `metadata` (any JSON; `null`: nothing), e.g. a title. */
  setMetadata(sessionId: string, metadata: unknown): Promise<Session> {
    return this.#json("PATCH", session(sessionId), { body: { metadata } });
  }

  /** Sessions ordered by id; pass `nextCursor` as `cursor` for the next page. */
  listSessions(options: { cursor?: string; limit?: number } = {}): Promise<SessionPage> {
    return this.#json("GET", `/v1/sessions${query(options)}`);
  }

  status(sessionId: string): Promise<SessionStatus> {
    return this.#json("GET", `${session(sessionId)}/status`);
  }

  /** What the session's own responses spent (steps and compaction summaries). */
  usage(sessionId: string): Promise<Spending> {
    return this.#json("GET", `${session(sessionId)}/usage`);
  }

  /** What the responses since `since` (ms since the epoch) of the key's tenant spent; with an
   * admin key, every tenant's. */
  tenantUsage(options: { since?: number } = {}): Promise<Spending> {
    return this.#json("GET", `/v1/usage${query(options)}`);
  }

  /** The session's budget (`null`: none), what it spent and whether the budget holds it paused. */
  budget(sessionId: string): Promise<BudgetState> {
    return this.#json("GET", `${session(sessionId)}/budget`);
  }

  /** Replaces the session's budget whole (a limit left out is no limit; `{}` removes it) and
   * answers the state after the change: a paused session whose new budget is not spent resumes
   * where it stopped (`paused: false`). */
  setBudget(sessionId: string, budget: BudgetUpdate): Promise<BudgetState> {
    return this.#json("PATCH", `${session(sessionId)}/budget`, { body: budget });
  }

  /** The session's workspace: the files its code tools (`python`, `javascript`) wrote and those
   * uploaded for them. */
  files(sessionId: string): Promise<Files> {
    return this.#json("GET", `${session(sessionId)}/files`);
  }

  /** The bytes of the workspace file at `path` (`out/plot.png`). */
  async downloadFile(sessionId: string, path: string): Promise<Uint8Array> {
    const response = await this.#request("GET", file(sessionId, path));
    return new Uint8Array(await response.arrayBuffer());
  }

  /** Puts `data` (bytes, or text as UTF-8) in the workspace at `path`, making its directories and
   * replacing a file there, for the session's code to read; bounded by the gateway's body limit
   * and the tenant's workspace quota (507 `workspace-full`). */
  uploadFile(sessionId: string, path: string, data: Uint8Array<ArrayBuffer> | string): Promise<WorkspaceFile> {
    const bytes = typeof data === "string" ? new TextEncoder().encode(data) : data;
    return this.#json("PUT", file(sessionId, path), { body: bytes });
  }

  /** Removes the workspace file at `path`. */
  removeFile(sessionId: string, path: string): Promise<void> {
    return this.#call("DELETE", file(sessionId, path));
  }

  /** Subscribes a URL to events of the tenant's sessions (or of `sessionId`); the answer's
   * `secret`, shown only now, verifies each delivery (`verifyWebhook`). */
  createWebhook(options: CreateWebhookOptions): Promise<CreatedWebhook> {
    return this.#json("POST", "/v1/webhooks", { body: options });
  }

  /** The tenant's webhook subscriptions, oldest first. */
  async webhooks(): Promise<Webhook[]> {
    return (await this.#json<{ items: Webhook[] }>("GET", "/v1/webhooks")).items;
  }

  /** One subscription: whether it is failing and why, what it delivered and what waits. */
  webhook(webhookId: string): Promise<Webhook> {
    return this.#json("GET", webhook(webhookId));
  }

  /** Takes a failing subscription back: what is logged from now on is delivered. */
  resumeWebhook(webhookId: string): Promise<Webhook> {
    return this.#json("POST", `${webhook(webhookId)}/resume`);
  }

  /** Deletes a subscription and the deliveries waiting for it. */
  deleteWebhook(webhookId: string): Promise<void> {
    return this.#call("DELETE", webhook(webhookId));
  }

  /** Sends `content` at each due time of `cron` in `timezone` to `sessionId`, or to a session
   * made from `session` (a new one each time with `fresh`). */
  createSchedule(options: CreateScheduleOptions): Promise<Schedule> {
    return this.#json("POST", "/v1/schedules", { body: options });
  }

  /** The tenant's schedules, oldest first. */
  async schedules(): Promise<Schedule[]> {
    return (await this.#json<{ items: Schedule[] }>("GET", "/v1/schedules")).items;
  }

  /** One schedule: its next due time and what it did. */
  schedule(scheduleId: string): Promise<Schedule> {
    return this.#json("GET", schedule(scheduleId));
  }

  /** Pauses a schedule: it sends nothing until resumed. */
  pauseSchedule(scheduleId: string): Promise<Schedule> {
    return this.#json("POST", `${schedule(scheduleId)}/pause`);
  }

  /** Resumes a schedule from its first due time after now. */
  resumeSchedule(scheduleId: string): Promise<Schedule> {
    return this.#json("POST", `${schedule(scheduleId)}/resume`);
  }

  /** Deletes a schedule (the sessions it made stay). */
  deleteSchedule(scheduleId: string): Promise<void> {
    return this.#call("DELETE", schedule(scheduleId));
  }

  async children(sessionId: string): Promise<Session[]> {
    return (await this.#json<{ items: Session[] }>("GET", `${session(sessionId)}/children`)).items;
  }

  /** Cancels the session and refuses its input from now on; its log stays readable. */
  async disposeSession(sessionId: string): Promise<void> {
    await this.#call("DELETE", session(sessionId));
  }

  async tools(): Promise<Tool[]> {
    return (await this.#json<{ items: Tool[] }>("GET", "/v1/tools")).items;
  }

  // Input

  /** Enqueues a message; resolves once it is durable, not when the agent has answered. */
  send(sessionId: string, content: Content, options: SendOptions = {}): Promise<MessageAccepted> {
    const { delivery, idempotencyKey } = options;
    return this.#json("POST", `${session(sessionId)}/messages`, {
      body: { content, delivery },
      headers: idempotencyKey === undefined ? {} : { "idempotency-key": idempotencyKey },
    });
  }

  receipt(sessionId: string, messageId: string): Promise<Receipt> {
    return this.#json("GET", `${session(sessionId)}/messages/${segment(messageId)}`);
  }

  /** The pending items: `next-step` first, then `next-turn`. */
  async listQueue(sessionId: string): Promise<QueueItem[]> {
    return (await this.#json<{ items: QueueItem[] }>("GET", `${session(sessionId)}/queue`)).items;
  }

  /** Replaces a pending item's content, keeping its id, place and delivery. */
  async editQueued(sessionId: string, messageId: string, content: Content): Promise<void> {
    await this.#call("PATCH", queued(sessionId, messageId), { body: { content } });
  }

  async removeQueued(sessionId: string, messageId: string): Promise<void> {
    await this.#call("DELETE", queued(sessionId, messageId));
  }

  /** Turns a queued followup into steering for the running turn (409 `steer-unavailable` when
   * the agent is idle). */
  async steerQueued(sessionId: string, messageId: string): Promise<void> {
    await this.#call("POST", `${queued(sessionId, messageId)}/steer`);
  }

  /** Cancels the running turn; `keepInbox: false` clears the queue first. */
  async cancel(sessionId: string, options: { keepInbox?: boolean } = {}): Promise<void> {
    await this.#call("POST", `${session(sessionId)}/cancel`, { body: options });
  }

  /** Starts summarizing an idle session's conversation; the result is a `context/compaction`
   * event. */
  async compact(sessionId: string): Promise<void> {
    await this.#call("POST", `${session(sessionId)}/compact`, { body: {} });
  }

  // A person in the loop

  /** The calls of the running step that wait, in the order the model asked for them: `kind`
   * `approval` (answer with `approve` or `deny`) or `client` (answer with `postToolResult`).
   * Empty at rest. A call starts waiting with its `tool/approval` event (state `requested`), or
   * its `tool/call` event with `client: true`, on `events()`. */
  async toolCalls(sessionId: string): Promise<WaitingCall[]> {
    const path = `${session(sessionId)}/tool-calls${query({ state: "waiting" })}`;
    return (await this.#json<{ items: WaitingCall[] }>("GET", path)).items;
  }

  /** Approves a call that waits for a person: it runs now. 404 `tool-call-not-found` for a call
   * the log never had; 409 `not-waiting` for one that has its answer or waits for a result. */
  async approve(sessionId: string, callId: string): Promise<void> {
    await this.#call("POST", `${toolCall(sessionId, callId)}/approve`, { body: {} });
  }

  /** Denies a call that waits for a person: it does not run, and the model sees the error
   * `DENIED_BY_USER` with `reason`. */
  async deny(sessionId: string, callId: string, options: { reason?: string } = {}): Promise<void> {
    await this.#call("POST", `${toolCall(sessionId, callId)}/deny`, { body: options });
  }

  /** Answers a client tool's call with its result; with `isError` the model sees it as the error
   * `CLIENT_TOOL_ERROR`. 409 `not-waiting` for a call that has its result already or waits for
   * an approval. */
  async postToolResult(
    sessionId: string,
    callId: string,
    content: Content,
    options: { isError?: boolean } = {},
  ): Promise<void> {
    await this.#call("POST", `${toolCall(sessionId, callId)}/result`, {
      body: { content, ...options },
    });
  }

  /** A new session whose log is a copy of this one's through `atSeq` (a turn open there is
   * closed, pending input cancelled), with `forkedFrom`; the source is untouched. 409
   * `seq-not-logged` for a seq not logged yet, `session-conflict` for a `sessionId` that exists. */
  fork(sessionId: string, options: ForkOptions = {}): Promise<Session> {
    return this.#json("POST", `${session(sessionId)}/fork`, { body: options });
  }

  // Goals

  getGoal(sessionId: string): Promise<Goal> {
    return this.#json("GET", `${session(sessionId)}/goal`);
  }

  setGoal(
    sessionId: string,
    objective: string,
    options: { maxRounds?: number } = {},
  ): Promise<Goal> {
    return this.#json("PUT", `${session(sessionId)}/goal`, { body: { objective, ...options } });
  }

  pauseGoal(sessionId: string): Promise<Goal> {
    return this.#json("POST", `${session(sessionId)}/goal/pause`);
  }

  resumeGoal(sessionId: string): Promise<Goal> {
    return this.#json("POST", `${session(sessionId)}/goal/resume`);
  }

  completeGoal(sessionId: string): Promise<Goal> {
    return this.#json("POST", `${session(sessionId)}/goal/complete`);
  }

  async clearGoal(sessionId: string): Promise<void> {
    await this.#call("DELETE", `${session(sessionId)}/goal`);
  }

  // Results

  /** Sends `content` and resolves with everything up to the next idle: in a new session unless
   * `sessionId` is given. */
  run(content: Content, options: RunOptions = {}): Promise<RunResult> {
    const { sessionId, signal, ...fields } = options;
    const path = sessionId === undefined ? "/v1/runs" : `${session(sessionId)}/runs`;
    return this.#json("POST", path, { body: { content, ...fields }, signal });
  }

  /** One JSON page of a session's log. */
  eventsPage(
    sessionId: string,
    options: { after?: number; limit?: number } = {},
  ): Promise<EventsPage> {
    return this.#json("GET", `${session(sessionId)}/events/page${query(options)}`);
  }

  /**
   * A session's log events, then live ones as they are committed, each exactly once and in seq
   * order. A dropped connection is resumed with `Last-Event-ID` after a backoff, also across a
   * gateway restart. It goes on until `signal` aborts or the loop stops; it ends by itself only
   * for a disposed session, and throws an `AirlockError` that retrying cannot fix (404, 401, …).
   */
  async *events(sessionId: string, options: EventsOptions = {}): AsyncGenerator<LogEvent, void> {
    const { signal, onNotice } = options;
    let last = options.after ?? -1;
    // The inbox lists, once a `session.queue` frame listed them: the gateway sends the queue
    // once, where the log read meets the live events, and every later change as an
    // `agent/inbox/spliced` event, applied here.
    let queue: Lists | undefined;
    let retryMs = options.retryMs;
    let failures = 0;
    while (!signal?.aborted) {
      let waitMs = 0;
      try {
        const response = await this.#request("GET", `${session(sessionId)}/events`, {
          headers: {
            accept: "text/event-stream",
            ...(last >= 0 && { "last-event-id": `${last}` }),
          },
          signal,
        });
        const frames = readFrames(response.body!, (ms) => {
          if (options.retryMs === undefined) retryMs = ms;
        });
        for await (const frame of frames) {
          if (signal?.aborted) return;
          failures = 0;
          if (frame.event === "session.event") {
            const event = JSON.parse(frame.data) as LogEvent;
            if (event.seq <= last) continue;
            last = event.seq;
            if (event.type === "agent/inbox/spliced" && queue) {
              const items = spliced(queue, event.data as Splice);
              onNotice?.({ event: "session.queue", data: { sessionId, items } } as Notice);
            }
            yield event;
          } else if (frame.event !== undefined && NOTICES.has(frame.event)) {
            const notice = { event: frame.event, data: JSON.parse(frame.data) } as Notice;
            if (notice.event === "session.queue") queue = listed(notice.data.items);
            onNotice?.(notice);
          }
        }
        // The gateway ended the stream: it is stopping, or the session is disposed (then the
        // stream sends the log and ends, and so do we).
        if ((await this.getSession(sessionId)).disposed) return;
      } catch (error) {
        if (signal?.aborted) return;
        if (error instanceof AirlockError) {
          if (!RETRYABLE.has(error.status)) throw error;
          waitMs = (error.retryAfter ?? 0) * 1000;
        } else if (!(error instanceof TypeError)) {
          throw error; // fetch reports a failed or dropped connection as a TypeError
        }
      }
      const backoff = (retryMs ?? 1000) * 2 ** failures;
      failures += 1;
      await sleep(Math.max(waitMs, Math.min(backoff, MAX_RETRY_MS)), signal);
    }
  }

  // Plumbing

  async #json<T>(method: Method, path: string, init?: RequestInit): Promise<T> {
    return (await (await this.#request(method, path, init)).json()) as T;
  }

  /** A request whose answer says nothing more than its status. */
  async #call(method: Method, path: string, init?: RequestInit): Promise<void> {
    await (await this.#request(method, path, init)).arrayBuffer();
  }

  /** Sends one request; a status outside 2xx throws its `AirlockError`. */
  async #request(method: Method, path: string, init: RequestInit = {}): Promise<Response> {
    const headers: Record<string, string> = { ...init.headers };
    if (this.#apiKey !== undefined) headers.authorization = `Bearer ${this.#apiKey}`;
    // Bytes go as they are (a file); anything else as JSON.
    const bytes = init.body instanceof Uint8Array;
    if (init.body !== undefined) {
      headers["content-type"] = bytes ? "application/octet-stream" : "application/json";
    }
    const response = await this.#fetch(this.baseUrl + path, {
      method,
      headers,
      body: init.body === undefined ? null : bytes ? (init.body as Uint8Array<ArrayBuffer>) : JSON.stringify(init.body),
      signal: init.signal ?? null,
    });
    if (!response.ok) throw await AirlockError.from(response);
    return response;
  }
}
