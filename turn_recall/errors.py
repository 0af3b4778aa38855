"""Error codes of Agent Turn Recall (``agent_turn_recall_error_v0`` envelope).

==================  ======  =========================================================
code                status  meaning
==================  ======  =========================================================
invalid_argument    400     malformed argument (``field`` names it)
invalid_packet      400     the quota decision packet is not a valid JSON object
packet_mismatch     400     the packet's goal/agent differ from the arguments
goal_not_registered 404     unknown Goal (also reported by the registry)
==================  ======  =========================================================

Every error of ``agent_turn_recall`` also carries LoopX's document fields
(``schema_version: agent_turn_recall_v0``, the requested ``goal_id``/``agent_id``,
``provider_call_count: 0`` and the boundary flags; ``documents.error_fields``) so a
host parsing ``agent_turn_recall_v0`` reads the failure with the same code.
"""

from pathlib import Path

from loopx_site.core.errors import DomainError, declare_file
from turn_recall import contracts, documents

AREA = contracts.AREA

CODES = declare_file("turn_recall", Path(__file__).with_name("errors.toml"))


class TurnRecallError(DomainError):
    area = AREA


def error(code: str, message: str, *, field: str | None = None):
    return TurnRecallError(code, message, field=field)


def as_recall_document(
    exc: DomainError, *, goal_id: str | None = None, agent_id: str | None = None
) -> DomainError:
    """Give any error raised on the turn recall path LoopX's document fields."""
    exc.area = AREA
    exc.extra.update(documents.error_fields(goal_id, agent_id))
    return exc
