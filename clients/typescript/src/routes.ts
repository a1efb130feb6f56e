// The gateway's routes, each segment encoded.

export const segment = encodeURIComponent;
export const session = (sessionId: string) => `/v1/sessions/${segment(sessionId)}`;
export const queued = (sessionId: string, messageId: string) =>
  `${session(sessionId)}/queue/${segment(messageId)}`;
/** A workspace file's route: each name of `path` encoded, the `/`s between them kept. */
export const file = (sessionId: string, path: string) =>
  `${session(sessionId)}/files/${path.split("/").map(segment).join("/")}`;
export const webhook = (webhookId: string) => `/v1/webhooks/${segment(webhookId)}`;
export const schedule = (scheduleId: string) => `/v1/schedules/${segment(scheduleId)}`;
export const toolCall = (sessionId: string, callId: string) =>
  `${session(sessionId)}/tool-calls/${segment(callId)}`;

/** `?a=1&b=2` for the fields that are set. */
export function query(params: Record<string, string | number | undefined>): string {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) {
    if (value !== undefined) search.set(name, `${value}`);
  }
  const text = search.toString();
  return text && `?${text}`;
}
