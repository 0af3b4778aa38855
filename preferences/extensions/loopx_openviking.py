#!/usr/bin/env python3
"""``loopx-openviking``: a semantic-preference provider that recalls from an OpenViking
project peer (``semantic_preference_provider_v0`` over stdin/stdout; no Django).

Usage (the manifest ``loopx-openviking.json`` runs it; a config appends its ``args``)::

    python3 loopx_openviking.py recall --settings /private/openviking-provider.json < request
    python3 loopx_openviking.py doctor --settings /private/openviking-provider.json < request

The settings file is local-private JSON (``loopx_openviking_provider_settings_v0``):
``base_url``, ``user_id`` and optionally ``api_key`` and ``timeout_seconds``. The process
runs with ``PATH`` and ``LANG`` only, so nothing comes from the environment.

Recall reads the project peer ``loopx-project-<hex>`` derived from the ``--project``
argument the operator's local config passes (the provider request carries no project;
``loopx_site.openviking_http.project_peer_token``): a scoped ``search/find`` under
``viking://user/{user}/peers/{peer}/memories``, then an exact read of each hit. Items are
``{"preference_ref": "openviking:<16 hex of the URI digest>", "summary": <text>}``: the
URI itself never leaves. Any failure prints nothing and exits non-zero with a bounded
failure word on stderr (which the runner discards), so the hook's failure policy applies.
``doctor`` checks the settings, ``/health`` (version ≥ 0.4.19) and one scoped find.
"""

import hashlib
import json
import os
import sys
from pathlib import Path

_PROJECT_ROOT = Path(__file__).resolve().parents[2]
if str(_PROJECT_ROOT) not in sys.path:
    sys.path.insert(0, str(_PROJECT_ROOT))

import loopx_site.openviking_http as ov  # noqa: E402 (after the project root is importable)

SETTINGS_SCHEMA = "loopx_openviking_provider_settings_v0"
REQUEST_SCHEMA = "semantic_preference_provider_request_v0"
RESPONSE_SCHEMA = "semantic_preference_provider_response_v0"
MAX_REQUEST_BYTES = 64 * 1024
MAX_SETTINGS_BYTES = 16 * 1024
MAX_SUMMARY_CHARS = 2000
MAX_LIMIT = 20
REF_PREFIX = "openviking:"


class Failure(Exception):
    """Exit non-zero with this bounded word."""


def load_settings(path: str | None) -> ov.Settings:
    if not path:
        raise Failure("settings_missing")
    target = Path(path)
    if not target.is_file():
        raise Failure("settings_unreadable")
    try:
        with target.open("rb") as handle:
            data = handle.read(MAX_SETTINGS_BYTES + 1)
        raw = json.loads(data.decode("utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        raise Failure("settings_invalid") from None
    if len(data) > MAX_SETTINGS_BYTES or not isinstance(raw, dict):
        raise Failure("settings_invalid")
    allowed = {"schema_version", "base_url", "api_key", "user_id", "timeout_seconds"}
    if set(raw) - allowed or raw.get("schema_version") != SETTINGS_SCHEMA:
        raise Failure("settings_invalid")
    base_url, user_id = raw.get("base_url"), raw.get("user_id")
    api_key = raw.get("api_key", "")
    timeout = raw.get("timeout_seconds", 10)
    if (
        not isinstance(base_url, str)
        or not base_url.startswith(("http://", "https://"))
        or not isinstance(user_id, str)
        or not ov.IDENTIFIER_RE.fullmatch(user_id)
        or not isinstance(api_key, str)
        or isinstance(timeout, bool)
        or not isinstance(timeout, (int, float))
        or not 0 < timeout <= 60
    ):
        raise Failure("settings_invalid")
    return ov.Settings(
        base_url=base_url, api_key=api_key, user_id=user_id, timeout_seconds=float(timeout)
    )


def read_request(expected_schema: str) -> dict:
    data = sys.stdin.buffer.read(MAX_REQUEST_BYTES + 1)
    if len(data) > MAX_REQUEST_BYTES:
        raise Failure("request_too_large")
    try:
        request = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise Failure("request_invalid") from None
    if not isinstance(request, dict) or request.get("schema_version") != expected_schema:
        raise Failure("request_invalid")
    return request


def preference_ref(uri: str) -> str:
    return REF_PREFIX + hashlib.sha256(uri.encode("utf-8")).hexdigest()[:16]


def recall(settings: ov.Settings, request: dict, project: str) -> dict:
    query = request.get("query")
    limit = request.get("limit")
    if not isinstance(query, str) or not query.strip():
        raise Failure("request_invalid")
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise Failure("request_invalid")
    peer = ov.project_peer_token(project)
    root = ov.check_private_target(
        ov.peer_memory_root(settings.user_id, peer), actor_peer_id=peer, user_id=settings.user_id
    )
    client = ov.Client(settings)
    try:
        hits = client.find(query, target_uri=root, peer=peer, limit=limit)
    except ov.OpenVikingError as exc:
        if exc.status == 404 or exc.code == "NOT_FOUND":
            hits = []  # nothing was ever written for this project
        else:
            raise
    items = []
    for hit in hits:
        uri = hit["uri"]
        if not uri.startswith(root + "/") or uri.rsplit("/", 1)[-1].startswith("."):
            continue
        ov.check_private_target(uri, actor_peer_id=peer, user_id=settings.user_id)
        text = client.read(uri, peer=peer)
        if text is None or not text.strip():
            continue  # deleted since the index answered
        items.append({"preference_ref": preference_ref(uri), "summary": text[:MAX_SUMMARY_CHARS]})
        if len(items) >= limit:
            break
    return {"schema_version": RESPONSE_SCHEMA, "items": items}


def doctor(settings: ov.Settings, project: str) -> dict:
    health = ov.Client(settings).health()
    version = ov.parse_version(health.get("version"))
    if not health.get("healthy", True) or version is None or version < ov.MIN_SERVER_VERSION:
        raise Failure("server_unsupported")
    peer = ov.project_peer_token(project)
    root = ov.peer_memory_root(settings.user_id, peer)
    try:
        ov.Client(settings).find("doctor", target_uri=root, peer=peer, limit=1)
    except ov.OpenVikingError as exc:
        if not (exc.status == 404 or exc.code == "NOT_FOUND"):
            raise
    return {
        "schema_version": "loopx_openviking_doctor_v0",
        "status": "healthy",
        "server_version": ".".join(map(str, version)),
    }


def main(argv: list[str]) -> int:
    usage = "usage: loopx_openviking.py recall|doctor --settings FILE --project REF\n"
    if not argv or argv[0] not in ("recall", "doctor"):
        sys.stderr.write(usage)
        return 2
    command, rest = argv[0], argv[1:]
    options = dict(zip(rest[::2], rest[1::2], strict=False))
    if len(rest) % 2 or set(options) != {"--settings", "--project"}:
        sys.stderr.write(usage)
        return 2
    settings_path = os.path.abspath(options["--settings"])
    project = options["--project"]
    if not project or len(project) > 256:
        sys.stderr.write(usage)
        return 2
    try:
        settings = load_settings(settings_path)
        if command == "recall":
            response = recall(settings, read_request(REQUEST_SCHEMA), project)
        else:
            response = doctor(settings, project)  # the doctor probe gets empty stdin
    except Failure as exc:
        sys.stderr.write(f"{exc}\n")
        return 1
    except ov.OpenVikingError as exc:
        sys.stderr.write(f"{exc.kind}\n")
        return 1
    sys.stdout.write(json.dumps(response, ensure_ascii=False, separators=(",", ":")) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
