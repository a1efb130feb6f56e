"""A stand-in for an OpenAI-compatible model that can keep a turn running on demand.

The gateway is pointed at it with `AIRLOCK_BASE_URL` and sessions use the model
`openai:held`. Every request is answered with a short streamed text; a request whose last
message contains `HOLD` sends its first chunk and then waits for `release()`, so a test can act
on a session whose turn is running, for as long as it needs, with no timing involved.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

HOLD = "HOLD"


def _chunk(**fields: Any) -> bytes:
    body = {"id": "held", "object": "chat.completion.chunk", "model": "held", **fields}
    return f"data: {json.dumps(body)}\n\n".encode()


class HeldModel:
    """The mock model server on `127.0.0.1:<free port>`, in a thread."""

    def __init__(self) -> None:
        self._released = threading.Event()
        model = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (the stdlib's name)
                length = int(self.headers.get("content-length", 0))
                request = json.loads(self.rfile.read(length))
                last = json.dumps(request["messages"][-1])
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("connection", "close")
                self.end_headers()
                try:
                    self._write(_chunk(choices=[{"index": 0, "delta": {"content": "Working"}}]))
                    if HOLD in last:
                        model._released.wait()
                    self._write(
                        _chunk(choices=[{"index": 0, "delta": {"content": "."}}]),
                        _chunk(choices=[{"index": 0, "delta": {}, "finish_reason": "stop"}]),
                        _chunk(choices=[], usage={"prompt_tokens": 3, "completion_tokens": 2}),
                        b"data: [DONE]\n\n",
                    )
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the gateway canceled the request

            def _write(self, *frames: bytes) -> None:
                for frame in frames:
                    self.wfile.write(frame)
                self.wfile.flush()

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def release(self) -> None:
        """Lets every held request (and every later one) finish."""
        self._released.set()

    def close(self) -> None:
        self.release()
        self._server.shutdown()
        self._server.server_close()
