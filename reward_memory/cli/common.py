"""What several ``reward_memory`` subcommands share: the ``--actor`` option, a record
lifecycle operation attributed to it, and the default text rendering."""

from loopx_site.core.cli import format_mapping
from reward_memory import principals, services
from reward_memory.documents import records as record_documents
from reward_memory.documents import review as review_documents


def operator_actor(parser) -> None:
    """``--actor`` (required): the operator account a write is attributed to."""
    parser.add_argument("--actor", required=True, help="Operator account (user:<name>).")


def record_operation(operation, *, record_ref, actor, execute, **arguments):
    """One lifecycle operation on a record, by the ``--actor`` operator account."""
    result = services.record_operation(
        operation,
        record_ref=record_ref,
        principal=principals.operator_account(actor, field="actor"),
        execute=execute,
        **arguments,
    )
    return record_documents.record_operation(result)


def render_guarded(payload) -> str:
    """A document with a ``guard``: its fields, then the guard's status and reasons."""
    head = format_mapping(payload, skip=("guard", "candidate", "revised_candidate", "duplicate_of"))
    reasons = ", ".join(f"{r['code']}({r['field']})" for r in payload["guard"].get("reasons", []))
    guard = f"{head}\nguard: {payload['guard'].get('status')} {reasons}".rstrip()
    # a review marked duplicate_of a live record: the two texts side by side
    return guard + review_documents.duplicate_text(payload.get("duplicate_of"))
