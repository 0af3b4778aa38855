"""The OpenViking adapter without a server: peer tokens, the private-target rule, and
failure mapping against a tiny scripted HTTP stub on loopback (part of the main suite)."""

import json
import os
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import loopx_site.openviking_http as ov
from reward_memory import providers
from reward_memory.providers import Binding, ProviderUnavailable, ProviderWrite
from reward_memory.providers.openviking import OpenVikingProvider
from tests.openviking.harness import free_port

SURFACE = "issue_fix.pr_description"
ROOT = Path(__file__).resolve().parents[2]
IDS = st.from_regex(r"[a-z][a-z0-9_-]{0,40}", fullmatch=True)


# -- peer tokens --------------------------------------------------------------------------


def test_peer_token_is_deterministic_and_openviking_valid():
    first = ov.peer_token("demo", "explorer")
    assert first == ov.peer_token("demo", "explorer")
    assert first.startswith("loopx-")
    assert ov.is_valid_peer(first)
    assert ov.IDENTIFIER_RE.match(first)


def test_same_agent_name_in_another_goal_gets_another_peer():
    assert ov.peer_token("goal-a", "explorer") != ov.peer_token("goal-b", "explorer")
    # No concatenation ambiguity: ("ab", "c") and ("a", "bc") differ.
    assert ov.peer_token("ab", "c") != ov.peer_token("a", "bc")


@given(goal=IDS, agent=IDS, other_goal=IDS)
def test_peer_tokens_are_valid_and_separate_goals(goal, agent, other_goal):
    token = ov.peer_token(goal, agent)
    assert ov.is_valid_peer(token)
    assert len(token) == len("loopx-") + 32
    if other_goal != goal:
        assert ov.peer_token(other_goal, agent) != token


def test_project_peer_never_collides_with_an_agent_peer():
    assert ov.project_peer_token("demo") != ov.peer_token("demo", "demo")
    assert ov.is_valid_peer(ov.project_peer_token("github.com/owner/repo"))


def test_provider_actor_peer_is_the_derived_token():
    assert OpenVikingProvider().actor_peer_for("demo", "author") == ov.peer_token("demo", "author")


def test_missing_goal_or_agent_has_no_peer():
    with pytest.raises(ValueError):
        ov.peer_token("", "author")


# -- the private-target rule ----------------------------------------------------------------

PEER = ov.peer_token("demo", "author")
ROOT_URI = f"viking://user/u1/peers/{PEER}/memories"


@pytest.mark.parametrize(
    "uri",
    [ROOT_URI, f"{ROOT_URI}/reward_memory/review_policy/{SURFACE}/abc.md"],
)
def test_peer_memory_paths_are_allowed(uri):
    assert ov.check_private_target(uri, actor_peer_id=PEER, user_id="u1") == uri


@pytest.mark.parametrize(
    ("uri", "peer", "reason"),
    [
        (f"viking://agent/{PEER}/memories/x", PEER, ov.AGENT_SCOPE),
        (f"VIKING://agent/{PEER}/memories/x", PEER, ov.AGENT_SCOPE),
        (f"viking://AGENT/{PEER}/memories/x", PEER, ov.AGENT_SCOPE),
        ("Viking://Agent/x", None, ov.AGENT_SCOPE),
        ("viking://user/u1/memories/reward_memory", PEER, ov.NOT_PEER_MEMORY),
        (f"viking://user/u1/peers/{PEER}/resources/x", PEER, ov.NOT_PEER_MEMORY),
        (f"VIKING://user/u1/peers/{PEER}/memories/x", PEER, ov.NOT_PEER_MEMORY),
        (f"viking://USER/u1/peers/{PEER}/memories/x", PEER, ov.NOT_PEER_MEMORY),
        (f"{ROOT_URI}/../../other/memories/x", PEER, ov.NOT_PEER_MEMORY),
        (f"{ROOT_URI}//x", PEER, ov.NOT_PEER_MEMORY),
        (f"{ROOT_URI}/x%2Fy", PEER, ov.NOT_PEER_MEMORY),
        (f"{ROOT_URI}/x?y=1", PEER, ov.NOT_PEER_MEMORY),
        (f"{ROOT_URI}/", PEER, ov.NOT_PEER_MEMORY),
        ("https://example.invalid/x", PEER, ov.NOT_PEER_MEMORY),
        (f"viking://user/u2/peers/{PEER}/memories/x", PEER, ov.USER_MISMATCH),
        (f"viking://user/u1/peers/{PEER}/memories/x", "loopx-other", ov.PEER_MISMATCH),
        (f"viking://user/u1/peers/{PEER}/memories/x", None, ov.INVALID_PEER),
        (f"viking://user/u1/peers/{PEER}/memories/x", "a/b", ov.INVALID_PEER),
        (f"viking://user/u1/peers/{PEER}/memories/x", "..", ov.INVALID_PEER),
    ],
)
def test_targets_outside_the_actor_peer_memory_are_refused(uri, peer, reason):
    with pytest.raises(ov.TargetRefused) as refused:
        ov.check_private_target(uri, actor_peer_id=peer, user_id="u1")
    assert refused.value.reason == reason
    assert refused.value.kind == "forbidden"
    assert uri not in str(refused.value)


# -- a scripted HTTP stub ------------------------------------------------------------------


class Stub:
    """Answers each request with the next scripted (status, body, delay) and records it."""

    def __init__(self):
        self.script: list[tuple[int, object, float]] = []
        self.seen: list[dict] = []
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *_):
                pass

            def _answer(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                stub.seen.append(
                    {
                        "method": self.command,
                        "path": self.path,
                        "headers": {k.lower(): v for k, v in self.headers.items()},
                        "body": body,
                    }
                )
                status, payload, delay = stub.script.pop(0) if stub.script else (200, {}, 0)
                if delay:
                    time.sleep(delay)
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:
                    pass

            do_GET = do_POST = do_DELETE = _answer

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        ).start()
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def stub():
    server = Stub()
    yield server
    server.close()


def make_provider(base_url, *, timeout=5.0, retries=2, user_id="u1"):
    return OpenVikingProvider(
        ov.Settings(
            base_url=base_url,
            api_key="test-key",
            user_id=user_id,
            timeout_seconds=timeout,
            retries=retries,
        ),
        sleep=lambda _s: None,
    )


BINDING = Binding("openviking", f"{ROOT_URI}/reward_memory/review_policy", PEER)
REF = f"{ROOT_URI}/reward_memory/review_policy/{SURFACE}/k1.md"
OK_WRITE = {"status": "ok", "result": {"uri": REF, "vector_status": "complete"}}


def write(provider, content=b'{"a":1}'):
    return provider.write(BINDING, ProviderWrite(REF, SURFACE, content, "a"))


def test_resource_refs_are_markdown_files_under_the_surface():
    ref = OpenVikingProvider().resource_ref(BINDING, surface=SURFACE, key="k1")
    assert ref == REF


def test_unconfigured_provider_is_not_installed_and_sends_nothing(stub):
    provider = OpenVikingProvider(ov.Settings(base_url="", user_id=""))
    with pytest.raises(ProviderUnavailable) as failed:
        write(provider)
    assert failed.value.kind == "not_installed"
    assert provider.preflight(BINDING).failure_kind == "not_installed"
    assert stub.seen == []


def test_registered_provider_without_settings_is_not_installed(settings):
    settings.OPENVIKING_BASE_URL = ""
    with pytest.raises(ProviderUnavailable) as failed:
        providers.get("openviking").readback(BINDING, REF)
    assert failed.value.kind == "not_installed"


@pytest.mark.parametrize(
    "binding",
    [
        Binding("openviking", f"viking://agent/{PEER}/memories/x", PEER),
        Binding("openviking", f"VIKING://Agent/{PEER}/memories/x", PEER),
        Binding("openviking", "viking://user/u1/memories/x", PEER),
        Binding("openviking", BINDING.scope_ref, None),
        Binding("openviking", BINDING.scope_ref, "loopx-someone-else"),
    ],
)
def test_refused_targets_send_no_request(stub, binding):
    provider = make_provider(stub.base_url)
    ref = provider.resource_ref(binding, surface=SURFACE, key="k1")
    for call in (
        lambda: provider.write(binding, ProviderWrite(ref, SURFACE, b"{}", "x")),
        lambda: provider.readback(binding, ref),
        lambda: provider.recall(binding, surface=SURFACE, query="x", limit=1),
        lambda: provider.retire(binding, ref),
    ):
        with pytest.raises(ProviderUnavailable) as refused:
            call()
        assert refused.value.kind == "forbidden"
    assert provider.preflight(binding).status == "unavailable"
    assert stub.seen == []


def test_resource_outside_the_binding_scope_is_refused(stub):
    provider = make_provider(stub.base_url)
    with pytest.raises(ProviderUnavailable):
        provider.readback(BINDING, f"{ROOT_URI}/elsewhere/k1.md")
    assert stub.seen == []


def test_every_request_carries_the_actor_peer_and_key(stub):
    stub.script = [(200, OK_WRITE, 0)]
    assert write(make_provider(stub.base_url)).status == "committed"
    (request,) = stub.seen
    assert request["path"] == "/api/v1/content/write"
    assert request["headers"]["x-openviking-actor-peer"] == PEER
    assert request["headers"]["x-api-key"] == "test-key"
    body = json.loads(request["body"])
    assert body == {"uri": REF, "content": '{"a":1}', "mode": "replace", "wait": True}


def test_missing_file_is_created(stub):
    stub.script = [
        (404, {"status": "error", "error": {"code": "NOT_FOUND"}}, 0),
        (200, OK_WRITE, 0),
    ]
    assert write(make_provider(stub.base_url)).status == "committed"
    assert [json.loads(r["body"])["mode"] for r in stub.seen] == ["replace", "create"]


@pytest.mark.parametrize(
    ("status", "kind"),
    [(401, "forbidden"), (403, "forbidden"), (400, "invalid_response"), (422, "invalid_response")],
)
def test_client_errors_map_to_bounded_kinds_without_retry(stub, status, kind):
    stub.script = [(status, {"status": "error", "error": {"code": "X", "message": "secret"}}, 0)]
    with pytest.raises(ProviderUnavailable) as failed:
        make_provider(stub.base_url).readback(BINDING, REF)
    assert failed.value.kind == kind
    assert "secret" not in str(failed.value)
    assert len(stub.seen) == 1


def test_server_errors_are_retried_a_bounded_number_of_times_then_unavailable(stub):
    stub.script = [(503, {}, 0)] * 5
    with pytest.raises(ProviderUnavailable) as failed:
        make_provider(stub.base_url, retries=2).readback(BINDING, REF)
    assert failed.value.kind == "unavailable"
    assert len(stub.seen) == 3


def test_a_retried_write_resends_the_identical_request(stub):
    stub.script = [(502, {}, 0), (200, OK_WRITE, 0)]
    assert write(make_provider(stub.base_url)).status == "committed"
    first, second = stub.seen
    assert first["path"] == second["path"]
    assert first["body"] == second["body"]


def test_missing_file_reads_back_as_none(stub):
    stub.script = [(404, {"status": "error", "error": {"code": "NOT_FOUND"}}, 0)]
    assert make_provider(stub.base_url).readback(BINDING, REF) is None


def test_readback_is_the_exact_text(stub):
    stub.script = [(200, {"status": "ok", "result": '{"a":1} '}, 0)]
    assert make_provider(stub.base_url).readback(BINDING, REF) == b'{"a":1} '


@pytest.mark.parametrize(
    "body", [b"not json", b"[]", json.dumps({"status": "ok", "result": 7}).encode()]
)
def test_malformed_answers_are_invalid_response(stub, body):
    stub.script = [(200, body, 0)]
    with pytest.raises(ProviderUnavailable) as failed:
        make_provider(stub.base_url).readback(BINDING, REF)
    assert failed.value.kind == "invalid_response"


def test_slow_read_times_out(stub):
    stub.script = [(200, {}, 1.0)] * 2
    with pytest.raises(ProviderUnavailable) as failed:
        make_provider(stub.base_url, timeout=0.2, retries=1).readback(BINDING, REF)
    assert failed.value.kind == "timed_out"
    assert len(stub.seen) == 2


def test_a_write_that_times_out_is_an_ambiguous_pending_commit(stub):
    stub.script = [(200, OK_WRITE, 1.0)] * 2
    result = write(make_provider(stub.base_url, timeout=0.2, retries=1))
    assert (result.status, result.resource_ref) == ("pending", REF)


def test_a_write_whose_vectors_are_still_queued_is_pending(stub):
    queued = {"status": "ok", "result": {"uri": REF, "vector_status": "queued"}}
    stub.script = [(200, queued, 0)]
    assert write(make_provider(stub.base_url)).status == "pending"


def test_server_down_is_unavailable():
    provider = make_provider(f"http://127.0.0.1:{free_port()}", retries=1)
    with pytest.raises(ProviderUnavailable) as failed:
        provider.recall(BINDING, surface=SURFACE, query="x", limit=1)
    assert failed.value.kind == "unavailable"
    preflight = provider.preflight(BINDING)
    assert (preflight.status, preflight.failure_kind) == ("unavailable", "unavailable")


@pytest.mark.parametrize(
    ("version", "status", "kind"),
    [
        ("0.4.18", "incomplete", "not_installed"),
        ("0.4.19", "ready", None),
        ("0.5.2", "ready", None),
        ("garbage", "incomplete", "invalid_response"),
    ],
)
def test_preflight_needs_server_0_4_19(stub, version, status, kind):
    stub.script = [(200, {"status": "ok", "healthy": True, "version": version}, 0)]
    report = make_provider(stub.base_url).preflight_report(BINDING)
    assert (report.status, report.failure_kind) == (status, kind)
    assert stub.seen[0]["path"] == "/health"


def test_preflight_flags_a_key_of_another_user(stub):
    stub.script = [(200, {"status": "ok", "healthy": True, "version": "0.5.2", "user_id": "x"}, 0)]
    report = make_provider(stub.base_url).preflight_report(BINDING)
    assert (report.status, report.failure_kind) == ("incomplete", "forbidden")


def test_recall_keeps_only_files_of_the_exact_surface_and_reads_each(stub):
    surface_root = f"{ROOT_URI}/reward_memory/review_policy/{SURFACE}"
    hits = {
        "status": "ok",
        "result": {
            "memories": [
                {"uri": f"{surface_root}/.overview.md", "score": 0.9},
                {"uri": f"{surface_root}/k1.md", "score": 0.8},
                {"uri": f"{surface_root}/deeper/k2.md", "score": 0.7},
                {"uri": f"{ROOT_URI}/elsewhere/k3.md", "score": 0.6},
            ]
        },
    }
    stub.script = [(200, hits, 0), (200, {"status": "ok", "result": "body"}, 0)]
    items = make_provider(stub.base_url).recall(BINDING, surface=SURFACE, query="q", limit=4)
    assert [(i.resource_ref, i.content) for i in items] == [(f"{surface_root}/k1.md", b"body")]
    assert json.loads(stub.seen[0]["body"])["target_uri"] == surface_root


# -- the extension program ------------------------------------------------------------------


def run_extension(args, request, tmp_path):
    script = ROOT / "preferences" / "extensions" / "loopx_openviking.py"
    return subprocess.run(
        [sys.executable, str(script), *args],
        input=json.dumps(request).encode(),
        capture_output=True,
        env={"PATH": os.environ.get("PATH", ""), "LANG": "C.UTF-8"},
        cwd=tmp_path,
        timeout=60,
        check=False,
    )


RECALL_REQUEST = {
    "schema_version": "semantic_preference_provider_request_v0",
    "protocol": "semantic_preference_provider_v0",
    "surface": SURFACE,
    "query": "PR sections",
    "limit": 3,
    "context": {},
}


@pytest.mark.parametrize(
    "settings_doc",
    [
        None,
        {"schema_version": "wrong"},
        {"schema_version": "loopx_openviking_provider_settings_v0"},
    ],
)
def test_extension_without_valid_settings_fails_with_no_output(tmp_path, settings_doc):
    args = ["recall"]
    if settings_doc is not None:
        (tmp_path / "s.json").write_text(json.dumps(settings_doc))
        args += ["--settings", "s.json", "--project", "demo"]
    done = run_extension(args, RECALL_REQUEST, tmp_path)
    assert done.returncode != 0
    assert done.stdout == b""


def test_extension_answers_the_protocol_from_the_project_peer(stub, tmp_path):
    peer = ov.project_peer_token("demo")
    root = ov.peer_memory_root("u1", peer)
    stub.script = [
        (200, {"status": "ok", "result": {"memories": [{"uri": f"{root}/p/a.md", "score": 1}]}}, 0),
        (200, {"status": "ok", "result": "Use Summary/Testing/Risk sections."}, 0),
    ]
    (tmp_path / "s.json").write_text(
        json.dumps(
            {
                "schema_version": "loopx_openviking_provider_settings_v0",
                "base_url": stub.base_url,
                "user_id": "u1",
                "api_key": "k",
            }
        )
    )
    done = run_extension(
        ["recall", "--settings", "s.json", "--project", "demo"], RECALL_REQUEST, tmp_path
    )
    assert done.returncode == 0
    response = json.loads(done.stdout)
    assert response["schema_version"] == "semantic_preference_provider_response_v0"
    (item,) = response["items"]
    assert item["summary"] == "Use Summary/Testing/Risk sections."
    assert item["preference_ref"].startswith("openviking:")
    assert root.encode() not in done.stdout
    assert stub.seen[0]["headers"]["x-openviking-actor-peer"] == peer
    assert json.loads(stub.seen[0]["body"])["target_uri"] == root


def test_a_file_created_concurrently_is_replaced(stub):
    missing = {"status": "error", "error": {"code": "NOT_FOUND"}}
    exists = {"status": "error", "error": {"code": "CONFLICT"}}
    stub.script = [(404, missing, 0), (409, exists, 0), (200, OK_WRITE, 0)]
    assert write(make_provider(stub.base_url)).status == "committed"
    assert [json.loads(r["body"])["mode"] for r in stub.seen] == ["replace", "create", "replace"]


# -- redirects: credentials never leave the configured origin ---------------------------


class Redirector:
    """Answers every request with ``status`` and ``Location: <target><path>``."""

    def __init__(self, status: int, target: str):
        self.seen: list[str] = []
        redirector = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *_):
                pass

            def _answer(self):
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    self.rfile.read(length)
                redirector.seen.append(self.path)
                self.send_response(status)
                self.send_header("Location", target + self.path)
                self.send_header("Content-Length", "0")
                self.end_headers()

            do_GET = do_POST = do_DELETE = _answer

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        ).start()
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_a_redirect_to_another_origin_is_not_followed_and_sends_no_credentials(stub, status):
    redirector = Redirector(status, stub.base_url)  # another port: another origin
    stub.script = [(200, OK_WRITE, 0)] * 4
    try:
        provider = make_provider(redirector.base_url)
        for call in (lambda: write(provider), lambda: provider.readback(BINDING, REF)):
            with pytest.raises(ProviderUnavailable) as failed:
                call()
            assert failed.value.kind == "invalid_response"  # bounded, and not retried
        health = ov.Client(ov.Settings(base_url=redirector.base_url, api_key="test-key",
                                       user_id="u1"))  # fmt: skip
        with pytest.raises(ov.OpenVikingError) as refused:
            health.health()
        assert (refused.value.kind, refused.value.status) == ("invalid_response", status)
    finally:
        redirector.close()
    assert stub.seen == []  # the other origin never saw the key or the peer header
    assert len(redirector.seen) == 3  # one request per call, no retry
