"""Provider-neutral contracts of the post-writeback hook phase (RFC sections 6-9).

This module owns the schema versions, the identity derivations and the validators of
registration, result and intent packets. It never names a concrete capability: a
provider declares its registration packet and, per intent kind, the operations and the
payload schema it may propose (``intent_contracts``); the validators here decide.

Validators raise ``ContractViolation(code, reason)``; ``reason`` names the rule and
field only, so it is safe to store and show.

It also builds the packets the services hand to another program: the intent packet a
governed executor is given (``executor_packet``), and a completion validator's manifest
(whose digest identifies an installation) and stdin input (``validator_manifest``,
``validator_input``). They are protocol, not renderings: ``hooks.documents`` shows them.
"""

import re
from typing import Any

from hooks import boundary
from hooks.errors import REGISTRATION_REJECTED, RESULT_CONTRACT_REJECTED, ContractViolation
from loopx_site.core import clock
from loopx_site.core.canonical import canonical_bytes, digest_ref, prefixed_id

REGISTRATION_SCHEMA = "loopx_post_writeback_capability_hook_registration_v0"
INPUT_SCHEMA = "loopx_post_writeback_hook_input_v0"
PROJECTION_SCHEMA = "loopx_post_writeback_event_projection_v0"
RESULT_SCHEMA = "loopx_post_writeback_hook_result_v0"
INTENT_SCHEMA = "loopx_post_writeback_intent_v0"
DISPATCH_RECEIPT_SCHEMA = "loopx_post_writeback_dispatch_receipt_v0"
#: The completion-validator protocol: the manifest an operator installs and the one
#: object a validator reads on stdin.
VALIDATOR_PROTOCOL = "loopx_completion_validator_v0"
VALIDATOR_MANIFEST_SCHEMA = "loopx_completion_validator_manifest_v0"
VALIDATOR_INPUT_SCHEMA = "loopx_completion_validator_input_v0"

PHASE = "post_writeback"
STEP_KIND = "durable_writeback"
EVENT_KINDS = ("todo_completed", "replan_recorded")
READ_SCOPES = ("settlement_identity", "bounded_event_projection")
FAILURE_POLICY = "isolate"

CAPABILITY_RE = re.compile(r"^[a-z][a-z0-9_]{0,62}$")
QUALIFIED_RE = re.compile(r"^[a-z][a-z0-9_]{0,62}\.[a-z][a-z0-9_]{0,62}$")
OPERATION_RE = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
POLICY_VERSION_RE = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
WRITE_SCOPE_RE = re.compile(r"^[a-z][a-z0-9_.:-]{0,63}$")
DISPATCH_ID_RE = re.compile(r"^pwh_[0-9a-f]{64}$")
INTENT_ID_RE = re.compile(r"^pwi_[0-9a-f]{64}$")

# Registration budget bounds (spec: invocations 1-4, intents 1-16, bytes <= 65536,
# timeout 1-10000 ms).
BUDGET_BOUNDS = {
    "max_invocations_per_dispatch": (1, 4),
    "max_intents_per_dispatch": (1, 16),
    "max_result_bytes": (1, 65536),
    "timeout_ms": (1, 10000),
}
INTENT_BUDGET_BOUNDS = {"max_attempts": (1, 4), "max_result_bytes": (1, 65536)}
MAX_INTENT_KINDS = 8
MAX_WRITE_SCOPES = 8
MAX_REGISTRATION_BYTES = 4096

REGISTRATION_FIELDS = frozenset(
    {
        "schema_version",
        "hook_id",
        "capability_id",
        "phase",
        "event_kinds",
        "intent_kinds",
        "requested_read_scope",
        "budget",
        "failure_policy",
    }
)
RESULT_FIELDS = frozenset({"schema_version", "dispatch_id", "hook_id", "status", "intents"})
INTENT_FIELDS = frozenset(
    {
        "schema_version",
        "intent_id",
        "hook_id",
        "capability_id",
        "source_dispatch_id",
        "intent_kind",
        "operation",
        "policy_version",
        "payload",
        "budget",
        "requested_write_scope",
        "failure_policy",
        "grants_new_action_authority",
        "external_write_performed",
    }
)

BOUNDARY_FLAGS = {
    "raw_task_text_recorded": False,
    "raw_logs_recorded": False,
    "raw_trajectory_recorded": False,
    "raw_session_transcript_recorded": False,
    "credential_values_recorded": False,
    "absolute_paths_recorded": False,
}


# -- identities -------------------------------------------------------------------------
def effect_id(
    *, goal_id: str, agent_id: str, todo_id: str, turn_instance_id: str, event_kind: str
) -> str:
    return prefixed_id(
        "eff_",
        {
            "goal_id": goal_id,
            "agent_id": agent_id,
            "todo_id": todo_id,
            "turn_instance_id": turn_instance_id,
            "event_kind": event_kind,
        },
    )


def receipt_id(*, effect_id: str) -> str:
    return prefixed_id("dwr_", {"effect_id": effect_id, "step_kind": STEP_KIND})


def spend_id(*, receipt_id: str) -> str:
    return prefixed_id("qsp_", {"receipt_id": receipt_id})


def dispatch_id(
    *,
    receipt_id: str,
    hook_id: str,
    registration_schema_version: str,
    event_kind: str,
    registration_digest: str,
) -> str:
    """``pwh_`` + sha256 of the committed receipt, hook, registration schema, event and
    the registration digest: a changed registration (its packet, intent contracts or
    policy version) creates a new identity; the old dispatch stays in the journal."""
    return prefixed_id(
        "pwh_",
        {
            "receipt_id": receipt_id,
            "hook_id": hook_id,
            "registration_schema_version": registration_schema_version,
            "event_kind": event_kind,
            "registration_digest": registration_digest,
        },
    )


def intent_id(*, dispatch_id: str, intent_kind: str, policy_version: str, payload: Any) -> str:
    """``pwi_`` + sha256 of dispatch, kind, policy version and the canonical payload."""
    return prefixed_id(
        "pwi_",
        {
            "dispatch_id": dispatch_id,
            "intent_kind": intent_kind,
            "policy_version": policy_version,
            "payload": payload,
        },
    )


def registration_digest(
    registration: dict, *, intent_contracts: dict | None = None, policy_version: str | None = None
) -> str:
    """Digest of everything a registration binds: the packet, the intent contracts it
    uses and the provider's declared policy version (when it declares one)."""
    return digest_ref(
        {
            "registration": registration,
            "intent_contracts": intent_contracts or {},
            "policy_version": policy_version,
        }
    )


# -- small shape helpers -------------------------------------------------------------------
def _fail(code: str, reason: str):
    raise ContractViolation(code, reason)


def _exact_fields(value: Any, fields: frozenset, where: str, code: str) -> dict:
    if not isinstance(value, dict):
        _fail(code, f"{where}:not_an_object")
    keys = set(value)
    unknown = sorted(k for k in keys - fields if isinstance(k, str))
    if any(not isinstance(k, str) for k in keys):
        _fail(code, f"{where}:non_string_key")
    if unknown:
        _fail(code, f"{where}.{unknown[0][:40]}:unknown_field")
    missing = sorted(fields - keys)
    if missing:
        _fail(code, f"{where}.{missing[0]}:missing_field")
    return value


def _token(value: Any, pattern: re.Pattern, where: str, code: str) -> str:
    if not isinstance(value, str) or not pattern.fullmatch(value):
        _fail(code, f"{where}:invalid_token")
    return value


def _int_in(value: Any, bounds: tuple[int, int], where: str, code: str) -> int:
    low, high = bounds
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        _fail(code, f"{where}:out_of_bounds")
    return value


def _token_list(
    value: Any,
    *,
    where: str,
    code: str,
    pattern: re.Pattern | None = None,
    allowed: tuple | frozenset | None = None,
    min_items: int = 1,
    max_items: int,
) -> list[str]:
    if not isinstance(value, list) or not min_items <= len(value) <= max_items:
        _fail(code, f"{where}:bad_length")
    for index, item in enumerate(value):
        if not isinstance(item, str):
            _fail(code, f"{where}[{index}]:not_a_string")
        if pattern is not None and not pattern.fullmatch(item):
            _fail(code, f"{where}[{index}]:invalid_token")
        if allowed is not None and item not in allowed:
            _fail(code, f"{where}[{index}]:not_allowed")
    if len(set(value)) != len(value):
        _fail(code, f"{where}:duplicate")
    return list(value)


def _budget(value: Any, bounds: dict, where: str, code: str) -> dict:
    _exact_fields(value, frozenset(bounds), where, code)
    return {k: _int_in(value[k], bounds[k], f"{where}.{k}", code) for k in sorted(bounds)}


# -- registration ----------------------------------------------------------------------------
def _registration_list(reg: dict, name: str, *, allowed=None, pattern=None, max_items=None):
    """A registration's token list ``name`` (at most ``len(allowed)`` items by default)."""
    return _token_list(
        reg[name],
        where=f"registration.{name}",
        code=REGISTRATION_REJECTED,
        pattern=pattern,
        allowed=allowed,
        max_items=len(allowed) if max_items is None else max_items,
    )


def validate_registration(packet: Any, *, intent_contracts: dict) -> dict:
    """Return the canonical registration or raise ``ContractViolation(registration_rejected)``.

    Exact field set (so no command, import string or write scope can ride along), phase
    ``post_writeback``, known event kinds, intent kinds owned by the capability and
    declared by the provider, known read scopes, bounded budgets, ``isolate`` policy.
    """
    code = REGISTRATION_REJECTED
    reg = _exact_fields(packet, REGISTRATION_FIELDS, "registration", code)
    if reg["schema_version"] != REGISTRATION_SCHEMA:
        _fail(code, "registration.schema_version:unsupported")
    capability = _token(reg["capability_id"], CAPABILITY_RE, "registration.capability_id", code)
    hook = _token(reg["hook_id"], QUALIFIED_RE, "registration.hook_id", code)
    if not hook.startswith(capability + "."):
        _fail(code, "registration.hook_id:not_owned_by_capability")
    if reg["phase"] != PHASE:
        _fail(code, "registration.phase:unsupported")
    event_kinds = _registration_list(reg, "event_kinds", allowed=EVENT_KINDS)
    intent_kinds = _registration_list(
        reg, "intent_kinds", pattern=QUALIFIED_RE, max_items=MAX_INTENT_KINDS
    )
    for index, kind in enumerate(intent_kinds):
        if not kind.startswith(capability + "."):
            _fail(code, f"registration.intent_kinds[{index}]:not_owned_by_capability")
        if not isinstance(intent_contracts, dict) or kind not in intent_contracts:
            _fail(code, f"registration.intent_kinds[{index}]:unknown_to_capability")
        _validate_intent_contract(intent_contracts[kind], f"intent_contracts.{kind}")
    read_scope = _registration_list(reg, "requested_read_scope", allowed=READ_SCOPES)
    if "settlement_identity" not in read_scope:
        _fail(code, "registration.requested_read_scope:settlement_identity_required")
    budget = _budget(reg["budget"], BUDGET_BOUNDS, "registration.budget", code)
    if reg["failure_policy"] != FAILURE_POLICY:
        _fail(code, "registration.failure_policy:must_be_isolate")
    canonical = build_registration(hook, capability, intent_kinds, read_scope, budget, event_kinds)
    if len(canonical_bytes(canonical)) > MAX_REGISTRATION_BYTES:
        _fail(code, "registration:too_large")
    return canonical


def _validate_intent_contract(contract: Any, where: str) -> None:
    code = REGISTRATION_REJECTED
    _exact_fields(contract, frozenset({"operations", "payload_schema"}), where, code)
    _token_list(
        contract["operations"], where=f"{where}.operations", code=code, pattern=OPERATION_RE,
        max_items=8,
    )  # fmt: skip
    _check_schema(contract["payload_schema"], f"{where}.payload_schema", 0)


# -- payload schemas (a small declarative subset, checked by core) --------------------------
SCHEMA_TYPES = ("object", "token", "enum", "integer", "boolean", "array")


def _check_schema(schema: Any, where: str, depth: int) -> None:
    code = REGISTRATION_REJECTED
    if depth > 4 or not isinstance(schema, dict) or schema.get("type") not in SCHEMA_TYPES:
        _fail(code, f"{where}:invalid_schema")
    kind = schema["type"]
    if kind == "object":
        fields = schema.get("fields")
        if not isinstance(fields, dict) or not fields or len(fields) > 16:
            _fail(code, f"{where}.fields:invalid_schema")
        for name, sub in fields.items():
            if not isinstance(name, str) or not boundary.KEY_RE.fullmatch(name):
                _fail(code, f"{where}.fields:invalid_name")
            _check_schema(sub, f"{where}.fields.{name}", depth + 1)
    elif kind == "enum":
        values = schema.get("values")
        if (
            not isinstance(values, list)
            or not values
            or not all(boundary.is_public_token(v) for v in values)
        ):
            _fail(code, f"{where}.values:invalid_schema")
    elif kind == "array":
        max_items = schema.get("max_items")
        if isinstance(max_items, bool) or not isinstance(max_items, int):
            _fail(code, f"{where}.max_items:invalid_schema")
        if not 1 <= max_items <= boundary.MAX_LIST:
            _fail(code, f"{where}.max_items:invalid_schema")
        _check_schema(schema.get("items"), f"{where}.items", depth + 1)


def check_payload(value: Any, schema: dict, where: str = "payload") -> None:
    """Validate ``value`` against a declared payload schema (result_contract_rejected)."""
    code = RESULT_CONTRACT_REJECTED
    if value is None:
        if schema.get("nullable"):
            return
        _fail(code, f"{where}:null")
    kind = schema["type"]
    if kind == "object":
        fields = schema["fields"]
        _exact_fields(value, frozenset(fields), where, code)
        for name, sub in fields.items():
            check_payload(value[name], sub, f"{where}.{name}")
    elif kind == "token":
        if not isinstance(value, str):
            _fail(code, f"{where}:not_a_string")
        if len(value) > int(schema.get("max_length", 192)) or not boundary.is_public_token(value):
            _fail(code, f"{where}:not_public_token")
    elif kind == "enum":
        if value not in schema["values"]:
            _fail(code, f"{where}:not_allowed")
    elif kind == "integer":
        low, high = schema.get("min", 0), schema.get("max", boundary.MAX_INT)
        _int_in(value, (low, high), where, code)
    elif kind == "boolean":
        if not isinstance(value, bool):
            _fail(code, f"{where}:not_boolean")
    elif kind == "array":
        if (
            not isinstance(value, list)
            or not schema.get("min_items", 0) <= len(value) <= (schema["max_items"])
        ):
            _fail(code, f"{where}:bad_length")
        for index, item in enumerate(value):
            check_payload(item, schema["items"], f"{where}[{index}]")
        if schema.get("unique") and len({canonical_bytes(v) for v in value}) != len(value):
            _fail(code, f"{where}:duplicate")


# -- result and intents -----------------------------------------------------------------------
def validate_result(
    raw: Any, *, registration: dict, dispatch_id: str, intent_contracts: dict
) -> dict:
    """Return the canonical result or raise ``ContractViolation(result_contract_rejected)``.

    The byte budget is checked by the caller on the provider's serialized bytes.
    """
    code = RESULT_CONTRACT_REJECTED
    result = _exact_fields(raw, RESULT_FIELDS, "result", code)
    if result["schema_version"] != RESULT_SCHEMA:
        _fail(code, "result.schema_version:unsupported")
    if result["dispatch_id"] != dispatch_id:
        _fail(code, "result.dispatch_id:mismatch")
    if result["hook_id"] != registration["hook_id"]:
        _fail(code, "result.hook_id:mismatch")
    intents = result["intents"]
    if not isinstance(intents, list):
        _fail(code, "result.intents:not_a_list")
    if result["status"] == "not_applicable":
        if intents:
            _fail(code, "result.intents:must_be_empty_when_not_applicable")
    elif result["status"] == "proposed":
        limit = registration["budget"]["max_intents_per_dispatch"]
        if not 1 <= len(intents) <= limit:
            _fail(code, "result.intents:intent_budget")
    else:
        _fail(code, "result.status:unsupported")
    clean = [
        validate_intent(
            item,
            where=f"result.intents[{i}]",
            registration=registration,
            dispatch_id=dispatch_id,
            intent_contracts=intent_contracts,
        )
        for i, item in enumerate(intents)
    ]
    if len({i["intent_id"] for i in clean}) != len(clean):
        _fail(code, "result.intents:duplicate_intent_id")
    return {
        "schema_version": RESULT_SCHEMA,
        "dispatch_id": dispatch_id,
        "hook_id": registration["hook_id"],
        "status": result["status"],
        "intents": clean,
    }


def validate_intent(
    raw: Any, *, where: str, registration: dict, dispatch_id: str, intent_contracts: dict
) -> dict:
    code = RESULT_CONTRACT_REJECTED
    intent = _exact_fields(raw, INTENT_FIELDS, where, code)
    if intent["schema_version"] != INTENT_SCHEMA:
        _fail(code, f"{where}.schema_version:unsupported")
    if intent["hook_id"] != registration["hook_id"]:
        _fail(code, f"{where}.hook_id:mismatch")
    if intent["capability_id"] != registration["capability_id"]:
        _fail(code, f"{where}.capability_id:mismatch")
    if intent["source_dispatch_id"] != dispatch_id:
        _fail(code, f"{where}.source_dispatch_id:mismatch")
    kind = intent["intent_kind"]
    if kind not in registration["intent_kinds"]:
        _fail(code, f"{where}.intent_kind:not_registered")
    contract = intent_contracts[kind]
    operation = _token(intent["operation"], OPERATION_RE, f"{where}.operation", code)
    if operation not in contract["operations"]:
        _fail(code, f"{where}.operation:not_declared")
    policy = _token(intent["policy_version"], POLICY_VERSION_RE, f"{where}.policy_version", code)
    check_payload(intent["payload"], contract["payload_schema"], f"{where}.payload")
    budget = _budget(intent["budget"], INTENT_BUDGET_BOUNDS, f"{where}.budget", code)
    scope = _token_list(
        intent["requested_write_scope"],
        where=f"{where}.requested_write_scope",
        code=code,
        pattern=WRITE_SCOPE_RE,
        min_items=0,
        max_items=MAX_WRITE_SCOPES,
    )
    if intent["failure_policy"] != FAILURE_POLICY:
        _fail(code, f"{where}.failure_policy:must_be_isolate")
    if intent["grants_new_action_authority"] is not False:
        _fail(code, f"{where}.grants_new_action_authority:must_be_false")
    if intent["external_write_performed"] is not False:
        _fail(code, f"{where}.external_write_performed:must_be_false")
    expected = intent_id(
        dispatch_id=dispatch_id,
        intent_kind=kind,
        policy_version=policy,
        payload=intent["payload"],
    )
    if intent["intent_id"] != expected:
        _fail(code, f"{where}.intent_id:not_derived_from_inputs")
    return {
        "schema_version": INTENT_SCHEMA,
        "intent_id": expected,
        "hook_id": registration["hook_id"],
        "capability_id": registration["capability_id"],
        "source_dispatch_id": dispatch_id,
        "intent_kind": kind,
        "operation": operation,
        "policy_version": policy,
        "payload": intent["payload"],
        "budget": budget,
        "requested_write_scope": scope,
        "failure_policy": FAILURE_POLICY,
        "grants_new_action_authority": False,
        "external_write_performed": False,
    }


def build_registration(
    hook_id: str,
    capability_id: str,
    intent_kinds: list[str],
    requested_read_scope: list[str],
    budget: dict,
    event_kinds: list[str] | None = None,
) -> dict:
    """Helper for providers: a ``registration`` packet in the canonical field order."""
    return {
        "schema_version": REGISTRATION_SCHEMA,
        "hook_id": hook_id,
        "capability_id": capability_id,
        "phase": PHASE,
        "event_kinds": list(EVENT_KINDS if event_kinds is None else event_kinds),
        "intent_kinds": list(intent_kinds),
        "requested_read_scope": list(requested_read_scope),
        "budget": dict(budget),
        "failure_policy": FAILURE_POLICY,
    }


def build_intent(
    *,
    hook_input: dict,
    intent_kind: str,
    operation: str,
    policy_version: str,
    payload: dict,
    max_attempts: int = 1,
    max_result_bytes: int = 16384,
    requested_write_scope: list[str] | None = None,
) -> dict:
    """Helper for providers: a well-formed intent for ``hook_input`` with its derived id."""
    dispatch = hook_input["dispatch_id"]
    return {
        "schema_version": INTENT_SCHEMA,
        "intent_id": intent_id(
            dispatch_id=dispatch,
            intent_kind=intent_kind,
            policy_version=policy_version,
            payload=payload,
        ),
        "hook_id": hook_input["hook_id"],
        "capability_id": hook_input["capability_id"],
        "source_dispatch_id": dispatch,
        "intent_kind": intent_kind,
        "operation": operation,
        "policy_version": policy_version,
        "payload": payload,
        "budget": {"max_attempts": max_attempts, "max_result_bytes": max_result_bytes},
        "requested_write_scope": list(requested_write_scope or []),
        "failure_policy": FAILURE_POLICY,
        "grants_new_action_authority": False,
        "external_write_performed": False,
    }


def build_result(hook_input: dict, intents: list[dict]) -> dict:
    """Helper for providers: ``proposed`` with intents, or ``not_applicable`` without."""
    return {
        "schema_version": RESULT_SCHEMA,
        "dispatch_id": hook_input["dispatch_id"],
        "hook_id": hook_input["hook_id"],
        "status": "proposed" if intents else "not_applicable",
        "intents": list(intents),
    }


# -- the packets a hook reads (built from a committed receipt) ------------------------
def receipt_core(receipt) -> dict:
    """The checkpointed part of a receipt (its digest is the primary checkpoint)."""
    settlement = receipt.settlement
    return {
        "receipt_id": receipt.receipt_id,
        "effect_id": receipt.effect_id,
        "step_kind": STEP_KIND,
        "goal_id": settlement.goal.goal_id,
        "agent_id": settlement.agent.agent_id,
        "todo_id": settlement.todo.todo_id,
        "turn_instance_id": settlement.turn_instance_id,
        "event_kind": receipt.event_kind,
        "state": receipt.state,
        "state_revision": receipt.state_revision,
        "committed_at": clock.iso(receipt.committed_at),
        "event_facts_digest": digest_ref(receipt.event_facts or {}),
    }


def source_block(receipt) -> dict:
    """The receipt's identity as a hook sees it: its checkpointed core without the state
    and the facts' digest."""
    return {
        key: value
        for key, value in receipt_core(receipt).items()
        if key not in ("state", "event_facts_digest")
    }


def event_projection(receipt) -> dict:
    """Core-chosen bounded projection; derived from the receipt's committed facts only."""
    facts = receipt.event_facts or {}
    todo_id = receipt.settlement.todo.todo_id
    fact_refs = [f"receipt:{receipt.receipt_id}", f"todo:{todo_id}:r{facts.get('todo_revision')}"]
    segment = facts.get("segment")
    if segment:
        fact_refs.append(f"segment:{segment['segment_ref']}")
    return {
        "schema_version": PROJECTION_SCHEMA,
        "transition": facts.get("transition"),
        "fact_refs": fact_refs,
        "segment": dict(segment) if segment else None,
    }


def hook_input(receipt, hook_id: str, capability_id: str, registration: dict, dispatch_id: str):
    """``loopx_post_writeback_hook_input_v0``: the one packet a hook's provider reads."""
    scope = registration["requested_read_scope"]
    return {
        "schema_version": INPUT_SCHEMA,
        "dispatch_id": dispatch_id,
        "hook_id": hook_id,
        "capability_id": capability_id,
        "source": source_block(receipt),
        "projection": (event_projection(receipt) if "bounded_event_projection" in scope else None),
        "boundary": dict(BOUNDARY_FLAGS),
    }


def executor_packet(row) -> dict[str, Any]:
    """What a governed executor is given for one outbox intent (a ``HookIntent`` row): the
    validated ``loopx_post_writeback_intent_v0`` packet plus its outbox state."""
    return {
        "schema_version": INTENT_SCHEMA,
        "intent_id": row.intent_id,
        "hook_id": row.hook_id,
        "capability_id": row.capability_id,
        "source_dispatch_id": row.dispatch.dispatch_id,
        "intent_kind": row.intent_kind,
        "operation": row.operation,
        "policy_version": row.policy_version,
        "payload": row.payload,
        "budget": row.budget,
        "requested_write_scope": row.requested_write_scope,
        "failure_policy": FAILURE_POLICY,
        "grants_new_action_authority": False,
        "external_write_performed": False,
        "outbox": {
            "status": row.status,
            "status_reason": row.status_reason or None,
            "goal_id": row.goal.goal_id,
            "agent_id": row.agent.agent_id,
            "created_at": clock.iso(row.created_at),
            "updated_at": clock.iso(row.updated_at),
        },
    }


def validator_manifest(manifest) -> dict[str, Any]:
    """The canonical ``loopx_completion_validator_manifest_v0`` of a validated manifest
    (its digest identifies the installation)."""
    return {
        "schema_version": VALIDATOR_MANIFEST_SCHEMA,
        "validator_id": manifest.validator_id,
        "version": manifest.version,
        "description": manifest.description,
        "protocol": VALIDATOR_PROTOCOL,
        "entrypoint": list(manifest.entrypoint),
        "timeout_seconds": manifest.timeout_seconds,
    }


def validator_input(row, receipt_row, validator, reflection: dict[str, Any]) -> dict[str, Any]:
    """``loopx_completion_validator_input_v0``: the one object a validator reads on stdin
    (``row`` is the ``TurnSettlement``)."""
    todo_row = row.todo
    return {
        "schema_version": VALIDATOR_INPUT_SCHEMA,
        "validator_id": validator.validator_id,
        "todo": {
            "goal_id": row.goal.goal_id,
            "todo_id": todo_row.todo_id,
            "state": todo_row.state,
            "revision": todo_row.revision,
            "segment_ref": todo_row.segment_ref or None,
        },
        "settlement": {
            "goal_id": row.goal.goal_id,
            "agent_id": row.agent.agent_id,
            "todo_id": todo_row.todo_id,
            "turn_instance_id": row.turn_instance_id,
            "event_kind": row.event_kind,
            "effect_id": row.effect_id,
            "receipt_id": receipt_row.receipt_id,
            "receipt_state": receipt_row.state,
            "state_revision": receipt_row.state_revision,
        },
        "reflection": {
            "reflection_digest": reflection["reflection_digest"],
            "surface_id": reflection["surface_id"],
            "source_types": list(reflection["source_types"]),
            "evidence_refs": list(reflection["evidence_refs"]),
        },
    }
