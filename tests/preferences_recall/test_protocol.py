import hashlib
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from preferences import services
from preferences.recall import protocol
from preferences.recall.config import CONTEXT_KEY_RE, validate_context
from preferences.recall.errors import SemanticPreferenceError
from tests.preferences_recall.conftest import SURFACE, legacy_config, provider

pytestmark = pytest.mark.django_db

SEED_ENTRY = {
    "corpus_id": "project_preferences",
    "scope_ref": "provider-owned-scope-reference",
    "read_role": "primary",
    "write_mode": "provider_managed",
    "write_actor_ref": "provider-owned-actor-reference",
    "source_of_truth": "repository_revision_and_explicit_feedback",
    "writeback_triggers": ["explicit_feedback", "source_truth_changed"],
    "closure_policy": "write_wait_l2_read_scoped_recall",
}


def _response(items=(), inventory=None, **extra) -> bytes:
    body = {"schema_version": protocol.RESPONSE_SCHEMA, "items": list(items), **extra}
    if inventory is not None:
        body["corpus_inventory"] = inventory
    return json.dumps(body).encode()


def _kind(stdout: bytes, limit: int = 5) -> str:
    with pytest.raises(protocol.ProtocolFailure) as exc:
        protocol.parse_response(stdout, limit=limit)
    return exc.value.kind


def test_the_seed_response_is_accepted_with_its_inventory():
    parsed = protocol.parse_response(
        _response(
            [{"preference_ref": "provider-owned-reference", "summary": "Use concise sections."}],
            [SEED_ENTRY],
        ),
        limit=5,
    )
    assert parsed.items == [
        {"preference_ref": "provider-owned-reference", "summary": "Use concise sections."}
    ]
    assert parsed.truncated is False
    assert parsed.inventory == [SEED_ENTRY]


def test_a_response_without_inventory_stays_compatible():
    parsed = protocol.parse_response(_response([]), limit=5)
    assert (parsed.items, parsed.inventory) == ([], None)


@pytest.mark.parametrize(
    ("stdout", "kind"),
    [
        (b"", "invalid_json"),
        (b"\xff\xfe\x00", "invalid_json"),
        (b'{"a": NaN}', "invalid_json"),
        (b"[]", "invalid_response"),
        (b'{"schema_version": "semantic_preference_provider_response_v0"}', "invalid_response"),
        (_response([], extra_field=1), "invalid_response"),
        (_response([{"preference_ref": "r"}]), "invalid_response"),
        (_response([{"preference_ref": "r", "summary": ""}]), "invalid_response"),
        (_response([{"preference_ref": 1, "summary": "s"}]), "invalid_response"),
        (_response([{"preference_ref": "r", "summary": "s", "score": 1}]), "invalid_response"),
        (_response(["just a string"]), "invalid_response"),
        (_response([{"preference_ref": "r", "summary": "s" * 8000}]), "item_too_large"),
    ],
)
def test_response_defects_reduce_to_one_bounded_kind(stdout, kind):
    assert _kind(stdout) == kind


def test_an_item_of_exactly_8000_serialized_bytes_is_accepted():
    base = {"preference_ref": "r", "summary": ""}
    overhead = len(json.dumps(base, separators=(",", ":")).encode())
    item = {"preference_ref": "r", "summary": "s" * (8000 - overhead)}
    parsed = protocol.parse_response(_response([item]), limit=5)
    assert len(parsed.items) == 1
    item["summary"] += "s"
    assert _kind(_response([item])) == "item_too_large"


@pytest.mark.parametrize(
    "mutate",
    [
        lambda e: e.pop("closure_policy"),
        lambda e: e.update(raw_memory="the whole corpus"),
        lambda e: e.update(writeback_triggers=[]),
        lambda e: e.update(writeback_triggers=["explicit_feedback", "explicit_feedback"]),
        lambda e: e.update(writeback_triggers=["on_tuesdays"]),
        lambda e: e.update(corpus_id="has spaces"),
        lambda e: e.update(scope_ref=""),
        lambda e: e.update(write_mode="Provider Managed"),
        lambda e: e.update(read_role=3),
    ],
)
def test_inventory_defects_are_invalid_corpus_inventory(mutate):
    entry = dict(SEED_ENTRY)
    mutate(entry)
    assert _kind(_response([], [entry])) == "invalid_corpus_inventory"


def test_inventory_must_be_a_bounded_list_without_duplicates():
    assert _kind(_response([], {"corpus_id": "x"})) == "invalid_corpus_inventory"
    assert _kind(_response([], [SEED_ENTRY] * 2)) == "invalid_corpus_inventory"
    many = [dict(SEED_ENTRY, scope_ref=f"s{i}") for i in range(33)]
    assert _kind(_response([], many)) == "invalid_corpus_inventory"


def test_guidance_groups_by_corpus_and_shows_scope_refs_only_as_digests():
    other = dict(SEED_ENTRY, scope_ref="second-scope")
    notes = dict(
        SEED_ENTRY,
        corpus_id="agent_notes",
        scope_ref="notes-scope",
        writeback_triggers=["explicit_feedback"],
        write_mode="operator_managed",
    )
    guidance = protocol.maintenance_guidance([SEED_ENTRY, other, notes])
    assert guidance["schema_version"] == "semantic_preference_maintenance_guidance_v0"
    assert [c["corpus_id"] for c in guidance["corpora"]] == ["agent_notes", "project_preferences"]
    project = guidance["corpora"][1]
    assert project["scope_ref_digests"] == sorted(
        hashlib.sha256(r.encode()).hexdigest()[:16]
        for r in ["provider-owned-scope-reference", "second-scope"]
    )
    assert project["writeback_triggers"] == ["explicit_feedback", "source_truth_changed"]
    assert project["closure_policy"] == "write_wait_l2_read_scoped_recall"
    assert project["write_mode"] == "provider_managed"
    assert guidance["triggers"] == ["explicit_feedback", "source_truth_changed"]
    text = json.dumps(guidance)
    for raw in ("provider-owned-scope-reference", "second-scope", "notes-scope", "actor-reference"):
        assert raw not in text


def test_guidance_rejects_one_corpus_with_two_policies():
    conflicting = dict(SEED_ENTRY, scope_ref="s2", closure_policy="something_else")
    with pytest.raises(protocol.ProtocolFailure) as exc:
        protocol.maintenance_guidance([SEED_ENTRY, conflicting])
    assert exc.value.kind == "invalid_corpus_inventory"


def test_recall_with_inventory_returns_maintenance_guidance(write_json):
    path = write_json("cfg.json", legacy_config(provider("valid")))
    result = services.recall(path, project="p", surface=SURFACE, execute=True)
    guidance = result["maintenance_guidance"]
    assert guidance["corpora"][0]["corpus_id"] == "project_preferences"
    assert guidance["corpora"][0]["scope_ref_digests"] == [
        protocol.ref_digest("provider-owned-scope-reference")
    ]
    assert "provider-owned-scope-reference" not in json.dumps(result)
    assert "provider-owned-actor-reference" not in json.dumps(result)


def test_recall_without_inventory_has_no_guidance(write_json):
    path = write_json("cfg.json", legacy_config(provider("valid", "--no-inventory")))
    result = services.recall(path, project="p", surface=SURFACE, execute=True)
    assert result["status"] == "completed"
    assert "maintenance_guidance" not in result


@given(st.text(min_size=1, max_size=200))
def test_ref_digest_is_a_16_hex_sha256_prefix(ref):
    digest = protocol.ref_digest(ref)
    assert len(digest) == 16
    assert digest == hashlib.sha256(ref.encode("utf-8")).hexdigest()[:16]


@given(st.dictionaries(st.text(max_size=12), st.text(max_size=12), max_size=4))
def test_context_validation_accepts_exactly_lower_snake_keys_and_nonempty_values(mapping):
    valid = all(
        CONTEXT_KEY_RE.match(k)
        and len(k) <= 64
        and 1 <= len(v) <= 500
        and not any(ord(c) < 32 or ord(c) == 127 for c in v)
        for k, v in mapping.items()
    )
    if not valid:
        with pytest.raises(SemanticPreferenceError) as exc:
            validate_context(mapping)
        assert exc.value.code == "invalid_context"
    else:
        assert validate_context(mapping) == dict(sorted(mapping.items()))


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4)
    ),
    max_leaves=20,
)


@given(st.binary(max_size=300) | JSON_VALUES.map(lambda v: json.dumps(v).encode()))
def test_any_stdout_is_either_a_parsed_response_or_one_bounded_failure(stdout):
    outcome = None
    try:
        outcome = len(protocol.parse_response(stdout, limit=5).items)
    except protocol.ProtocolFailure as exc:
        outcome = exc.kind
    assert outcome in protocol.FAILURE_KINDS or 0 <= outcome <= 5


@given(JSON_VALUES)
def test_any_config_value_is_either_valid_or_a_coded_error(raw):
    from preferences.recall.config import HookConfig, validate_config

    try:
        outcome = validate_config(raw)
    except SemanticPreferenceError as exc:
        outcome = exc.code
    assert isinstance(outcome, HookConfig) or outcome == "invalid_config"
