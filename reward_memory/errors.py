"""Error codes of the reward_memory app (area ``reward_memory``, schema
``reward_memory_error_v0``).

Guard failures on otherwise well-formed input are *results* (``guard_blocked`` with
reason codes, see ``reward_memory.contracts.REASON_CODES``); the codes below are
*errors*: the input cannot be evaluated, or the caller may not perform the operation.

| code | status | when |
|---|---|---|
| invalid_argument | 400 | a field fails validation (``field`` names it) |
| invalid_input_file | 400 | ``--input`` cannot be read or is not a JSON object |
| unsupported_schema | 400 | ``schema_version`` is missing or not the contract's |
| goal_not_registered / agent_not_registered | 404 | unknown Goal / Agent |
| corpus_not_found | 404 | no corpus with that id (or not visible to the caller) |
| review_not_found / record_not_found / recall_not_found | 404 | unknown ref (or not visible) |
| reflection_not_found | 404 | no reflection candidate has that digest |
| provider_deletion_not_found | 404 | no provider delete is queued for that record |
| corpus_class_immutable | 409 | re-registering a corpus with another memory class |
| revision_conflict | 409 | ``expected_revision`` is not the corpus's current revision |
| operation_conflict | 409 | an ingest ``event_id`` already stored with other content |
| standing_policy_conflict | 409 | a standing policy does not match its corpus |
| invalid_transition | 409 | a lifecycle transition the record's state does not allow |
| review_not_actionable | 409 | applying a review whose effective decision has no next step |
| review_already_applied | 409 | (reserved) |
| already_reviewed / not_accepted | 409 | review queue: decided already / not accepted |
| not_authorized | 403 | the actor lacks the corpus authority the operation needs |
| reviewer_not_authorized | 403 | recording a review by someone who is not the corpus reviewer |
| owner_not_authorized | 403 | applying an accepted review by someone who is not the corpus owner |
| permission_required | 403 | the operator account lacks the operation's model permission |
| operator_required | 403 | an operator-only act (checkpoints, role bindings, reopen) by a host |
| forbidden_action_scope | 400 | a standing policy / checkpoint names a forbidden authority family |
| checkpoint_not_found / closure_not_found | 404 | unknown checkpoint / no open closure |
| checkpoint_conflict | 409 | a checkpoint id re-granted with different facts |
| operator_checkpoint_refused | 403 | operator control whose checkpoint does not authorise it |
| agent_not_allowlisted | 403 | executing with an Agent the corpus does not allowlist |
| config_invalid | 400 | the experiment config is not a valid v1 for the registered corpora |
| config_schema_unsupported | 400 | not ``reward_memory_experiment_config_v1`` |
| config_not_found / config_not_ignored | 404 / 400 | the config is missing / not git-ignored |
| config_binds_one_agent | 409 | a private config already binds another Agent |
| experiment_route_unavailable | 403 | executing an ingest without the Agent's enabled route |
| duplicate_receipt | 409 | a dogfood batch repeats an application receipt or control |
| utility_observation_conflict | 409 | two judgements under one utility observation id |
| application_receipt_not_found | 404 | dogfood: no stored application receipt of the
  caller's scope has that id (``details.application_receipt_id``) |
| operator_control_not_found | 404 | dogfood: no stored operator control
  (``operator-control --execute``) of the caller's scope has that id |
| application_receipt_mismatch | 409 | dogfood: an observation differs from the stored row |
| operator_control_mismatch | 409 | dogfood: a control entry differs from the stored row |
| scope_forbidden | 403 | outside the host token's scope |

Every 403 code above answers LoopX's ``status: forbidden`` (``loopx_site.core.errors``).
"""

from pathlib import Path
from typing import Any

from loopx_site.core.errors import DomainError, declare_file

AREA = "reward_memory"

CODES = declare_file("reward_memory", Path(__file__).with_name("errors.toml"))


class RewardMemoryError(DomainError):
    area = AREA


def invalid(field: str | None, message: str, **details: Any) -> RewardMemoryError:
    return RewardMemoryError("invalid_argument", message, field=field, details=details)
