"""LoopX's own HTTP client for an OpenViking server (standard library only, no Django).

OpenViking is an optional external memory service; LoopX never imports its code. This
package holds the rules both LoopX integrations share — the Reward Memory provider
(``reward_memory.providers.openviking``) and the ``loopx-openviking`` semantic-preference
extension (``preferences/extensions/loopx_openviking.py``, a subprocess without Django):

* deterministic, OpenViking-valid peer tokens (``peer_token(goal_id, agent_id)``,
  ``project_peer_token(project)``);
* the private-target rule (``check_private_target``): only
  ``viking://user/{user}/peers/{peer}/memories/…`` with the request's actor peer; any
  ``viking://agent/…`` (any case) refused — all *before* a request is sent;
* ``Client``: bounded timeouts, a bounded number of retries that resend the identical
  request (same URI, same bytes), and one bounded failure kind per failure;
* no redirect is ever followed: the API key and the actor peer header go to the
  configured origin only, never to wherever a 3xx points (a redirect is the bounded
  failure ``invalid_response``, not retried).

No exception or failure raised here carries a URI, a key or a response body.
"""

import hashlib
import json
import re
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any

#: The first OpenViking server generation with actor-bound private peer memory.
MIN_SERVER_VERSION = (0, 4, 19)
PEER_HEADER = "X-OpenViking-Actor-Peer"
API_KEY_HEADER = "X-API-Key"

#: OpenViking's identifier rule for account, user and peer path segments.
IDENTIFIER_RE = re.compile(r"^[A-Za-z0-9_.@-]{1,255}$")
_SEGMENT_RE = re.compile(r"^[A-Za-z0-9_.@-]+$")

# Failure kinds, a subset-compatible vocabulary with Reward Memory's provider interface.
UNAVAILABLE = "unavailable"
TIMED_OUT = "timed_out"
INVALID_RESPONSE = "invalid_response"
FORBIDDEN = "forbidden"
NOT_INSTALLED = "not_installed"

# Reasons a target is refused before any request (bounded, safe to show).
AGENT_SCOPE = "agent_scope_forbidden"
NOT_PEER_MEMORY = "not_peer_memory_path"
PEER_MISMATCH = "actor_peer_mismatch"
USER_MISMATCH = "user_mismatch"
INVALID_PEER = "invalid_actor_peer"


class OpenVikingError(Exception):
    """A bounded failure: ``kind`` is one of the module's failure kinds."""

    def __init__(self, kind: str, *, status: int | None = None, code: str | None = None):
        super().__init__(kind)
        self.kind = kind
        self.status = status
        self.code = code  # OpenViking's error code (e.g. NOT_FOUND), never its message


class TargetRefused(OpenVikingError):
    """A target URI that LoopX never sends (``reason`` says which rule); no request made."""

    def __init__(self, reason: str):
        super().__init__(FORBIDDEN)
        self.reason = reason


# -- identities --------------------------------------------------------------------------


def _token(domain: str, fields: dict[str, str]) -> str:
    material = json.dumps(
        {"domain": domain, **fields}, sort_keys=True, separators=(",", ":"), ensure_ascii=False
    ).encode("utf-8")
    return hashlib.sha256(material).hexdigest()[:32]


def peer_token(goal_id: str, agent_id: str) -> str:
    """The actor peer of one Goal-scoped Agent: ``loopx-`` + 32 hex chars.

    Agent names are unique only inside a Goal, so the pair is hashed: the same agent name
    in another Goal gets another peer, even under the same OpenViking user.
    """
    if not goal_id or not agent_id:
        raise ValueError("goal_id and agent_id are required")
    return "loopx-" + _token("loopx.openviking.agent_peer.v1", {"g": goal_id, "a": agent_id})


def project_peer_token(project: str) -> str:
    """The project peer the semantic-preference extension reads: ``loopx-project-`` + hex."""
    if not project:
        raise ValueError("project is required")
    return "loopx-project-" + _token("loopx.openviking.project_peer.v1", {"p": project})


def is_valid_peer(peer: Any) -> bool:
    return (
        isinstance(peer, str)
        and bool(IDENTIFIER_RE.fullmatch(peer))
        and peer not in {".", ".."}
        and peer.count("@") <= 1
    )


def peer_memory_root(user_id: str, peer: str) -> str:
    return f"viking://user/{user_id}/peers/{peer}/memories"


# -- the private-target rule -------------------------------------------------------------


def check_private_target(uri: Any, *, actor_peer_id: Any, user_id: str | None = None) -> str:
    """Return ``uri`` if LoopX may send it with ``actor_peer_id``; else ``TargetRefused``.

    Allowed: ``viking://user/{user}/peers/{actor_peer_id}/memories[/…]`` with safe path
    segments (no empty, ``.``/``..``, percent-escapes, query or fragment). ``agent`` as
    the first segment is refused in any letter case, whatever the scheme's case.
    """
    if not isinstance(uri, str) or "://" not in uri:
        raise TargetRefused(NOT_PEER_MEMORY)
    scheme, _, rest = uri.partition("://")
    first = rest.split("/", 1)[0]
    if first.strip().lower() == "agent":
        raise TargetRefused(AGENT_SCOPE)
    if not is_valid_peer(actor_peer_id):
        raise TargetRefused(INVALID_PEER)
    if scheme != "viking" or any(ch in rest for ch in "?#%\\") or rest.endswith("/"):
        raise TargetRefused(NOT_PEER_MEMORY)
    parts = rest.split("/")
    if len(parts) < 5 or parts[0] != "user" or parts[2] != "peers" or parts[4] != "memories":
        raise TargetRefused(NOT_PEER_MEMORY)
    if any(not _SEGMENT_RE.fullmatch(p) or p in {".", ".."} for p in parts):
        raise TargetRefused(NOT_PEER_MEMORY)
    if user_id and parts[1] != user_id:
        raise TargetRefused(USER_MISMATCH)
    if parts[3] != actor_peer_id:
        raise TargetRefused(PEER_MISMATCH)
    return uri


def parse_version(text: Any) -> tuple[int, ...] | None:
    if not isinstance(text, str):
        return None
    match = re.search(r"^v?(\d+)\.(\d+)\.(\d+)", text.strip())  # a version prefix
    return tuple(int(g) for g in match.groups()) if match else None


# -- HTTP -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Settings:
    base_url: str
    api_key: str = ""
    user_id: str = ""
    timeout_seconds: float = 10.0
    retries: int = 2  # extra attempts after the first, for retryable failures only

    @property
    def configured(self) -> bool:
        return bool(self.base_url) and bool(self.user_id)


_RETRYABLE_STATUS = {429, 500, 502, 503, 504}


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Refuse every redirect: urllib would resend our headers (the API key, the actor
    peer) to the new location, another origin included. The 3xx surfaces as an
    ``HTTPError`` and becomes ``invalid_response``."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None


#: The opener of every request: no redirects followed.
_OPENER = urllib.request.build_opener(_NoRedirect())


class Client:
    """One OpenViking server. Every call sends the actor peer header it is given."""

    def __init__(self, settings: Settings, *, sleep=time.sleep):
        self.settings = settings
        self._sleep = sleep
        self.requests_sent = 0

    # -- transport ----------------------------------------------------------------------
    def _request(
        self,
        method: str,
        path: str,
        *,
        query: dict[str, Any] | None = None,
        body: dict[str, Any] | None = None,
        peer: str | None = None,
        authenticated: bool = True,
    ) -> dict[str, Any]:
        url = self.settings.base_url.rstrip("/") + path
        if query:
            url += "?" + urllib.parse.urlencode(query)
        data = None if body is None else json.dumps(body, ensure_ascii=False).encode("utf-8")
        headers = {"Accept": "application/json"}
        if data is not None:
            headers["Content-Type"] = "application/json"
        if authenticated and self.settings.api_key:
            headers[API_KEY_HEADER] = self.settings.api_key
        if peer is not None:
            headers[PEER_HEADER] = peer
        attempts = 1 + max(0, int(self.settings.retries))
        last: OpenVikingError | None = None
        for attempt in range(attempts):
            if attempt:
                self._sleep(min(0.2 * (2 ** (attempt - 1)), 1.0))
            try:
                return self._once(method, url, data, headers)
            except OpenVikingError as exc:
                last = exc
                retryable = exc.kind in (UNAVAILABLE, TIMED_OUT) and (
                    exc.status is None or exc.status in _RETRYABLE_STATUS
                )
                if not retryable:
                    raise
        assert last is not None
        raise last

    def _once(self, method: str, url: str, data, headers) -> dict[str, Any]:
        request = urllib.request.Request(url, data=data, headers=headers, method=method)  # noqa: S310
        self.requests_sent += 1
        try:
            with _OPENER.open(request, timeout=self.settings.timeout_seconds) as resp:
                raw = resp.read(4_000_001)
                status = resp.status
        except urllib.error.HTTPError as exc:
            status = exc.code
            try:
                raw = exc.read(64_001)
            except (OSError, ValueError):
                raw = b""
            finally:
                exc.close()
            raise _http_failure(status, raw) from None
        except TimeoutError:
            raise OpenVikingError(TIMED_OUT) from None
        except urllib.error.URLError as exc:
            if isinstance(exc.reason, (TimeoutError, socket.timeout)):
                raise OpenVikingError(TIMED_OUT) from None
            raise OpenVikingError(UNAVAILABLE) from None
        except (ConnectionError, OSError, ValueError):
            raise OpenVikingError(UNAVAILABLE) from None
        if len(raw) > 4_000_000:
            raise OpenVikingError(INVALID_RESPONSE, status=status)
        document = _json(raw)
        if document is None:
            raise OpenVikingError(INVALID_RESPONSE, status=status)
        if document.get("status") == "error":
            raise OpenVikingError(INVALID_RESPONSE, status=status, code=_error_code(document))
        return document

    # -- operations ---------------------------------------------------------------------
    def health(self) -> dict[str, Any]:
        """``GET /health`` (with the key when set, so the server names the identity)."""
        return self._request("GET", "/health")

    def write(self, uri: str, content: str, *, peer: str, mode: str) -> dict[str, Any]:
        body = {"uri": uri, "content": content, "mode": mode, "wait": True}
        return _result(self._request("POST", "/api/v1/content/write", body=body, peer=peer))

    def read(self, uri: str, *, peer: str) -> str | None:
        """The visible text of a file, or ``None`` when the server has no such file."""
        try:
            result = self._request("GET", "/api/v1/content/read", query={"uri": uri}, peer=peer)
        except OpenVikingError as exc:
            if exc.status == 404 or exc.code == "NOT_FOUND":
                return None
            raise
        value = result.get("result")
        if not isinstance(value, str):
            raise OpenVikingError(INVALID_RESPONSE)
        return value

    def find(self, query: str, *, target_uri: str, peer: str, limit: int) -> list[dict[str, Any]]:
        body = {"query": query, "target_uri": target_uri, "limit": limit}
        result = _result(self._request("POST", "/api/v1/search/find", body=body, peer=peer))
        memories = result.get("memories", [])
        if not isinstance(memories, list):
            raise OpenVikingError(INVALID_RESPONSE)
        hits = []
        for entry in memories:
            if not isinstance(entry, dict) or not isinstance(entry.get("uri"), str):
                raise OpenVikingError(INVALID_RESPONSE)
            score = entry.get("score", 0.0)
            hits.append({"uri": entry["uri"], "score": float(score) if _is_number(score) else 0.0})
        return hits

    def delete(self, uri: str, *, peer: str) -> str | None:
        """``DELETE /api/v1/fs``; returns the server task id when it runs asynchronously."""
        result = _result(self._request("DELETE", "/api/v1/fs", query={"uri": uri}, peer=peer))
        task_id = result.get("task_id")
        return task_id if isinstance(task_id, str) else None

    def task_status(self, task_id: str) -> str:
        path = "/api/v1/tasks/" + urllib.parse.quote(task_id, safe="")
        result = _result(self._request("GET", path))
        status = result.get("status")
        if not isinstance(status, str):
            raise OpenVikingError(INVALID_RESPONSE)
        return status

    def wait_task(self, task_id: str, *, deadline_seconds: float) -> bool:
        """Poll a task until it completes (``True``), fails or the deadline passes."""
        end = time.monotonic() + deadline_seconds
        while True:
            status = self.task_status(task_id)
            if status == "completed":
                return True
            if status in ("failed", "cancelled") or time.monotonic() >= end:
                return False
            self._sleep(0.1)


def _json(raw: bytes) -> dict[str, Any] | None:
    try:
        document = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    return document if isinstance(document, dict) else None


def _error_code(document: dict[str, Any]) -> str | None:
    error = document.get("error")
    code = error.get("code") if isinstance(error, dict) else None
    return code if isinstance(code, str) and len(code) <= 64 else None


def _result(document: dict[str, Any]) -> dict[str, Any]:
    result = document.get("result")
    if not isinstance(result, dict):
        raise OpenVikingError(INVALID_RESPONSE)
    return result


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _http_failure(status: int, raw: bytes) -> OpenVikingError:
    document = _json(raw) or {}
    code = _error_code(document)
    if status in (401, 403):
        return OpenVikingError(FORBIDDEN, status=status, code=code)
    if status == 408 or status == 504:
        return OpenVikingError(TIMED_OUT, status=status, code=code)
    if status in _RETRYABLE_STATUS:
        return OpenVikingError(UNAVAILABLE, status=status, code=code)
    return OpenVikingError(INVALID_RESPONSE, status=status, code=code)
