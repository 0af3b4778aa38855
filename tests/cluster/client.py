"""A small HTTP client for the cluster leg (loopback only, one keep-alive connection)."""

from __future__ import annotations

import http.client
import json
from dataclasses import dataclass


@dataclass
class Answer:
    status: int  # 0: no HTTP answer (connection refused/reset)
    body: dict
    served_by: str  # HAProxy's X-Served-By, or the instance called directly

    @property
    def code(self) -> str | None:
        return self.body.get("code") if isinstance(self.body, dict) else None

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300


class Client:
    def __init__(self, port: int, token: str, name: str = "", timeout: float = 30):
        self.port, self.token, self.name, self.timeout = port, token, name, timeout
        self.conn: http.client.HTTPConnection | None = None

    def _connection(self) -> http.client.HTTPConnection:
        if self.conn is None:
            self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=self.timeout)
        return self.conn

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def call(self, method: str, path: str, body: dict | None = None) -> Answer:
        headers = {"Authorization": f"Bearer {self.token}", "Host": "127.0.0.1"}
        data = None
        if body is not None:
            data = json.dumps(body)
            headers["Content-Type"] = "application/json"
        try:
            conn = self._connection()
            conn.request(method, path, body=data, headers=headers)
            response = conn.getresponse()
            raw = response.read()
            served = response.getheader("X-Served-By") or self.name
        except (OSError, http.client.HTTPException):
            self.close()
            return Answer(0, {}, "")
        try:
            payload = json.loads(raw) if raw else {}
        except ValueError:
            payload = {}
        if response.getheader("Connection", "").lower() == "close":
            self.close()
        return Answer(response.status, payload, served)

    def get(self, path: str) -> Answer:
        return self.call("GET", path)

    def post(self, path: str, body: dict) -> Answer:
        return self.call("POST", path, body)
