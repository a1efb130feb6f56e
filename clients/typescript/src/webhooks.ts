// A receiver's check of a webhook delivery, by the Standard Webhooks rules
// (https://www.standardwebhooks.com): the `webhook-signature` header holds `v1,<base64>`
// signatures, each an HMAC-SHA256 of `${webhook-id}.${webhook-timestamp}.${body}` under the key
// the `whsec_` secret encodes. Web Crypto only, so it runs in Node (>= 20) and in browsers.

/** A delivery that does not verify: answer it with an error status and do not act on it. */
export class WebhookVerificationError extends Error {
  override name = "WebhookVerificationError";
}

export interface VerifyOptions {
  /** How far (seconds) a delivery's timestamp may be from now: an older one is a replay. 300. */
  toleranceSeconds?: number;
  /** Now, in seconds since the epoch (the clock when absent). */
  now?: number;
}

/** A delivery's headers: a `Headers`, or a plain object (names in any case). */
export type WebhookHeaders = Headers | Record<string, string | string[] | undefined>;

function header(headers: WebhookHeaders, name: string): string {
  let value: string | string[] | null | undefined;
  if (typeof Headers !== "undefined" && headers instanceof Headers) {
    value = headers.get(name);
  } else {
    const entry = Object.entries(headers).find(([key]) => key.toLowerCase() === name);
    value = entry?.[1];
  }
  const text = Array.isArray(value) ? value.join(" ") : value;
  if (!text) throw new WebhookVerificationError(`the delivery has no ${name} header`);
  return text;
}

const base64 = (bytes: Uint8Array): string => btoa(String.fromCharCode(...bytes));

/** Checks a delivery against the subscription's secret and answers its payload
 * (`{type, timestamp, data}`); rejects with `WebhookVerificationError` otherwise. `body` is the
 * request body exactly as received. */
export async function verifyWebhook(
  secret: string,
  headers: WebhookHeaders,
  body: string | Uint8Array,
  options: VerifyOptions = {},
): Promise<{ type: string; timestamp: string; data: Record<string, unknown> }> {
  if (!secret.startsWith("whsec_")) throw new WebhookVerificationError("the secret is not a whsec_ secret");
  const id = header(headers, "webhook-id");
  const timestamp = header(headers, "webhook-timestamp");
  const signatures = header(headers, "webhook-signature");
  const sentAt = Number(timestamp);
  if (!Number.isInteger(sentAt)) throw new WebhookVerificationError(`webhook-timestamp ${timestamp} is no time`);
  const now = options.now ?? Date.now() / 1000;
  if (Math.abs(now - sentAt) > (options.toleranceSeconds ?? 300)) {
    throw new WebhookVerificationError("the delivery's timestamp is too far from now");
  }
  const raw = typeof body === "string" ? new TextEncoder().encode(body) : body;
  const keyBytes = Uint8Array.from(atob(secret.slice("whsec_".length)), (c) => c.charCodeAt(0));
  const key = await crypto.subtle.importKey("raw", keyBytes, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  const prefix = new TextEncoder().encode(`${id}.${timestamp}.`);
  const signed = new Uint8Array(prefix.length + raw.length);
  signed.set(prefix);
  signed.set(raw, prefix.length);
  const expected = base64(new Uint8Array(await crypto.subtle.sign("HMAC", key, signed)));
  for (const signature of signatures.split(" ")) {
    const [version, value] = signature.split(",", 2);
    // Equal lengths compared whole: how long the comparison takes says nothing of the secret.
    if (version === "v1" && value !== undefined && same(value, expected)) {
      return JSON.parse(new TextDecoder().decode(raw));
    }
  }
  throw new WebhookVerificationError("no signature of the delivery matches the secret");
}

function same(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let differ = 0;
  for (let i = 0; i < a.length; i++) differ |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return differ === 0;
}
