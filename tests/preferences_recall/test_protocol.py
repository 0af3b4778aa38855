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
    assert (parsed.items, parsed.inventory) == ([], [])


def test_extra_item_and_response_fields_pass_through():
    item = {"preference_ref": "r", "summary": "s", "score": 0.9, "source": "notes"}
    parsed = protocol.parse_response(_response([item], extra_field=1), limit=5)
    assert parsed.items == [item]


@pytest.mark.parametrize(
    ("stdout", "kind"),
    [
        (b"", "invalid_json"),
        (b"\xff\xfe\x00", "invalid_json"),
        (b'{"a": NaN}', "invalid_json"),
        (b"[" * 200 + b"]" * 200, "invalid_json"),
        (b"[]", "invalid_response"),
        (b'{"schema_version": "semantic_preference_provider_response_v0"}', "invalid_response"),
        (_response([{"preference_ref": "r"}]), "invalid_response"),
        (_response([{"preference_ref": 1, "summary": "s"}]), "invalid_response"),
        (_response(["just a string"]), "invalid_response"),
        (_response([{"preference_ref": "r", "summary": "s" * 8000}]), "item_too_large"),
    ],
)
def test_response_defects_reduce_to_one_bounded_kind(stdout, kind):
    assert _kind(stdout) == kind


def test_only_items_within_the_limit_are_checked_and_kept():
    items = [{"preference_ref": f"r{i}", "summary": "s"} for i in range(3)]
    items.append({"preference_ref": "big", "summary": "s" * 9000})
    parsed = protocol.parse_response(_response(items), limit=3)
    assert (len(parsed.items), parsed.truncated) == (3, True)


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
        lambda e: e.update(writeback_triggers=["on_tuesdays"]),
        lambda e: e.update(corpus_id="has spaces"),
        lambda e: e.update(corpus_id="Project.Preferences"),
        lambda e: e.update(scope_ref=""),
        lambda e: e.update(write_mode="operator_managed"),
        lambda e: e.update(read_role="supporting"),
        lambda e: e.update(closure_policy="whenever"),
        lambda e: e.update(source_of_truth="Not A Token"),
    ],
)
def test_inventory_defects_are_invalid_corpus_inventory(mutate):
    # Vocabulary from LoopX loopx/capabilities/semantic_preference/contract.py
    entry = dict(SEED_ENTRY)
    mutate(entry)
    assert _kind(_response([], [entry])) == "invalid_corpus_inventory"


def test_inventory_defaults_follow_loopx():
    entry = dict(SEED_ENTRY)
    entry.pop("closure_policy")
    entry.pop("write_actor_ref")
    entry["writeback_triggers"] = ["source_truth_changed", "explicit_feedback"]
    parsed = protocol.parse_response(_response([], [entry]), limit=5)
    assert parsed.inventory[0]["closure_policy"] == "none"
    assert parsed.inventory[0]["write_actor_ref"] is None
    assert parsed.inventory[0]["writeback_triggers"] == [
        "explicit_feedback",
        "source_truth_changed",
    ]


def test_inventory_must_be_a_bounded_list_without_duplicates():
    assert _kind(_response([], {"corpus_id": "x"})) == "invalid_corpus_inventory"
    assert _kind(_response([], [SEED_ENTRY] * 2)) == "invalid_corpus_inventory"
    many = [dict(SEED_ENTRY, corpus_id=f"c{i}") for i in range(21)]
    assert _kind(_response([], many)) == "invalid_corpus_inventory"


def test_guidance_lists_writable_corpora_and_their_triggers_only():
    notes = dict(
        SEED_ENTRY,
        corpus_id="agent_notes",
        scope_ref="notes-scope",
        writeback_triggers=["explicit_feedback"],
    )
    frozen = dict(SEED_ENTRY, corpus_id="frozen", write_mode="read_only")
    guidance = protocol.maintenance_guidance([SEED_ENTRY, notes, frozen])
    assert guidance == {
        "schema_version": "semantic_preference_maintenance_guidance_v0",
        "corpus_ids": ["project_preferences", "agent_notes"],
        "writeback_triggers": ["explicit_feedback", "source_truth_changed"],
        "closure_outcomes": ["verified", "no_write_rationale"],
        "completion": "provider_write_then_wait_l2_read_and_scoped_recall",
    }
    assert "notes-scope" not in json.dumps(guidance)
    assert protocol.maintenance_guidance([frozen]) is None
    assert protocol.maintenance_guidance([]) is None


def test_recall_with_inventory_returns_it_and_maintenance_guidance(write_json):
    path = write_json("cfg.json", legacy_config(provider("valid")))
    result = services.recall(path, project="p", surface=SURFACE, execute=True)
    assert result["maintenance_guidance"]["corpus_ids"] == ["project_preferences"]
    assert result["corpus_inventory"] == [SEED_ENTRY]


def test_recall_without_inventory_has_an_empty_inventory_and_null_guidance(write_json):
    path = write_json("cfg.json", legacy_config(provider("valid", "--no-inventory")))
    result = services.recall(path, project="p", surface=SURFACE, execute=True)
    assert result["status"] == "completed"
    assert (result["corpus_inventory"], result["maintenance_guidance"]) == ([], None)


@given(st.text(min_size=1, max_size=200))
def test_ref_digest_is_a_16_hex_sha256_prefix(ref):
    digest = protocol.ref_digest(ref)
    assert len(digest) == 16
    assert digest == hashlib.sha256(ref.encode("utf-8")).hexdigest()[:16]


@given(st.dictionaries(st.text(max_size=12), st.text(max_size=12), max_size=4))
def test_context_validation_accepts_exactly_lower_snake_keys_and_bounded_values(mapping):
    # LoopX's rules: keys a-z then a-z0-9_-, values may be empty (≤ 500 characters, no
    # control characters), at most 64 entries.
    valid = len(mapping) <= 64 and all(
        CONTEXT_KEY_RE.fullmatch(k)
        and len(k) <= 64
        and len(v) <= 500
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
    assert isinstance(outcome, HookConfig) or outcome == "config_invalid"
