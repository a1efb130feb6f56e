"""A webhook receiver for the tests: verifies every delivery with the official Standard Webhooks
library and reports it on stdout, one JSON object a line, before it answers.

It prints `{"listening": PORT}` first. `POST /_control` with a JSON object steers it:
`secret` (what verifies the deliveries), `answers` (the statuses of the next deliveries, in
order; 200 after them), `hang` (true: hold every delivery unanswered until `hang` is false
again).
"""

import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from standardwebhooks import Webhook

state = {"secret": None, "answers": [], "hang": False}
lock = threading.Lock()
released = threading.Condition(lock)


def report(line):
    with lock:
        print(json.dumps(line), flush=True)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def answer(self, status, body=b""):
        try:
            self.send_response(status)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the gateway went away (a test killed it) before the answer

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length", "0")))
        if self.path == "/_control":
            with released:
                state.update(json.loads(body))
                released.notify_all()
            return self.answer(204)
        headers = {name.lower(): value for name, value in self.headers.items()}
        line = {"id": headers.get("webhook-id"), "timestamp": headers.get("webhook-timestamp")}
        try:
            line["payload"] = Webhook(state["secret"]).verify(body, headers)
            line["verified"] = True
        except Exception as error:  # the test reads why
            line["verified"] = False
            line["error"] = f"{type(error).__name__}: {error}"
            line["body"] = body.decode("utf-8", "replace")
        with released:
            status = state["answers"].pop(0) if state["answers"] else 200
            hung = state["hang"]
        line["status"] = "hung" if hung else status
        report(line)
        if hung:
            with released:
                released.wait_for(lambda: not state["hang"])
        self.answer(status)


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
report({"listening": server.server_address[1]})
try:
    server.serve_forever()
except KeyboardInterrupt:
    sys.exit(0)
