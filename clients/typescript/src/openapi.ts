// Generated from the gateway's /openapi.json by `npm run generate`; do not edit.

export interface paths {
    "/healthz": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Liveness: the process answers. */
        get: operations["healthz"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/metrics": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Prometheus metrics (`docs/http-api.md`): the text format 0.0.4, or OpenMetrics when the
         *     scrape's `Accept` names `application/openmetrics-text`.
         */
        get: operations["metrics"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/openapi.json": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** This document. */
        get: operations["getOpenApi"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/readyz": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Readiness: the gateway takes requests. */
        get: operations["readyz"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/events": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * `GET /v1/events`: sessions added and removed, and every session's status changes (the key's
         *     tenant's sessions only, unless it is an admin key).
         */
        get: operations["getEvents"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/login": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Signs the browser in: the key of the `Authorization` header comes back as an HttpOnly,
         *     SameSite=Strict cookie, which the page's requests and event streams then carry.
         */
        post: operations["login"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/logout": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Signs the browser out: the key cookie is cleared. */
        post: operations["logout"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/runs": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Creates a session, sends it a message and answers the result of the interval it starts. */
        post: operations["runInNewSession"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sessions": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Lists sessions, a page at a time: the key's tenant's only, unless it is an admin key. */
        get: operations["listSessions"];
        put?: never;
        /**
         * Creates a session, or answers the existing one when the same `sessionId` comes with the same
         *     fields.
         */
        post: operations["createSession"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sessions/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Reads one session. */
        get: operations["getSession"];
        put?: never;
        post?: never;
        /**
         * Disposes a session: cancels it and clears its inbox (parked items too); its log stays readable
         *     and later input is refused.
         */
        delete: operations["disposeSession"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sessions/{id}/cancel": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Cancels the running turn; on an idle agent it is a no-op. */
        post: operations["cancelSession"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sessions/{id}/children": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Lists a session's child sessions (its subagents), oldest first, with their status. */
        get: operations["listChildren"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sessions/{id}/compact": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Summarizes the conversation now, as maintenance of an idle session: status stays `idle`, and a
         *     message sent meanwhile is accepted and runs once the `context/compaction` event is logged.
         */
        post: operations["compactSession"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sessions/{id}/events": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * A session's log: an SSE stream by default (resumable, no gap, no duplicate), or a JSON page
         *     with `Accept: application/json` or `?format=json`.
         * @description The stream starts with `: connected` and `retry: 1000`, a `session.status` snapshot and, when
         *     the inbox is not empty, a `session.queue` snapshot; then each log event as `id: <seq>`,
         *     `event: session.event`, `data: <envelope>`, with `session.status` and `session.queue` frames
         *     (no `id:`) and `: ping` comments every 15 s. It does not end at idle.
         */
        get: operations["getSessionEvents"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sessions/{id}/goal": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The session's goal. */
        get: operations["getGoal"];
        /**
         * Sets the session's goal, replacing any other: active and armed, rounds start at the next
         *     whole-agent idle.
         */
        put: operations["setGoal"];
        post?: never;
        /** Removes the goal (a `goal/change {cleared: true, goalId}` event). */
        delete: operations["clearGoal"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sessions/{id}/goal/complete": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Marks the goal complete: no more rounds. */
        post: operations["completeGoal"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sessions/{id}/goal/pause": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Stops goal rounds until `resume`. */
        post: operations["pauseGoal"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sessions/{id}/goal/resume": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Makes a paused (or disarmed) goal active and armed again. */
        post: operations["resumeGoal"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sessions/{id}/messages": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Sends a message: answered once it is durable, never when the agent is done with it. */
        post: operations["sendMessage"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sessions/{id}/messages/{message_id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** A message's receipt: where it waits or when it was claimed or canceled; never a result. */
        get: operations["getReceipt"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sessions/{id}/queue": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The pending items of a session. */
        get: operations["getQueue"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sessions/{id}/queue/{message_id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        post?: never;
        /** Cancels a queued message (a canceled splice in the log). */
        delete: operations["removeQueueItem"];
        options?: never;
        head?: never;
        /** Replaces the content of a queued message; it keeps its id and place. */
        patch: operations["editQueueItem"];
        trace?: never;
    };
    "/v1/sessions/{id}/queue/{message_id}/steer": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Turns a queued followup into steering for the running turn. */
        post: operations["steerQueueItem"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sessions/{id}/runs": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Sends a message and answers the result of the interval it starts: from its receipt through
         *     the next whole-agent idle, whatever else ran in it.
         */
        post: operations["runInSession"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/sessions/{id}/status": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** A session's status and log length. */
        get: operations["getSessionStatus"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/tools": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Lists every tool with its JSON Schema; create a session with `tools: [names]` to offer only
         *     some of them to its model.
         */
        get: operations["listTools"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
}
export type webhooks = Record<string, never>;
export interface components {
    schemas: {
        /** @description `{accepted: true}`: the request is durable and will take effect. */
        Accepted: {
            /** @description Always `true`. */
            accepted: boolean;
        };
        /** @description How to cancel. */
        CancelBody: {
            /** @description Keep the queue, parked (default `true`); `false` clears it. */
            keepInbox?: boolean | null;
        };
        /** @description The child sessions (subagents) of a session. */
        ChildList: {
            /** @description Oldest first, each with its status. */
            items: components["schemas"]["SessionView"][];
        };
        /** @description `compact` takes no settings yet. */
        CompactBody: Record<string, unknown>;
        /** @description A non-empty string (one text block), or a non-empty list of `text` blocks `{type, text}` and `image` blocks `{type, mediaType, data}`; no block is empty. */
        Content: string | ({
            text: string;
            /** @enum {string} */
            type: "text";
        } | {
            /** @description The image, in padded standard base64. */
            data: string;
            /** @enum {string} */
            mediaType: "image/png" | "image/jpeg" | "image/gif" | "image/webp";
            /** @enum {string} */
            type: "image";
        })[];
        /** @description The new session; every field is optional. */
        CreateBody: {
            /** @description Anything the caller wants kept with the session (any JSON). */
            metadata?: unknown;
            /** @description The model spec, e.g. `demo` or `openai:gpt-4o-mini`; the gateway's default when absent. */
            model?: string | null;
            /**
             * @description 1 to 200 letters, digits, `.`, `_`, `:` or `-`, starting with a letter or digit; a fresh
             *     UUID when absent.
             */
            sessionId?: string | null;
            /** @description The system prompt. */
            system?: string | null;
            /** @description The names of the tools the agent may call. */
            tools?: ("agent" | "echo" | "goal" | "interrupt_agent" | "list_agents" | "send_message" | "spawn_agent")[] | null;
        };
        /** @description New content for a queued message. */
        EditBody: {
            content: components["schemas"]["Content"];
        };
        /** @description The body of every error answer: `{"error": {code, message, details}}`. */
        ErrorBody: {
            /** @description What went wrong. */
            error: components["schemas"]["ErrorDetail"];
        };
        /** @description The inside of an [`ErrorBody`]. */
        ErrorDetail: {
            /**
             * @description A kebab-case code for programs, e.g. `session-not-found`.
             * @example session-not-found
             */
            code: string;
            /** @description More facts (a 400 names the field); `{}` when there is nothing to add. */
            details: Record<string, unknown>;
            /** @description One sentence for a person: what was wrong and what to do. */
            message: string;
        };
        /** @description A JSON page of a session's log. */
        EventsPage: {
            events: Record<string, unknown>[];
            /** @description Whether more events follow this page. */
            hasMore: boolean;
            /**
             * Format: int64
             * @description The seq of the last event in the log; -1 for an empty log.
             */
            lastSeq: number;
            /**
             * Format: int64
             * @description Pass as `after` for the next page: the last returned seq, or the given `after`.
             */
            nextAfter: number;
        };
        /** @description A session's goal, as its last `goal/change` event says. */
        Goal: {
            blocked?: null | components["schemas"]["GoalReason"];
            /** @description Fresh for each goal set. */
            id: string;
            /**
             * Format: int32
             * @description Rounds allowed.
             */
            maxRounds: number;
            /** @description What the rounds work toward. */
            objective: string;
            paused?: null | components["schemas"]["GoalReason"];
            /** @description Where it stands. */
            phase: components["schemas"]["Phase"];
            /**
             * Format: int32
             * @description Goes up by one with every change.
             */
            revision: number;
            /**
             * Format: int32
             * @description Rounds enqueued so far.
             */
            roundsStarted: number;
        };
        /** @description Why a goal is blocked or paused. */
        GoalReason: {
            /**
             * @description Blocked: `round-limit`, or `model` when the model's `goal` tool blocked it. Paused:
             *     `request` (`POST …/goal/pause`), `cancel` (a cancel hit a round), `round-removed` or
             *     `round-replaced` (a queued round was removed or edited through the queue API).
             */
            code: string;
            /** @description What stopped it, for a person. */
            message: string;
        };
        /** @description A goal as the API shows it. */
        GoalView: components["schemas"]["Goal"] & {
            /** @description Rounds run in this process; a goal loaded after a restart is disarmed until resumed. */
            armed: boolean;
        };
        /** @description A frame of the cross-session stream. */
        HubStream: {
            data: string;
            /** @enum {string} */
            event: "session.added";
        } | {
            data: string;
            /** @enum {string} */
            event: "session.removed";
        } | {
            data: string;
            /** @enum {string} */
            event: "session.status";
        };
        /** @description Whom a key acts for. */
        Identity: {
            /** @description It reaches every tenant's sessions (always, when the gateway has no keys). */
            admin: boolean;
            /** @description Its tenant; `null` when the gateway has no keys. */
            tenant?: string | null;
        };
        /** @description `{messageId, seq}`: the message is durable. */
        MessageAccepted: {
            /** @description The id of the new message. */
            messageId: string;
            /**
             * Format: int64
             * @description The seq of the splice that inserted it.
             */
            seq: number;
        };
        /** @description A message for a new session, whose interval the caller owns. */
        NewRunBody: {
            content: components["schemas"]["Content"];
            /** @description The model spec, e.g. `demo` or `openai:gpt-4o-mini`; the gateway's default when absent. */
            model?: string | null;
            /** @description The system prompt. */
            system?: string | null;
            /**
             * Format: int64
             * @description Give up waiting after this many milliseconds, at most a day (504 `run-timeout`); the
             *     agent keeps working.
             */
            timeoutMs?: number | null;
        };
        /** @description Queue counts per inbox list. */
        Pending: {
            /** @description Steering and context waiting for the next step. */
            nextStep: number;
            /** @description Followups waiting for a turn. */
            nextTurn: number;
        };
        /**
         * @description Where a goal stands.
         * @enum {string}
         */
        Phase: "active" | "paused" | "blocked" | "complete";
        /** @description `{messageId}`: the queue operation is durable. */
        QueueOpDone: {
            messageId: string;
        };
        /** @description The pending items of a session. */
        QueueView: {
            items: {
                /**
                 * @description How the message joins the session: `followup` waits for the next turn (the default), `steer` joins the running turn at its next step and wakes an idle agent, `inject` is context for the next step and wakes nothing.
                 * @enum {string}
                 */
                delivery: "followup" | "steer" | "inject";
                /** @description The queued message: `{id, role, content, source}`. */
                message: Record<string, unknown>;
                messageId: string;
                /**
                 * @description The inbox list: `next-turn` (followups) or `next-step` (steering and context).
                 * @enum {string}
                 */
                target: "next-turn" | "next-step";
            }[];
        };
        /** @description `{messageId, state, target, insertedSeq, claimedSeq?, turn?, canceledSeq?}`. */
        Receipt: {
            /**
             * Format: int64
             * @description The seq of the splice that canceled it, once canceled.
             */
            canceledSeq?: number | null;
            /**
             * Format: int64
             * @description The seq of the splice that claimed it, once claimed.
             */
            claimedSeq?: number | null;
            /**
             * Format: int64
             * @description The seq of the splice that inserted it.
             */
            insertedSeq: number;
            /** @description The message. */
            messageId: string;
            /**
             * @description Where the message is: waiting, taken by a turn, or canceled.
             * @enum {string}
             */
            state: "pending" | "claimed" | "canceled";
            /**
             * @description The inbox list: `next-turn` (followups) or `next-step` (steering and context).
             * @enum {string}
             */
            target: "next-turn" | "next-step";
            /**
             * Format: int32
             * @description The turn that claimed it, once claimed.
             */
            turn?: number | null;
        };
        /** @description A message whose interval the caller owns. */
        RunBody: {
            content: components["schemas"]["Content"];
            /**
             * @description How the message joins the session: `followup` waits for the next turn (the default), `steer` joins the running turn at its next step and wakes an idle agent, `inject` is context for the next step and wakes nothing.
             * @enum {string}
             */
            delivery?: "followup" | "steer" | "inject";
            /**
             * Format: int64
             * @description Give up waiting after this many milliseconds, at most a day (504 `run-timeout`); the
             *     agent keeps working.
             */
            timeoutMs?: number | null;
        };
        /** @description `RunResult`: what an owned interval produced. */
        RunResult: components["schemas"]["Summary"] & {
            events: Record<string, unknown>[];
            /**
             * Format: int64
             * @description The interval's first seq: the message's insert splice.
             */
            firstSeq: number;
            /**
             * Format: int64
             * @description The interval's last seq: the last event before whole-agent idle.
             */
            lastSeq: number;
            /** @description The message that opened the interval. */
            messageId: string;
            /** @description The session. */
            sessionId: string;
        };
        /** @description A frame of an owned run's stream. */
        RunStream: {
            data: string;
            /** @enum {string} */
            event: "session.event";
            id: string;
        } | {
            data: string;
            /** @enum {string} */
            event: "session.status";
        } | {
            data: string;
            /** @enum {string} */
            event: "session.queue";
        } | {
            data: string;
            /** @enum {string} */
            event: "subagent.started";
        } | {
            data: string;
            /** @enum {string} */
            event: "subagent.finished";
        } | {
            data: string;
            /** @enum {string} */
            event: "run.result";
        } | {
            data: string;
            /** @enum {string} */
            event: "error";
        };
        /** @description A message to send. */
        SendBody: {
            content: components["schemas"]["Content"];
            /**
             * @description How the message joins the session: `followup` waits for the next turn (the default), `steer` joins the running turn at its next step and wakes an idle agent, `inject` is context for the next step and wakes nothing.
             * @enum {string}
             */
            delivery?: "followup" | "steer" | "inject";
        };
        /** @description A page of sessions. */
        SessionPage: {
            items: components["schemas"]["SessionView"][];
            /** @description Pass as `cursor` for the next page; `null` on the last one. */
            nextCursor?: string | null;
        };
        /** @description A frame of a session's stream. */
        SessionStream: {
            data: string;
            /** @enum {string} */
            event: "session.event";
            id: string;
        } | {
            data: string;
            /** @enum {string} */
            event: "session.status";
        } | {
            data: string;
            /** @enum {string} */
            event: "session.queue";
        } | {
            data: string;
            /** @enum {string} */
            event: "subagent.started";
        } | {
            data: string;
            /** @enum {string} */
            event: "subagent.finished";
        };
        /** @description `Session` as the API shows it. */
        SessionView: {
            /**
             * Format: int64
             * @description Milliseconds since the Unix epoch.
             */
            createdAt: number;
            /** @description Disposed: the log stays readable, input is refused with 409 `session-disposed`. */
            disposed: boolean;
            goal?: null | components["schemas"]["GoalView"];
            /**
             * Format: int64
             * @description The seq of the last log event; -1 for an empty log.
             */
            lastSeq: number;
            model: string;
            /** @description The session that spawned this one, for a subagent. */
            parentSessionId?: string | null;
            /** @description How many messages wait in each inbox list. */
            pending: components["schemas"]["Pending"];
            sessionId: string;
            /**
             * @description Whole-agent status.
             * @enum {string}
             */
            status: "idle" | "running";
            /**
             * Format: int64
             * @description Milliseconds since the Unix epoch.
             */
            updatedAt: number;
        };
        /** @description A new goal. */
        SetBody: {
            /**
             * Format: int32
             * @description Rounds allowed before the goal is `blocked {code: "round-limit"}`; 10 when absent.
             */
            maxRounds?: number | null;
            /** @description What the rounds work toward: some text besides spaces, tabs and line breaks. */
            objective: string;
        };
        /** @description `GET /v1/sessions/{id}/status`. */
        StatusView: {
            /**
             * Format: int64
             * @description The seq of the last log event; -1 for an empty log.
             */
            lastSeq: number;
            sessionId: string;
            /**
             * @description Whole-agent status.
             * @enum {string}
             */
            status: "idle" | "running";
        };
        /** @description What the events of an interval add up to; it describes the interval, never one message. */
        Summary: {
            /** @description Text of the last committed `assistant/message` (`""` if none, or if it was empty). */
            finalResponse: string;
            /**
             * @description The last `turn/end`'s reason kind (`completed`, `max-tokens`, `error`, ...; `null` if no
             *     turn ended).
             */
            finishReason?: string | null;
            /**
             * @description Token usage summed over the assistant messages that carried it: `{inputTokens,
             *     outputTokens, cacheReadTokens?, reasoningTokens?}`; absent when the provider sent none.
             */
            usage?: Record<string, unknown> | null;
        };
        /** @description The tools. */
        ToolList: {
            /** @description By name. */
            items: components["schemas"]["ToolView"][];
        };
        /** @description A tool, as a session's `tools` field names it. */
        ToolView: {
            description: string;
            name: string;
            /** @description `builtin`, or `plugin:<name>`. */
            origin: string;
            /** @description Whether calls may run alongside other parallel-safe calls. */
            parallelSafe: boolean;
            /** @description JSON Schema of the arguments. */
            parameters: Record<string, unknown>;
        };
    };
    responses: never;
    parameters: never;
    requestBodies: never;
    headers: never;
    pathItems: never;
}
export type $defs = Record<string, never>;
export interface operations {
    healthz: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description `ok` */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description `forbidden-host` (a gateway without keys answers only loopback names) or `cross-origin` (a page elsewhere may not change anything) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    metrics: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The metrics, in the text format the scrape asked for */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "text/plain; version=0.0.4; charset=utf-8": string;
                    "application/openmetrics-text; version=1.0.0; charset=utf-8": string;
                };
            };
            /** @description `forbidden-host` (a gateway without keys answers only loopback names) or `cross-origin` (a page elsewhere may not change anything) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    getOpenApi: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description This OpenAPI document */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": Record<string, unknown>;
                };
            };
            /** @description `forbidden-host` (a gateway without keys answers only loopback names) or `cross-origin` (a page elsewhere may not change anything) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    readyz: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description `ready` */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description `forbidden-host` (a gateway without keys answers only loopback names) or `cross-origin` (a page elsewhere may not change anything) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    getEvents: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description An SSE stream of `session.added`, `session.removed` and `session.status` frames, each with JSON data naming the `sessionId`. */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "text/event-stream": components["schemas"]["HubStream"];
                };
            };
            /** @description `unauthorized`: no API key, or one that is not valid or was revoked */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `forbidden-host` (a gateway without keys answers only loopback names) or `cross-origin` (a page elsewhere may not change anything) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `quota-exceeded` or `rate-limited`: the key's tenant is at its limit; retry after `Retry-After` */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    login: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Signed in; `Set-Cookie` holds the key */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Identity"];
                };
            };
            /** @description `unauthorized`: no key, or not a valid one */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `forbidden-host` (a gateway without keys answers only loopback names) or `cross-origin` (a page elsewhere may not change anything) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `storage-unavailable`: retry after `Retry-After` */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    logout: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Signed out */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description `unauthorized`: no API key, or one that is not valid or was revoked */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `forbidden-host` (a gateway without keys answers only loopback names) or `cross-origin` (a page elsewhere may not change anything) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    runInNewSession: {
        parameters: {
            query?: {
                /** @description `true`: the interval as SSE, ending with `event: run.result`. */
                stream?: boolean;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["NewRunBody"];
            };
        };
        responses: {
            /** @description The interval's result (`sessionId` names the new session); with `?stream=true` the interval as SSE, as for a session's runs */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RunResult"];
                    "text/event-stream": components["schemas"]["RunStream"];
                };
            };
            /** @description `bad-request`: details name the field */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `unauthorized`: no API key, or one that is not valid or was revoked */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `forbidden-host` (a gateway without keys answers only loopback names) or `cross-origin` (a page elsewhere may not change anything) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `payload-too-large` */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `unsupported-media-type`: a body that is not JSON */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `quota-exceeded` or `rate-limited`: the key's tenant is at its limit; retry after `Retry-After` */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `core-failed`: the core trapped; the session was rebuilt from its log and the input was not applied, so send it again */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `storage-unavailable`: retry after `Retry-After` */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `run-timeout`: details give `messageId` and `lastSeq`; the agent keeps working */
            504: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    listSessions: {
        parameters: {
            query?: {
                /** @description The `nextCursor` of the previous page. */
                cursor?: string;
                /** @description Sessions per page: 1 to 1000, default 100. */
                limit?: number;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A page of sessions */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SessionPage"];
                };
            };
            /** @description `bad-request`: a query parameter does not fit (the field is named) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `unauthorized`: no API key, or one that is not valid or was revoked */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `forbidden-host` (a gateway without keys answers only loopback names) or `cross-origin` (a page elsewhere may not change anything) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `storage-unavailable`: retry after `Retry-After` */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    createSession: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** @description Optional: no body counts as `{}`. */
        requestBody?: {
            content: {
                "application/json": components["schemas"]["CreateBody"];
            };
        };
        responses: {
            /** @description It existed with the same fields */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SessionView"];
                };
            };
            /** @description Created */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SessionView"];
                };
            };
            /** @description `bad-request`: details name the field */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `unauthorized`: no API key, or one that is not valid or was revoked */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `forbidden-host` (a gateway without keys answers only loopback names) or `cross-origin` (a page elsewhere may not change anything) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `session-conflict`: it exists with other fields */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `payload-too-large` */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `unsupported-media-type`: a body that is not JSON */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `quota-exceeded` or `rate-limited`: the key's tenant is at its limit; retry after `Retry-After` */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `core-failed`: the core trapped; the session was rebuilt from its log and the input was not applied, so send it again */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `storage-unavailable`: retry after `Retry-After` */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    getSession: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The session id. */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The session */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SessionView"];
                };
            };
            /** @description `unauthorized`: no API key, or one that is not valid or was revoked */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `forbidden-host` (a gateway without keys answers only loopback names) or `cross-origin` (a page elsewhere may not change anything) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `session-not-found` */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `storage-unavailable`: retry after `Retry-After` */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    disposeSession: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The session id. */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Disposed (also when it already was) */
            202: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Accepted"];
                };
            };
            /** @description `unauthorized`: no API key, or one that is not valid or was revoked */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `forbidden-host` (a gateway without keys answers only loopback names) or `cross-origin` (a page elsewhere may not change anything) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `session-not-found` */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `core-failed`: the core trapped; the session was rebuilt from its log and the input was not applied, so send it again */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `storage-unavailable`: retry after `Retry-After` */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    cancelSession: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The session id. */
                id: string;
            };
            cookie?: never;
        };
        /** @description Optional: no body counts as `{}`. */
        requestBody?: {
            content: {
                "application/json": components["schemas"]["CancelBody"];
            };
        };
        responses: {
            /** @description Durable */
            202: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Accepted"];
                };
            };
            /** @description `bad-request`: details name the field */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `unauthorized`: no API key, or one that is not valid or was revoked */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `forbidden-host` (a gateway without keys answers only loopback names) or `cross-origin` (a page elsewhere may not change anything) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `session-not-found` */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `session-disposed`: its log stays readable, it takes no input */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `payload-too-large` */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `unsupported-media-type`: a body that is not JSON */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `core-failed`: the core trapped; the session was rebuilt from its log and the input was not applied, so send it again */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `storage-unavailable`: retry after `Retry-After` */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    listChildren: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The session id. */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Its children */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ChildList"];
                };
            };
            /** @description `unauthorized`: no API key, or one that is not valid or was revoked */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `forbidden-host` (a gateway without keys answers only loopback names) or `cross-origin` (a page elsewhere may not change anything) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `session-not-found` */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `storage-unavailable`: retry after `Retry-After` */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    compactSession: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The session id. */
                id: string;
            };
            cookie?: never;
        };
        /** @description Optional: no body counts as `{}`. */
        requestBody?: {
            content: {
                "application/json": components["schemas"]["CompactBody"];
            };
        };
        responses: {
            /** @description The compaction started; its `context/compaction` event follows */
            202: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Accepted"];
                };
            };
            /** @description `bad-request`: details name the field */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `unauthorized`: no API key, or one that is not valid or was revoked */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `forbidden-host` (a gateway without keys answers only loopback names) or `cross-origin` (a page elsewhere may not change anything) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `session-not-found` */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `session-running` (a turn runs: it compacts by itself when the context fills), `compacting` (one runs already), `nothing-to-compact`, or `session-disposed` */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `payload-too-large` */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `unsupported-media-type`: a body that is not JSON */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `core-failed`: the core trapped; the session was rebuilt from its log and the input was not applied, so send it again */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `storage-unavailable`: retry after `Retry-After` */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    getSessionEvents: {
        parameters: {
            query?: {
                /** @description Only events with a larger seq (`Last-Event-ID` wins over it on the stream). */
                after?: number;
                format?: "json";
                /** @description Events per JSON page: 1 to 5000, default 500. */
                limit?: number;
            };
            header?: {
                /** @description Resume the stream after this seq (the `id:` of the last frame seen). */
                "Last-Event-ID"?: string;
            };
            path: {
                /** @description The session id. */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The SSE stream, or a JSON page */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "text/event-stream": components["schemas"]["SessionStream"];
                    "application/json": components["schemas"]["EventsPage"];
                };
            };
            /** @description `bad-request`: a query parameter or `Last-Event-ID` does not fit (the field is named) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `unauthorized`: no API key, or one that is not valid or was revoked */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `forbidden-host` (a gateway without keys answers only loopback names) or `cross-origin` (a page elsewhere may not change anything) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `session-not-found` */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `quota-exceeded` or `rate-limited`: the key's tenant is at its limit; retry after `Retry-After` */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `storage-unavailable`: retry after `Retry-After` */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    getGoal: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The session id. */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The goal */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["GoalView"];
                };
            };
            /** @description `unauthorized`: no API key, or one that is not valid or was revoked */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `forbidden-host` (a gateway without keys answers only loopback names) or `cross-origin` (a page elsewhere may not change anything) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `session-not-found`, `goal-not-found` */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `session-disposed`: its log stays readable, it takes no input */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `storage-unavailable`: retry after `Retry-After` */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    setGoal: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The session id. */
                id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["SetBody"];
            };
        };
        responses: {
            /** @description The new goal */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["GoalView"];
                };
            };
            /** @description `bad-request`: details name the field */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `unauthorized`: no API key, or one that is not valid or was revoked */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `forbidden-host` (a gateway without keys answers only loopback names) or `cross-origin` (a page elsewhere may not change anything) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `session-not-found` */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `session-disposed`, or `child-session`: a continuable subagent runs no goal of its own */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `payload-too-large` */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `unsupported-media-type`: a body that is not JSON */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `core-failed`: the core trapped; the session was rebuilt from its log and the input was not applied, so send it again */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `storage-unavailable`: retry after `Retry-After` */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    clearGoal: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The session id. */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Cleared */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description `unauthorized`: no API key, or one that is not valid or was revoked */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `forbidden-host` (a gateway without keys answers only loopback names) or `cross-origin` (a page elsewhere may not change anything) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `session-not-found`, `goal-not-found` */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `session-disposed`: its log stays readable, it takes no input */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `core-failed`: the core trapped; the session was rebuilt from its log and the input was not applied, so send it again */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `storage-unavailable`: retry after `Retry-After` */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    completeGoal: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The session id. */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The completed goal */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["GoalView"];
                };
            };
            /** @description `unauthorized`: no API key, or one that is not valid or was revoked */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `forbidden-host` (a gateway without keys answers only loopback names) or `cross-origin` (a page elsewhere may not change anything) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `session-not-found`, `goal-not-found` */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `goal-conflict`: it is complete already */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `core-failed`: the core trapped; the session was rebuilt from its log and the input was not applied, so send it again */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `storage-unavailable`: retry after `Retry-After` */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    pauseGoal: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The session id. */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The paused goal */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["GoalView"];
                };
            };
            /** @description `unauthorized`: no API key, or one that is not valid or was revoked */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `forbidden-host` (a gateway without keys answers only loopback names) or `cross-origin` (a page elsewhere may not change anything) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `session-not-found`, `goal-not-found` */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `goal-conflict`: it is not active */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `core-failed`: the core trapped; the session was rebuilt from its log and the input was not applied, so send it again */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `storage-unavailable`: retry after `Retry-After` */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    resumeGoal: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The session id. */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The active goal */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["GoalView"];
                };
            };
            /** @description `unauthorized`: no API key, or one that is not valid or was revoked */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `forbidden-host` (a gateway without keys answers only loopback names) or `cross-origin` (a page elsewhere may not change anything) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `session-not-found`, `goal-not-found` */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `goal-conflict`: it is blocked or complete; `child-session`: a continuable subagent runs no goal of its own */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `core-failed`: the core trapped; the session was rebuilt from its log and the input was not applied, so send it again */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `storage-unavailable`: retry after `Retry-After` */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    sendMessage: {
        parameters: {
            query?: never;
            header?: {
                /** @description 1 to 200 visible ASCII characters. A retry with the same key (kept 24 h) answers the same body and inserts nothing. */
                "Idempotency-Key"?: string;
            };
            path: {
                /** @description The session id. */
                id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["SendBody"];
            };
        };
        responses: {
            /** @description Durable: the message id and the seq of its insert splice */
            202: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MessageAccepted"];
                };
            };
            /** @description `bad-request`: details name the field */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `unauthorized`: no API key, or one that is not valid or was revoked */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `forbidden-host` (a gateway without keys answers only loopback names) or `cross-origin` (a page elsewhere may not change anything) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `session-not-found` */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `session-disposed`, `idempotency-conflict` (the key was used for another request), `child-session` (a continuable subagent takes followups and injects only from its parent; steering into its running turn is taken) or `session-conflict` */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `payload-too-large` */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `unsupported-media-type`: a body that is not JSON */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `quota-exceeded` or `rate-limited`: the key's tenant is at its limit; retry after `Retry-After` */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `core-failed`: the core trapped; the session was rebuilt from its log and the input was not applied, so send it again */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `storage-unavailable`: retry after `Retry-After` */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    getReceipt: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The session id. */
                id: string;
                /** @description The message id. */
                message_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The receipt */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Receipt"];
                };
            };
            /** @description `unauthorized`: no API key, or one that is not valid or was revoked */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `forbidden-host` (a gateway without keys answers only loopback names) or `cross-origin` (a page elsewhere may not change anything) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `session-not-found` or `message-not-found` */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `storage-unavailable`: retry after `Retry-After` */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    getQueue: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The session id. */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The queue */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["QueueView"];
                };
            };
            /** @description `unauthorized`: no API key, or one that is not valid or was revoked */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `forbidden-host` (a gateway without keys answers only loopback names) or `cross-origin` (a page elsewhere may not change anything) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `session-not-found` */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `session-disposed`: its log stays readable, it takes no input */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `storage-unavailable`: retry after `Retry-After` */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    removeQueueItem: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The session id. */
                id: string;
                /** @description The message id. */
                message_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Canceled */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["QueueOpDone"];
                };
            };
            /** @description `unauthorized`: no API key, or one that is not valid or was revoked */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `forbidden-host` (a gateway without keys answers only loopback names) or `cross-origin` (a page elsewhere may not change anything) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `session-not-found`, or `queue-item-not-found` once claimed or unknown */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `session-disposed`: its log stays readable, it takes no input */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `core-failed`: the core trapped; the session was rebuilt from its log and the input was not applied, so send it again */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `storage-unavailable`: retry after `Retry-After` */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    editQueueItem: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The session id. */
                id: string;
                /** @description The message id. */
                message_id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["EditBody"];
            };
        };
        responses: {
            /** @description Replaced */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["QueueOpDone"];
                };
            };
            /** @description `bad-request`: details name the field */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `unauthorized`: no API key, or one that is not valid or was revoked */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `forbidden-host` (a gateway without keys answers only loopback names) or `cross-origin` (a page elsewhere may not change anything) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `session-not-found`, or `queue-item-not-found` once claimed or unknown */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `session-disposed`: its log stays readable, it takes no input */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `payload-too-large` */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `unsupported-media-type`: a body that is not JSON */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `core-failed`: the core trapped; the session was rebuilt from its log and the input was not applied, so send it again */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `storage-unavailable`: retry after `Retry-After` */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    steerQueueItem: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The session id. */
                id: string;
                /** @description The message id. */
                message_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description It now steers, with the same message id */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["QueueOpDone"];
                };
            };
            /** @description `unauthorized`: no API key, or one that is not valid or was revoked */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `forbidden-host` (a gateway without keys answers only loopback names) or `cross-origin` (a page elsewhere may not change anything) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `session-not-found`, or `queue-item-not-found` when unknown or claimed */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `steer-unavailable` (the agent is idle, or the item is already in `next-step`) or `session-disposed` */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `core-failed`: the core trapped; the session was rebuilt from its log and the input was not applied, so send it again */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `storage-unavailable`: retry after `Retry-After` */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    runInSession: {
        parameters: {
            query?: {
                /** @description `true`: the interval as SSE, ending with `event: run.result`. */
                stream?: boolean;
            };
            header?: never;
            path: {
                /** @description The session id. */
                id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["RunBody"];
            };
        };
        responses: {
            /** @description The interval's result; with `?stream=true` the interval as SSE (`session.event`, `session.status` and `session.queue` frames), then `event: run.result` with the result, or `event: error` on a timeout */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RunResult"];
                    "text/event-stream": components["schemas"]["RunStream"];
                };
            };
            /** @description `bad-request`: details name the field */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `unauthorized`: no API key, or one that is not valid or was revoked */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `forbidden-host` (a gateway without keys answers only loopback names) or `cross-origin` (a page elsewhere may not change anything) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `session-not-found` */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `session-disposed`, `child-session` (a continuable subagent takes work only from its parent) or `session-conflict` */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `payload-too-large` */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `unsupported-media-type`: a body that is not JSON */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `quota-exceeded` or `rate-limited`: the key's tenant is at its limit; retry after `Retry-After` */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `core-failed`: the core trapped; the session was rebuilt from its log and the input was not applied, so send it again */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `storage-unavailable`: retry after `Retry-After` */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `run-timeout`: details give `messageId` and `lastSeq`; the agent keeps working */
            504: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    getSessionStatus: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The session id. */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Its status */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["StatusView"];
                };
            };
            /** @description `unauthorized`: no API key, or one that is not valid or was revoked */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `forbidden-host` (a gateway without keys answers only loopback names) or `cross-origin` (a page elsewhere may not change anything) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `session-not-found` */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `storage-unavailable`: retry after `Retry-After` */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    listTools: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Every tool */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ToolList"];
                };
            };
            /** @description `unauthorized`: no API key, or one that is not valid or was revoked */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description `forbidden-host` (a gateway without keys answers only loopback names) or `cross-origin` (a page elsewhere may not change anything) */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
}
