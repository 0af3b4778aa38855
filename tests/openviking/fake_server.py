"""A small stateful OpenViking stand-in on loopback, for the main suite.

It keeps files in memory and enforces what the real server's actor-peer view does for a
``user``-role key: every content call needs the ``X-OpenViking-Actor-Peer`` header, and a
URI under ``…/peers/<peer>/…`` is reachable only with that peer (else 403). ``find``
returns the caller's files under ``target_uri`` whose text shares a word with the query.
Every request is logged (``log``: method, path, peer) so a test sees whether a DELETE was
sent; ``fail_deletes`` makes the next N deletes answer 503.
"""

import json
import re
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

_PEER = re.compile(r"/peers/(?P<peer>[^/]+)/")
_WORD = re.compile(r"[a-z0-9]+")


class FakeOpenViking:
    def __init__(self, user_id: str = "u1", version: str = "0.5.2"):
        self.user_id = user_id
        self.version = version
        self.files: dict[str, str] = {}
        self.log: list[dict] = []
        self.fail_deletes = 0
        self.ignore_deletes = False  # answer a DELETE ok and keep the file
        self._lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *_):
                pass

            def _answer(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}") if length else {}
                url = urllib.parse.urlsplit(self.path)
                query = dict(urllib.parse.parse_qsl(url.query))
                peer = self.headers.get("X-OpenViking-Actor-Peer")
                with fake._lock:
                    fake.log.append({"method": self.command, "path": url.path, "peer": peer})
                    status, payload = fake.handle(self.command, url.path, query, body, peer)
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_DELETE = _answer

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        ).start()
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    # -- what a test asks -------------------------------------------------------------------
    def deletes(self) -> list[dict]:
        return [entry for entry in self.log if entry["method"] == "DELETE"]

    def finds(self, query: str, target_uri: str, peer: str) -> list[str]:
        with self._lock:
            return [hit["uri"] for hit in self._find(query, target_uri, peer)]

    # -- the server ---------------------------------------------------------------------------
    @staticmethod
    def _error(status: int, code: str):
        return status, {"status": "error", "error": {"code": code, "message": code.lower()}}

    def _allowed(self, uri: str, peer: str | None) -> bool:
        match = _PEER.search(uri or "")
        return peer is not None and (match is None or match.group("peer") == peer)

    def _find(self, query: str, target_uri: str, peer: str | None) -> list[dict]:
        words = set(_WORD.findall(query.lower()))
        hits = []
        for uri, text in sorted(self.files.items()):
            if not uri.startswith(target_uri.rstrip("/") + "/") or not self._allowed(uri, peer):
                continue
            overlap = len(words & set(_WORD.findall(text.lower())))
            if overlap:
                hits.append({"uri": uri, "score": float(overlap)})
        return sorted(hits, key=lambda h: -h["score"])

    def handle(self, method: str, path: str, query: dict, body: dict, peer: str | None):
        if path == "/health":
            return 200, {"status": "ok", "healthy": True, "version": self.version}
        if path.startswith("/api/v1/tasks/"):
            return 200, {"status": "ok", "result": {"status": "completed"}}
        uri = body.get("uri") or query.get("uri") or body.get("target_uri") or ""
        if not self._allowed(uri, peer):
            return self._error(403, "PERMISSION_DENIED")
        if method == "POST" and path == "/api/v1/content/write":
            exists = uri in self.files
            if body.get("mode") == "create" and exists:
                return self._error(409, "ALREADY_EXISTS")
            if body.get("mode") == "replace" and not exists:
                return self._error(404, "NOT_FOUND")
            self.files[uri] = body["content"]
            return 200, {"status": "ok", "result": {"uri": uri, "vector_status": "complete"}}
        if method == "GET" and path == "/api/v1/content/read":
            if uri not in self.files:
                return self._error(404, "NOT_FOUND")
            return 200, {"status": "ok", "result": self.files[uri]}
        if method == "POST" and path == "/api/v1/search/find":
            hits = self._find(body.get("query", ""), uri, peer)[: int(body.get("limit", 10))]
            return 200, {"status": "ok", "result": {"memories": hits}}
        if method == "DELETE" and path == "/api/v1/fs":
            if self.fail_deletes:
                self.fail_deletes -= 1
                return self._error(503, "UNAVAILABLE")
            if not self.ignore_deletes:
                self.files.pop(uri, None)
            return 200, {"status": "ok", "result": {}}
        return self._error(404, "NOT_FOUND")
