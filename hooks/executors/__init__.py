"""Governed executors: the separately admitted effect owners that consume the outbox.

An executor has its own allowlist (intent kind → operations), the write scopes it can
grant (an intent asking for any other scope is rejected), a per-run budget, and a
``decide(intent, events)`` step. Executors are looked up by name; the hook core
(settlement, dispatcher, journal) never imports them.
"""

from django.utils.module_loading import import_string

EXECUTORS = {"fake-scheduler": "hooks.executors.fake_scheduler.FakeScheduler"}


class Executor:
    executor_id: str = ""
    #: intent_kind → allowed operations
    allowlist: dict[str, tuple[str, ...]] = {}
    #: write scopes this executor may grant; intents requesting others are rejected
    granted_write_scopes: frozenset[str] = frozenset()
    max_intents_per_run: int = 16

    def admission(self, intent: dict) -> str | None:
        """``None`` when admitted, else a compact rejection reason."""
        operations = self.allowlist.get(intent["intent_kind"])
        if operations is None:
            return "intent_kind_not_allowlisted"
        if intent["operation"] not in operations:
            return "operation_not_allowlisted"
        if not set(intent["requested_write_scope"]) <= self.granted_write_scopes:
            return "write_scope_not_granted"
        if intent["grants_new_action_authority"] or intent["external_write_performed"]:
            return "authority_claimed"
        return None

    def decide(self, intent: dict, events: list[dict]) -> dict:
        raise NotImplementedError


def get(name: str) -> Executor | None:
    path = EXECUTORS.get(name)
    return import_string(path)() if path else None
