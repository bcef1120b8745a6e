"""A loopback OpenAI-compatible chat-completions server for workload (g), standard library only.

Every framework's own OpenAI client talks to it. A request whose messages hold no tool result
gets a streamed tool call ``lookup(city="Paris")``; one that holds a tool result gets the answer
"done" in a few chunks. ``stream: false`` requests get the same replies as one JSON body.

    python _server.py            # prints "listening on http://127.0.0.1:PORT/v1", serves until killed
"""

from __future__ import annotations

import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODEL = "bench-model"
USAGE = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}


def _reply(body: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The streamed deltas and the whole message for one request."""
    answered = any(m.get("role") == "tool" for m in body.get("messages", []))
    if answered:
        deltas: list[dict[str, Any]] = [{"role": "assistant", "content": "do"}, {"content": "n"}, {"content": "e"}]
        return deltas, {"role": "assistant", "content": "done"}
    call = {"index": 0, "id": "call_0", "type": "function", "function": {"name": "lookup", "arguments": ""}}
    args = json.dumps({"city": "Paris"})
    deltas = [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"tool_calls": [{"index": 0, "function": {"arguments": args[:8]}}]},
        {"tool_calls": [{"index": 0, "function": {"arguments": args[8:]}}]},
    ]
    whole = {"id": "call_0", "type": "function", "function": {"name": "lookup", "arguments": args}}
    return deltas, {"role": "assistant", "content": None, "tool_calls": [whole]}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go in two writes: no 40 ms delayed-ACK stall

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        deltas, whole = _reply(body)
        finish = "stop" if whole.get("content") else "tool_calls"
        base = {"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 0, "model": MODEL}
        if not body.get("stream"):
            payload = {
                **base,
                "object": "chat.completion",
                "choices": [{"index": 0, "message": whole, "finish_reason": finish}],
                "usage": USAGE,
            }
            data = json.dumps(payload).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        events = [{**base, "choices": [{"index": 0, "delta": d, "finish_reason": None}]} for d in deltas]
        events.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
        events.append({**base, "choices": [], "usage": USAGE})
        data = b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events) + b"data: [DONE]\n\n"
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # /v1/models, for clients that look before they talk
        data = json.dumps({"object": "list", "data": [{"id": MODEL, "object": "model"}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def serve(port: int = 0) -> tuple[ThreadingHTTPServer, str]:
    """Starts the server on a loopback port in a daemon thread; returns it and its base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/v1"


if __name__ == "__main__":
    server, url = serve(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
    print(f"listening on {url}", flush=True)
    threading.Event().wait()
