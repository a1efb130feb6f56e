import { createParser, type EventSourceMessage } from "eventsource-parser";

/** The frames of one SSE response body, each yielded once it is complete. */
export async function* readFrames(
  body: ReadableStream<Uint8Array>,
  onRetry: (ms: number) => void,
): AsyncGenerator<EventSourceMessage> {
  let ready: EventSourceMessage[] = [];
  const parser = createParser({ onEvent: (frame) => ready.push(frame), onRetry });
  const decoder = new TextDecoder();
  const reader = body.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      parser.feed(decoder.decode(value, { stream: true }));
      const frames = ready;
      ready = [];
      yield* frames;
    }
  } finally {
    // Closes the connection when the caller stops early; a no-op once the body has ended.
    reader.cancel().catch(() => {});
  }
}

/** Resolves after `ms`, or at once when `signal` aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener("abort", done, { once: true });
  });
}
