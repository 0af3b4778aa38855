"""Every write of the hooks app. Adapters call these names (``services.settle`` …)."""

from hooks.services.executor import admit_intents, execute_intents, reject_intents
from hooks.services.phase import record_outcome, run_hook_phase
from hooks.services.replay import replay
from hooks.services.settlement import recover_pending, settle
from hooks.services.todos import add_todo
from hooks.services.validators import (
    install_validator,
    list_validators,
    run_for_settlement,
    set_validator_active,
)

__all__ = [
    "add_todo",
    "admit_intents",
    "execute_intents",
    "install_validator",
    "list_validators",
    "record_outcome",
    "recover_pending",
    "reject_intents",
    "replay",
    "run_for_settlement",
    "run_hook_phase",
    "set_validator_active",
    "settle",
]
