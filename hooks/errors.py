"""Error codes of the post-writeback hook area (schema ``post_writeback_hook_error_v0``).

Two families:

* ``HookError`` codes are raised by services and rendered by the CLI/API envelope:

  ==========================  ======  =====================================================
  code                        status  meaning
  ==========================  ======  =====================================================
  invalid_argument            400     malformed input (field names the argument)
  goal_not_registered         404     unknown Goal
  agent_not_registered        404     unknown Agent in that Goal
  todo_not_found              404     unknown Todo in that Goal
  receipt_not_found           404     unknown durable-writeback receipt
  intent_not_found            404     unknown outbox intent
  unknown_executor            400     ``--executor`` names no governed executor
  todo_conflict               409     same ``todo_id`` re-added with a different title/segment
  todo_not_open               409     the Todo is already completed; primary validation failed
  settlement_conflict         409     same Turn instance settled with different identities
  intent_not_pending          409     the intent was already admitted, rejected or executed
  invalid_manifest            400     a completion validator manifest is malformed (core)
  manifest_not_found          404     the manifest file does not exist (core)
  validator_not_found         404     no installed (enabled) completion validator has this id
  validator_conflict          409     the validator id is installed with another manifest
  ==========================  ======  =====================================================

* ``FAILURE_CODES`` are not exceptions: they are the compact, isolated failure codes a
  dispatch receipt records (RFC section 10). They never fail the primary settlement.
"""

from pathlib import Path

from loopx_site.core.errors import DomainError, declare_file

AREA = "post_writeback_hook"


class HookError(DomainError):
    area = AREA


CODES = declare_file("hooks", Path(__file__).with_name("errors.toml"))


def error(code: str, message: str, *, field: str | None = None, **details) -> HookError:
    return HookError(code, message, field=field, details=details)


REGISTRATION_REJECTED = "registration_rejected"
INPUT_BOUNDARY_REJECTED = "input_boundary_rejected"
PRODUCER_FAILED = "producer_failed"
PRODUCER_TIMED_OUT = "producer_timed_out"
RESULT_CONTRACT_REJECTED = "result_contract_rejected"
INTENT_CONFLICT = "intent_conflict"
DISPATCH_BUDGET_EXHAUSTED = "dispatch_budget_exhausted"

FAILURE_CODES = (
    REGISTRATION_REJECTED,
    INPUT_BOUNDARY_REJECTED,
    PRODUCER_FAILED,
    PRODUCER_TIMED_OUT,
    RESULT_CONTRACT_REJECTED,
    INTENT_CONFLICT,
    DISPATCH_BUDGET_EXHAUSTED,
)


class ContractViolation(Exception):
    """A packet broke its contract; ``code`` is a failure code, ``reason`` is compact.

    ``reason`` names the rule and field, never the offending value (it may be private).
    """

    def __init__(self, code: str, reason: str):
        super().__init__(reason)
        self.code = code
        self.reason = reason
