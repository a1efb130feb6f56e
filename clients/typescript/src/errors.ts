/** An error answer of the gateway: `{"error": {code, message, details}}` with its HTTP status. */
export class AirlockError extends Error {
  override readonly name = "AirlockError";

  constructor(
    /** The HTTP status, e.g. 404. */
    readonly status: number,
    /** The gateway's kebab-case code, e.g. `session-not-found`. */
    readonly code: string,
    message: string,
    /** More facts; a 400 names the offending field in `details.field`. */
    readonly details: Record<string, unknown> = {},
    /** Seconds to wait before trying again, from `Retry-After` (429, 503). */
    readonly retryAfter?: number,
  ) {
    super(message);
  }

  /** Reads the error out of a failed response. */
  static async from(response: Response): Promise<AirlockError> {
    const text = await response.text().catch(() => "");
    let error: { code?: unknown; message?: unknown; details?: unknown } | undefined;
    try {
      error = JSON.parse(text).error;
    } catch {
      // not the gateway's error shape (a proxy's page, say): keep the status and the text
    }
    const retryAfter = Number(response.headers.get("retry-after") ?? NaN);
    return new AirlockError(
      response.status,
      typeof error?.code === "string" ? error.code : `http-${response.status}`,
      typeof error?.message === "string" ? error.message : text || response.statusText,
      typeof error?.details === "object" && error.details !== null
        ? (error.details as Record<string, unknown>)
        : {},
      Number.isFinite(retryAfter) ? retryAfter : undefined,
    );
  }
}
