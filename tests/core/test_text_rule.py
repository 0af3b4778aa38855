"""One text rule at the edge: strings that are not UTF-8 text are refused before any
service sees them.

JSON's ``\\ud800`` escape parses to a lone surrogate, which cannot be encoded as UTF-8 —
canonical JSON, digests and the database all fail on it. The API's one JSON parser and
the CLI's readers (JSON files/stdin, arguments) refuse such text as ``invalid_argument``
(400 / exit 2). The property test sends arbitrary strings, surrogates included, into
every string field of every write endpoint (enumerated from the OpenAPI schema) and
finds no 5xx.
"""

import json
import time

import pytest
from django.conf import settings
from django.test import override_settings
from drf_spectacular.generators import SchemaGenerator
from hypothesis import HealthCheck, Phase, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from loopx_site.core import files
from loopx_site.core.errors import DomainError
from preferences.models import PreferenceOperation
from reward_memory.models import MemoryRecord, Review
from tests.helpers import run_cli
from tests.reward_memory import factories as rm

WRITE_METHODS = ("post", "put", "patch", "delete")
MAX_EXAMPLES = 30
SURROGATES = st.integers(0xD800, 0xDFFF).map(chr)
#: Arbitrary text, lone surrogates included (hypothesis's ``text()`` leaves them out).
ANY_TEXT = st.lists(st.one_of(st.characters(), SURROGATES), max_size=12).map("".join)
WITH_SURROGATE = st.tuples(ANY_TEXT, SURROGATES, ANY_TEXT).map("".join)


def utf8(text: str) -> bool:
    """Whether ``text`` is UTF-8 text once it went through JSON (a high and a low
    surrogate side by side are one ``\\uD83D\\uDE00`` pair there, i.e. one character)."""
    try:
        json.loads(json.dumps(text)).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def write_operations() -> dict[str, tuple[str, str]]:
    """operation id → (method, path template) of every write route in the schema."""
    schema = SchemaGenerator().get_schema(request=None, public=True)
    return {
        op["operationId"]: (method, path)
        for path, ops in schema["paths"].items()
        for method, op in ops.items()
        if method in WRITE_METHODS
    }


def raw_post(client, url: str, body) -> object:
    """POST ``body`` as JSON with ``\\uXXXX`` escapes (a surrogate cannot be UTF-8)."""
    return client.generic("POST", url, json.dumps(body), content_type="application/json")


def string_paths(value, path=()):
    """Every path to a string leaf of ``value``."""
    if isinstance(value, str):
        yield path
    elif isinstance(value, dict):
        for key, child in value.items():
            yield from string_paths(child, (*path, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from string_paths(child, (*path, index))


def replaced(value, path, new):
    if not path:
        return new
    copy = json.loads(json.dumps(value))
    target = copy
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = new
    return copy


@pytest.fixture
def write_requests(demo, host_client, operator_client):
    """A base request for every write endpoint over the demo data: clients, URL
    parameters and bodies."""
    host = host_client("demo", "author")
    packet = host.get("/api/v1/goals/demo/agents/author/quota/should-run/").json()
    from reward_memory.models import Corpus

    corpus = Corpus.objects.get(corpus_id="loopx-demo-pr-description")
    recall = rm.recall_request(corpus, queries=["PR description"])
    recalled = raw_post(host, "/api/v1/reward-memory/recall/", {**recall, "execute": True}).json()
    records = list(MemoryRecord.objects.values_list("record_ref", flat=True)[:2]) + ["rmr_x"] * 2
    review = Review.objects.values_list("review_id", flat=True).first() or "review-x"
    params = {
        "goal_id": "demo",
        "agent_id": "author",
        "record_ref": records[0],
        "review_id": review,
        "boundary": "issue_fix.patch_planning",
    }
    source = {"source_ref": "owner-message", "source_quote": "As the owner said today."}
    bodies = {
        "goals_register": {
            "goal_id": "demo", "agent_ids": ["author"], "state_ref": "goals/demo/s.json",
            "instance_id": "instance-1",
        },
        "preferences_remember": {
            "key": "review.collaboration", "statement": "Ask the reviewer first.", **source,
            "expected_revision": "none", "operation_id": "op-prop", "execute": True,
        },
        "preferences_retire": {
            "key": "review.collaboration", **source, "expected_revision": "1",
            "operation_id": "op-retire", "execute": True,
        },
        "hooks_todos_add": {"todo_id": "t-prop", "title": "A title", "segment_ref": "seg-1"},
        "reward_memory_application_receipt": {
            "schema_version": "reward_memory_application_v0",
            "recall_id": recalled.get("recall_id", "rmq_x"),
            "decision": "apply",
            "memory_refs": [i["memory_ref"] for i in recalled.get("items", [])][:1] or ["rmr_x"],
            "reasoning_summary": "Fits the PR.",
            "artifact_verification": {
                "artifact_ref": "pr:1", "artifact_digest": "sha256:" + "c" * 64, "verified": True,
            },
        },
        "reward_memory_candidate_review": {
            "candidate": rm.candidate(), "decision": "accept", "reviewer": "user:r",
            "corpus_id": corpus.corpus_id, "record_ref": records[0],
        },
        "reward_memory_boundary_hook": {
            "goal_id": "demo", "agent_id": "author", "queries": ["plan the patch"],
            "event": rm.scoped_event(corpus_id=corpus.corpus_id),
        },
        "reward_memory_ingest": {
            "goal_id": "demo", "agent_id": "author",
            "event": rm.scoped_event(event_id="ev-prop", corpus_id=corpus.corpus_id),
            "observed_at": "2026-11-30T10:00:00Z", "execute": True,
        },
        "reward_memory_recall": {**recall, "execute": True},
        "reward_memory_record_revoke": {"revocation_ref": "revocation:1"},
        "reward_memory_record_supersede": {"by_record_ref": records[1]},
        "reward_memory_review_apply": {"execute": False},
        "semantic_preferences_doctor": {"config": "demo"},
        "semantic_preferences_provider": {
            "config": "demo",
            "request": {
                "schema_version": "semantic_preference_provider_request_v0",
                "surface": "issue_fix.pr_description", "query": "PR description",
                "limit": 3, "context": {},
            },
        },
        "semantic_preferences_provider_doctor": {"config": "demo"},
        "semantic_preferences_maintenance_receipt": {
            "trigger": "explicit_feedback", "outcome": "verified", "corpus_ids": ["c1"],
            "scope_refs": ["scope:1"], "evidence_ref": "evidence-1",
        },
        "semantic_preferences_recall": {
            "config": "demo", "surface": "issue_fix.pr_description",
            "context": {"repository": "o/r"},
        },
        "semantic_preferences_receipt": {
            "surface": "issue_fix.pr_description", "application_id": "app-1",
            "outcome": "applied", "preference_refs": ["pref-1"],
            "artifact_ref": "https://example.com/pr/1",
        },
        "turn_recall_run": {
            "turn_instance_id": "turn-prop", "quota_decision": packet, "execute": True,
        },
        "turn_recall_quota_admit": {"turn_instance_id": "turn-prop", "execute": True},
        "turn_recall_capsule_verify": {"capsule": {"schema_version": "loopx_turn_capsule_v0"}},
        "hooks_turn_settle": {
            "goal_id": "demo", "agent_id": "author", "todo_id": "demo-write-tests",
            "turn_instance_id": "turn-prop", "event_kind": "todo_completed", "execute": True,
            "reward_memory_reflection": {"summary": "A reflection."},
        },
    }  # fmt: skip
    clients = {"goals_register": operator_client}
    return {"host": host, "clients": clients, "params": params, "bodies": bodies}


@pytest.fixture
def unthrottled():
    config = json.loads(json.dumps(settings.REST_FRAMEWORK))
    config["DEFAULT_THROTTLE_RATES"] = dict.fromkeys(config["DEFAULT_THROTTLE_RATES"])
    with override_settings(REST_FRAMEWORK=config):
        yield


def test_every_write_endpoint_has_a_base_body(write_requests):
    assert set(write_operations()) == set(write_requests["bodies"])


def probe_for(client, method: str, url: str, base: dict):
    """A hypothesis test of one endpoint: one string field (or an extra key) at a time."""
    paths = list(string_paths(base)) or [()]

    @hypothesis_settings(
        max_examples=MAX_EXAMPLES,
        phases=[Phase.generate],  # bounded: no shrinking (the failing field is reported)
        deadline=None,
        database=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
    )
    @given(
        where=st.sampled_from(paths),
        text=st.one_of(ANY_TEXT, WITH_SURROGATE),
        key=st.one_of(st.none(), ANY_TEXT),
    )
    def probe(where, text, key):
        body = replaced(base, where, text) if where else dict(base)
        if key is not None and isinstance(body, dict):
            body = {**body, key: text}  # an unknown field (and key) with the same text
        response = client.generic(
            method.upper(), url, json.dumps(body), content_type="application/json"
        )
        assert response.status_code < 500, (where, response.content[:300])
        sent = [text] if where else []
        if key is not None:
            sent += [key, text]
        if not all(utf8(s) for s in sent):
            assert response.status_code == 400, (where, response.content[:300])
            assert response.json()["code"] == "invalid_argument"

    return probe


@pytest.mark.privacy_exempt("sends arbitrary text, by design")
def test_no_string_in_any_write_endpoint_makes_a_5xx(write_requests, unthrottled):
    demo = write_requests
    failures = {}
    for operation, (method, template) in sorted(write_operations().items()):
        client = demo["clients"].get(operation, demo["host"])
        url = template.format(**demo["params"])
        started = time.monotonic()
        try:
            probe_for(client, method, url, demo["bodies"][operation])()
        except Exception as exc:  # collected: every endpoint is reported
            failures[operation] = f"{type(exc).__name__}: {str(exc)[:300]}"
        print(operation, round(time.monotonic() - started, 2))
    assert failures == {}


def test_a_lone_surrogate_in_a_body_is_400_invalid_argument_naming_the_field(host_client, goal):
    from tests.factories import AgentFactory

    AgentFactory(goal=goal, agent_id="author")
    body = {
        "key": "review.collaboration", "statement": "Ask \ud800 first.",
        "source_ref": "owner-message", "source_quote": "As the owner said.",
        "expected_revision": "none", "operation_id": "op-1", "execute": True,
    }  # fmt: skip
    response = raw_post(
        host_client("demo"), "/api/v1/goals/demo/agents/author/preferences/remember/", body
    )
    assert response.status_code == 400
    envelope = response.json()
    assert (envelope["code"], envelope["status"]) == ("invalid_argument", "invalid_request")
    assert envelope["field"] == "statement"
    assert envelope["schema_version"] == "semantic_preference_error_v0"
    assert not PreferenceOperation.objects.exists()


def test_a_lone_surrogate_in_a_nested_key_is_refused_without_echoing_the_key(host_client, goal):
    response = raw_post(
        host_client("demo"),
        "/api/v1/reward-memory/ingest/",
        {"event": {"source": {"secret-ish key \udfff": "x"}}},
    )
    assert response.status_code == 400
    envelope = response.json()
    assert envelope["code"] == "invalid_argument"
    assert envelope["field"] == "event.source.<key>"


def test_a_valid_surrogate_pair_is_ordinary_text(operator_client, goal):
    response = raw_post(
        operator_client, "/api/v1/goals/", {"goal_id": "demo", "agent_ids": ["author"],
                                            "state_ref": "emoji-\U0001f600"},
    )  # fmt: skip
    assert response.status_code == 200, response.content


@pytest.mark.parametrize(
    "text", ['{"a": "\\ud800"}', '{"\\udc00": 1}', '[["x", "\\uDFFF"]]', '{"a": ["\\udbff"]}']
)
def test_loads_json_refuses_lone_surrogates_as_invalid_argument(text):
    with pytest.raises(DomainError) as refused:
        files.loads_json(text, option="input", require_object=False)
    assert refused.value.code == "invalid_argument"
    assert refused.value.field == "input"


def test_loads_json_keeps_escaped_backslashes_and_pairs():
    assert files.loads_json('{"a": "\\\\ud800", "b": "\\ud83d\\ude00"}', option="input") == {
        "a": "\\ud800",
        "b": "\U0001f600",
    }


def test_cli_json_file_with_a_lone_surrogate_exits_2_before_any_service(db, tmp_path):
    # (agent_turn_recall reads its packet only once turn admission is enabled, as LoopX;
    # verify-capsule reads its file first)
    path = tmp_path / "capsule.json"
    path.write_text('{"schema_version": "loopx_turn_capsule_v0", "goal_id": "\\ud800"}')
    result = run_cli(
        "turn", "verify-capsule", "--goal-id", "demo", "--agent-id", "author",
        "--capsule-file", str(path),
    )  # fmt: skip
    assert result.code == 2, result.stdout
    assert result.json["code"] == "invalid_argument"
    assert "Traceback" not in result.stderr


def test_cli_stdin_with_a_lone_surrogate_exits_2(db):
    result = run_cli(
        "reward_memory", "recall", "--input", "-",
        stdin='{"schema_version": "reward_memory_recall_request_v0", "surface": "\\udc80"}',
    )  # fmt: skip
    assert result.code == 2, result.stdout
    assert result.json["code"] == "invalid_argument"


@pytest.mark.parametrize(
    ("argv", "field"),
    [
        (["goal", "register", "--goal-id", "demo", "--agent-id", "a\udcff"], "agent_id"),
        (["quota", "should-run", "--goal-id=de\udc80mo", "--agent-id", "author"], "goal_id"),
        (["semantic_preference", "recall", "--config", "demo", "--surface", "s.x",
          "--context", "k=\udcff"], "context"),
    ],
)  # fmt: skip
def test_cli_argument_that_is_not_utf8_exits_2_naming_the_option(db, argv, field):
    result = run_cli(*argv)
    assert result.code == 2, result.stdout
    assert (result.json["code"], result.json["field"]) == ("invalid_argument", field)
    assert "\udcff" not in result.stdout
    assert "\udc80" not in result.stdout
