export { Airlock } from "./client.js";
export type { AirlockOptions, EventsOptions, RunOptions, SendOptions } from "./client.js";
export { AirlockError } from "./errors.js";
export { WebhookVerificationError, verifyWebhook } from "./webhooks.js";
export type { VerifyOptions, WebhookHeaders } from "./webhooks.js";
export type * from "./types.js";
/** The generated types of the whole OpenAPI document, for what the client does not wrap. */
export type { components, operations, paths } from "./openapi.js";
