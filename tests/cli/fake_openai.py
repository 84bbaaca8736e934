"""A minimal OpenAI-compatible chat server on 127.0.0.1 for CLI tests: answers come from a responder function
(text, or a Completion whose first-token logprobs are returned when the client asks for logprobs)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from ruwikibench.models.types import Completion


def _body(answer: str | Completion, want_logprobs: bool) -> dict:
    completion = answer if isinstance(answer, Completion) else Completion(text=answer)
    choice: dict = {"index": 0, "finish_reason": "stop",
                    "message": {"role": "assistant", "content": completion.text}}
    if want_logprobs and completion.logprobs:
        choice["logprobs"] = {"content": [
            {"token": t.token, "logprob": t.logprob, "bytes": None,
             "top_logprobs": [{"token": a.token, "logprob": a.logprob, "bytes": None} for a in t.top]}
            for t in completion.logprobs
        ]}
    return {"id": "fake", "object": "chat.completion", "created": 0, "model": "fake", "choices": [choice],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}


@contextmanager
def fake_openai_server(responder: Callable[[list[dict[str, str]]], str | Completion]) -> Iterator[str]:
    """Serve until the block ends; yields the base URL (http://127.0.0.1:PORT/v1)."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            payload = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            data = json.dumps(_body(responder(payload["messages"]), bool(payload.get("logprobs")))).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()
