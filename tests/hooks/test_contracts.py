import copy
import hashlib
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hooks import boundary, contracts
from hooks.capabilities.periodic_report import PeriodicReportRuntimeTrigger
from hooks.errors import ContractViolation
from tests.hooks import providers

REG = PeriodicReportRuntimeTrigger.registration
CONTRACTS = PeriodicReportRuntimeTrigger.intent_contracts


def _variant(**changes):
    packet = copy.deepcopy(REG)
    for key, value in changes.items():
        if key.startswith("budget__"):
            packet["budget"][key.split("__", 1)[1]] = value
        elif value is _DROP:
            packet.pop(key)
        else:
            packet[key] = value
    return packet


_DROP = object()


def test_the_rfc_example_registration_is_accepted_canonically():
    canonical = contracts.validate_registration(REG, intent_contracts=CONTRACTS)
    assert canonical == REG
    assert list(canonical) == sorted(canonical, key=list(canonical).index)


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"command": "sh -c 'curl x'"}, "registration.command:unknown_field"),
        ({"import_string": "os.system"}, "registration.import_string:unknown_field"),
        ({"write_scope": ["repo:write"]}, "registration.write_scope:unknown_field"),
        ({"failure_policy": _DROP}, "registration.failure_policy:missing_field"),
        ({"schema_version": "loopx_capability_hook_registration_v0"}, "schema_version"),
        ({"phase": "interaction_projection"}, "registration.phase:unsupported"),
        ({"failure_policy": "abort"}, "registration.failure_policy:must_be_isolate"),
        ({"failure_policy": "retry"}, "registration.failure_policy:must_be_isolate"),
        ({"hook_id": "other.runtime_trigger"}, "not_owned_by_capability"),
        ({"hook_id": "Periodic Report"}, "registration.hook_id:invalid_token"),
        ({"capability_id": "../periodic"}, "registration.capability_id:invalid_token"),
        ({"event_kinds": []}, "registration.event_kinds:bad_length"),
        ({"event_kinds": ["todo_completed", "todo_completed"]}, "duplicate"),
        ({"event_kinds": ["todo_deleted"]}, "registration.event_kinds[0]:not_allowed"),
        ({"intent_kinds": ["periodic_report.unknown"]}, "unknown_to_capability"),
        ({"intent_kinds": ["other.trigger_evaluation"]}, "not_owned_by_capability"),
        (
            {"intent_kinds": ["periodic_report.trigger_evaluation"] * 2},
            "registration.intent_kinds:duplicate",
        ),
        ({"requested_read_scope": ["full_writeback_payload"]}, "not_allowed"),
        ({"requested_read_scope": ["bounded_event_projection"]}, "settlement_identity_required"),
        ({"budget__timeout_ms": 0}, "registration.budget.timeout_ms:out_of_bounds"),
        ({"budget__timeout_ms": 10001}, "registration.budget.timeout_ms:out_of_bounds"),
        ({"budget__timeout_ms": True}, "registration.budget.timeout_ms:out_of_bounds"),
        ({"budget__timeout_ms": 1.5}, "registration.budget.timeout_ms:out_of_bounds"),
        ({"budget__max_result_bytes": 65537}, "max_result_bytes:out_of_bounds"),
        ({"budget__max_intents_per_dispatch": 17}, "max_intents_per_dispatch:out_of_bounds"),
        ({"budget__max_invocations_per_dispatch": 5}, "max_invocations_per_dispatch"),
        ({"budget__max_invocations_per_dispatch": 0}, "max_invocations_per_dispatch"),
        ({"budget__concurrency": 4}, "registration.budget.concurrency:unknown_field"),
        ({"budget": "unbounded"}, "registration.budget:not_an_object"),
    ],
)
def test_malformed_or_over_budget_registration_is_rejected(changes, reason):
    with pytest.raises(ContractViolation) as caught:
        contracts.validate_registration(_variant(**changes), intent_contracts=CONTRACTS)
    assert caught.value.code == "registration_rejected"
    assert reason in caught.value.reason


def test_registration_that_is_not_an_object_is_rejected():
    for packet in (None, [], "periodic_report.runtime_trigger", 3):
        with pytest.raises(ContractViolation):
            contracts.validate_registration(packet, intent_contracts=CONTRACTS)


def test_budget_bounds_accept_the_edges():
    packet = _variant(
        budget__timeout_ms=10000,
        budget__max_result_bytes=65536,
        budget__max_intents_per_dispatch=16,
        budget__max_invocations_per_dispatch=4,
    )
    assert contracts.validate_registration(packet, intent_contracts=CONTRACTS)["budget"] == {
        "max_intents_per_dispatch": 16,
        "max_invocations_per_dispatch": 4,
        "max_result_bytes": 65536,
        "timeout_ms": 10000,
    }


def test_intent_contract_with_invalid_payload_schema_rejects_the_registration():
    bad = {"periodic_report.trigger_evaluation": {"operations": ["x"], "payload_schema": {}}}
    with pytest.raises(ContractViolation) as caught:
        contracts.validate_registration(REG, intent_contracts=bad)
    assert "payload_schema:invalid_schema" in caught.value.reason


def test_dispatch_id_is_pwh_sha256_of_exactly_the_named_fields():
    fields = {
        "receipt_id": "dwr_1",
        "hook_id": "periodic_report.runtime_trigger",
        "registration_schema_version": contracts.REGISTRATION_SCHEMA,
        "event_kind": "todo_completed",
        "registration_digest": "sha256:" + "a" * 64,
    }
    expected = hashlib.sha256(
        json.dumps(fields, sort_keys=True, separators=(",", ":")).encode()
    ).hexdigest()
    assert contracts.dispatch_id(**fields) == "pwh_" + expected


def test_intent_id_is_pwi_sha256_of_dispatch_kind_policy_and_payload():
    fields = {
        "dispatch_id": "pwh_x",
        "intent_kind": "periodic_report.trigger_evaluation",
        "policy_version": "weekly_v0",
        "payload": {"b": [1, 2], "a": "é"},
    }
    body = json.dumps(fields, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert contracts.intent_id(**fields) == "pwi_" + hashlib.sha256(body.encode()).hexdigest()


@given(
    payload=st.dictionaries(
        st.text(min_size=1, max_size=8), st.integers() | st.text(max_size=8), max_size=5
    ),
    policy=st.sampled_from(["weekly_v0", "weekly_v1"]),
)
def test_intent_id_ignores_key_order_and_changes_with_policy(payload, policy):
    reordered = dict(reversed(list(payload.items())))
    a = contracts.intent_id(dispatch_id="pwh_a", intent_kind="k.k", policy_version=policy,
                            payload=payload)  # fmt: skip
    b = contracts.intent_id(dispatch_id="pwh_a", intent_kind="k.k", policy_version=policy,
                            payload=reordered)  # fmt: skip
    other = "weekly_v1" if policy == "weekly_v0" else "weekly_v0"
    c = contracts.intent_id(dispatch_id="pwh_a", intent_kind="k.k", policy_version=other,
                            payload=payload)  # fmt: skip
    assert a == b
    assert a != c


@given(
    receipt=st.text(min_size=1, max_size=20),
    hook=st.text(min_size=1, max_size=20),
    kind=st.sampled_from(contracts.EVENT_KINDS),
)
def test_dispatch_id_changes_with_every_named_field(receipt, hook, kind):
    base = {
        "receipt_id": receipt,
        "hook_id": hook,
        "registration_schema_version": contracts.REGISTRATION_SCHEMA,
        "event_kind": kind,
        "registration_digest": "sha256:" + "0" * 64,
    }
    first = contracts.dispatch_id(**base)
    assert first.startswith("pwh_")
    assert len(first) == 68
    assert contracts.dispatch_id(**{**base, "receipt_id": receipt + "x"}) != first
    assert contracts.dispatch_id(**{**base, "hook_id": hook + "x"}) != first
    assert contracts.dispatch_id(**{**base, "registration_schema_version": "v1"}) != first
    assert contracts.dispatch_id(**{**base, "registration_digest": "sha256:" + "1" * 64}) != first


@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=30),
                    lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=6), c,
                                                                        max_size=4),
                    max_leaves=20))  # fmt: skip
def test_registration_validator_never_raises_anything_but_a_contract_violation(value):
    with pytest.raises(ContractViolation) as caught:
        contracts.validate_registration(value, intent_contracts=CONTRACTS)
    assert caught.value.code == "registration_rejected"


# -- public boundary ----------------------------------------------------------------------
@pytest.mark.parametrize(
    "text",
    [
        "/home/alice/notes",
        "~/secrets",
        "home/alice/x",
        "C:/Users/bob",
        "segment:/etc/passwd",
        "https://example.org/x",
        "user:pw@host",
        "alice@example.org",
        "a/../b",
        "a/.ssh/id_rsa",
        "password=hunter2",
        "lxh_abcdefghijklmnopqrstuvwxyz",
        "ghp_abcdefghijklmnopqrstuvwxyz0123",
        "AKIAABCDEFGHIJKLMNOP",
        "two words",
        "line\nbreak",
        "x" * 193,
        "",
    ],
)
def test_boundary_refuses_values_that_are_not_provably_public(text):
    assert boundary.token_violation(text) is not None
    assert boundary.violations({"v": text}) != []


@pytest.mark.parametrize(
    "text",
    ["dwr_abc123", "todo:t1:r2", "segment:seg-1", "2026-08-26T00:00:00Z", "demo/state.json"],
)
def test_boundary_accepts_opaque_tokens(text):
    assert boundary.token_violation(text) is None


def test_boundary_reports_field_path_and_rule_but_never_the_value():
    problems = boundary.violations({"projection": {"segment": {"ref": "/home/alice/diary"}}})
    assert problems == ["$.projection.segment.ref:not_opaque_token"]
    assert "alice" not in "".join(problems)


@given(st.text(max_size=60))
def test_boundary_never_accepts_spaces_slash_prefix_or_urls(text):
    if boundary.token_violation(text) is None:
        assert " " not in text
        assert not text.startswith("/")
        assert "://" not in text


# -- result and intent validation -----------------------------------------------------------
def _input(dispatch="pwh_" + "a" * 64):
    return {
        "dispatch_id": dispatch,
        "hook_id": "beta.proposer",
        "capability_id": "beta",
        "source": {"receipt_id": "dwr_1"},
    }


def _validate(result):
    reg = contracts.validate_registration(
        providers.Proposer.registration, intent_contracts=providers.Proposer.intent_contracts
    )
    return contracts.validate_result(
        result,
        registration=reg,
        dispatch_id="pwh_" + "a" * 64,
        intent_contracts=providers.Proposer.intent_contracts,
    )


def test_well_formed_result_is_accepted():
    result = providers.Proposer().make(_input())
    assert _validate(result)["intents"][0]["intent_id"].startswith("pwi_")


@pytest.mark.parametrize(
    ("mutate", "reason"),
    [
        (lambda r: r.update(status="done"), "result.status:unsupported"),
        (lambda r: r.update(extra=1), "result.extra:unknown_field"),
        (lambda r: r.update(dispatch_id="pwh_" + "b" * 64), "result.dispatch_id:mismatch"),
        (lambda r: r.update(hook_id="gamma.proposer"), "result.hook_id:mismatch"),
        (lambda r: r.update(status="not_applicable"), "must_be_empty_when_not_applicable"),
        (lambda r: r.update(intents=[]), "result.intents:intent_budget"),
        (lambda r: r["intents"][0].update(intent_id="pwi_" + "0" * 64), "not_derived"),
        (lambda r: r["intents"][0].update(capability_id="gamma"), "capability_id:mismatch"),
        (lambda r: r["intents"][0].update(intent_kind="beta.other"), "not_registered"),
        (lambda r: r["intents"][0].update(operation="send_email"), "operation:not_declared"),
        (lambda r: r["intents"][0].update(source_dispatch_id="pwh_z"), "source_dispatch_id"),
        (lambda r: r["intents"][0].update(failure_policy="abort"), "must_be_isolate"),
        (lambda r: r["intents"][0].update(grants_new_action_authority=True), "authority"),
        (lambda r: r["intents"][0].update(external_write_performed=True), "external_write"),
        (lambda r: r["intents"][0]["payload"].update(extra="x"), "payload.extra:unknown_field"),
        (lambda r: r["intents"][0]["budget"].update(max_attempts=9), "max_attempts"),
        (lambda r: r["intents"][0].update(requested_write_scope=["a", "a"]), "duplicate"),
        (lambda r: r["intents"][0].update(requested_write_scope=["/etc"]), "invalid_token"),
        (lambda r: r["intents"].append(r["intents"][0]), "duplicate_intent_id"),
    ],
)
def test_result_breaking_a_contract_rule_is_rejected(mutate, reason):
    result = providers.Proposer().make(_input())
    mutate(result)
    with pytest.raises(ContractViolation) as caught:
        _validate(result)
    assert caught.value.code == "result_contract_rejected"
    assert reason in caught.value.reason


def test_intent_payload_with_private_value_is_rejected():
    provider = providers.Proposer()
    intent = provider.note(_input(), variant="/home/alice/x")
    result = contracts.build_result(_input(), [intent])
    with pytest.raises(ContractViolation) as caught:
        _validate(result)
    assert caught.value.reason.endswith("payload.variant:not_public_token")


@pytest.mark.parametrize(
    ("text", "rule"),
    [
        ("https://example.com/ghp_abcdefghijklmnopqrstuvwxyz0123456789/", "url"),
        ("example.com/ghp_abcdefghijklmnopqrstuvwxyz0123456789", "credential"),
        ("example.com/pr/AbCdEfGhIjKlMnOpQrStUvWx12345", "credential"),
        ("example.com/x?token=abc", "not_opaque_token"),
    ],
)
def test_a_hook_token_naming_a_credential_bearing_location_is_refused(text, rule):
    assert boundary.token_violation(text) == rule


def test_a_hook_token_naming_a_plain_location_is_kept():
    assert boundary.token_violation("reports/2026-11/weekly") is None
