"""Inert synthetic hooks (RFC Slice 2): contract-complete providers with no policy.

Not installed by default. Useful to exercise several hooks at once (tests, the
benchmark): ``synthetic.inert`` always answers ``not_applicable``; ``synthetic.echo``
proposes one ``synthetic.receipt_seen`` intent naming the source receipt.
"""

from hooks.contracts import build_intent, build_registration, build_result


def _registration(hook_id: str, intent_kinds: list[str]) -> dict:
    return build_registration(
        hook_id=hook_id,
        capability_id="synthetic",
        intent_kinds=intent_kinds,
        requested_read_scope=["settlement_identity"],
        budget={
            "max_invocations_per_dispatch": 1,
            "max_intents_per_dispatch": 1,
            "max_result_bytes": 4096,
            "timeout_ms": 500,
        },
    )


RECEIPT_SEEN = {
    "synthetic.receipt_seen": {
        "operations": ["note_receipt"],
        "payload_schema": {
            "type": "object",
            "fields": {"receipt_ref": {"type": "token"}, "event_kind": {"type": "token"}},
        },
    }
}


class InertSyntheticHook:
    registration = _registration("synthetic.inert", ["synthetic.receipt_seen"])
    intent_contracts = RECEIPT_SEEN

    def produce(self, hook_input: dict) -> dict:
        return build_result(hook_input, [])


class EchoSyntheticHook:
    registration = _registration("synthetic.echo", ["synthetic.receipt_seen"])
    intent_contracts = RECEIPT_SEEN

    def produce(self, hook_input: dict) -> dict:
        source = hook_input["source"]
        intent = build_intent(
            hook_input=hook_input,
            intent_kind="synthetic.receipt_seen",
            operation="note_receipt",
            policy_version="synthetic_v0",
            payload={"receipt_ref": source["receipt_id"], "event_kind": source["event_kind"]},
        )
        return build_result(hook_input, [intent])
