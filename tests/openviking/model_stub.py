"""A tiny OpenAI-compatible model server for the OpenViking test leg (loopback only).

The machine running the leg has no internet, so the OpenViking server's embedding and
VLM providers point here:

* ``POST /v1/embeddings`` — deterministic hashed bag-of-words vectors (same text, same
  vector; shared words, nearby vectors), as JSON floats or base64 little-endian float32;
* ``POST /v1/chat/completions`` — a canned assistant reply (a short summary for
  abstracts/overviews, ``[]`` when the prompt asks for JSON);
* ``GET /v1/models`` — the model list.

Standard library only. ``python -m tests.openviking.model_stub --port N`` serves until
killed; ``start()`` runs it on a background thread in-process.
"""

import argparse
import base64
import hashlib
import json
import math
import re
import struct
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

DIMENSION = 64
MODEL_EMBEDDING = "stub-embedding"
MODEL_CHAT = "stub-chat"
_WORD = re.compile(r"\w+", re.UNICODE)


def embed(text: str, dimension: int = DIMENSION) -> list[float]:
    """A unit vector: each lower-cased word adds ±1 at a hashed coordinate."""
    vector = [0.0] * dimension
    for word in _WORD.findall(text.lower()):
        digest = hashlib.sha256(word.encode("utf-8")).digest()
        index = int.from_bytes(digest[:4], "big") % dimension
        vector[index] += 1.0 if digest[4] & 1 else -1.0
    norm = math.sqrt(sum(v * v for v in vector))
    if norm == 0:
        vector[0] = 1.0
        return vector
    return [v / norm for v in vector]


def chat_reply(messages: list) -> str:
    prompt = " ".join(
        m.get("content", "") if isinstance(m.get("content"), str) else json.dumps(m.get("content"))
        for m in messages
        if isinstance(m, dict)
    )
    if "json" in prompt.lower():
        return "[]"
    return "A short stored note."


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *_args):  # quiet
        pass

    def _send(self, status: int, body: dict) -> None:
        data = json.dumps(body).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _body(self) -> dict:
        length = int(self.headers.get("Content-Length") or 0)
        try:
            parsed = json.loads(self.rfile.read(length) or b"{}")
        except ValueError:
            return {}
        return parsed if isinstance(parsed, dict) else {}

    def do_GET(self):
        if self.path.rstrip("/").endswith("/models"):
            models = [{"id": m, "object": "model"} for m in (MODEL_EMBEDDING, MODEL_CHAT)]
            self._send(200, {"object": "list", "data": models})
        else:
            self._send(404, {"error": {"message": "not found"}})

    def do_POST(self):
        body = self._body()
        if self.path.rstrip("/").endswith("/embeddings"):
            inputs = body.get("input", "")
            if isinstance(inputs, str):
                inputs = [inputs]
            dimension = body.get("dimensions") or DIMENSION
            data = []
            for i, text in enumerate(inputs):
                vector = embed(text if isinstance(text, str) else json.dumps(text), dimension)
                if body.get("encoding_format") == "base64":
                    packed = struct.pack(f"<{len(vector)}f", *vector)
                    value = base64.b64encode(packed).decode("ascii")
                else:
                    value = vector
                data.append({"object": "embedding", "index": i, "embedding": value})
            self._send(
                200,
                {
                    "object": "list",
                    "data": data,
                    "model": body.get("model", MODEL_EMBEDDING),
                    "usage": {"prompt_tokens": 1, "total_tokens": 1},
                },
            )
        elif self.path.rstrip("/").endswith("/chat/completions"):
            reply = chat_reply(body.get("messages") or [])
            self._send(
                200,
                {
                    "id": "chatcmpl-stub",
                    "object": "chat.completion",
                    "created": 0,
                    "model": body.get("model", MODEL_CHAT),
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": reply},
                            "finish_reason": "stop",
                        }
                    ],
                    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                },
            )
        else:
            self._send(404, {"error": {"message": "not found"}})


def start(host: str = "127.0.0.1", port: int = 0) -> ThreadingHTTPServer:
    """Serve on a background thread; ``server.server_address`` has the bound port."""
    server = ThreadingHTTPServer((host, port), _Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    server = ThreadingHTTPServer((args.host, args.port), _Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
