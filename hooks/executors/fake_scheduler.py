"""``fake-scheduler``: a governed executor that stops before any external effect.

It admits only ``periodic_report.trigger_evaluation`` / ``evaluate_runtime_trigger``,
grants no write scope, and feeds admitted intents to the capability-owned trigger
reducer. It opens no socket, starts no process and calls no sink; the recorded decision
is the whole effect.
"""

from hooks.capabilities.periodic_report import INTENT_KIND, OPERATION, reduce_trigger
from hooks.executors import Executor


class FakeScheduler(Executor):
    executor_id = "fake-scheduler"
    allowlist = {INTENT_KIND: (OPERATION,)}
    granted_write_scopes = frozenset()
    max_intents_per_run = 16

    def decide(self, intent: dict, events: list[dict]) -> dict:
        return reduce_trigger(intent=intent, events=events)
