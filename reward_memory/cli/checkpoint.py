"""``reward_memory checkpoint grant|revoke|list``."""

from loopx_site.core.cli import add_execute_argument
from reward_memory import principals, selectors, services
from reward_memory.documents import authority as authority_documents
from reward_memory.domain import validation

NAME = "checkpoint"
HELP = "Operator-verified authority checkpoints: grant | revoke | list (preview by default)."


def arguments(parser):
    parser.add_argument("action", choices=["grant", "revoke", "list"])
    parser.add_argument("--checkpoint-id")
    parser.add_argument("--project")
    parser.add_argument("--subject", help="The verified actor ref, e.g. user:maint-1.")
    parser.add_argument("--role", help="The verified role, e.g. core_contributor.")
    parser.add_argument("--action-scope", action="append", dest="action_scopes", default=[])
    parser.add_argument("--expires-at", help="UTC timestamp (optional).")
    parser.add_argument("--evidence-ref", default="")
    parser.add_argument("--reason", default="")
    parser.add_argument("--actor", help="The operator account granting/revoking (user:<name>).")
    add_execute_argument(parser)


def run(command, *, action, execute=False, **options):
    if action == "list":
        rows = selectors.list_checkpoints(project=options.get("project"))
        return authority_documents.checkpoint_list(rows)
    operator = principals.operator_account(
        options.get("actor"), field="actor", code="operator_required"
    )
    checkpoint_id = validation.checkpoint_id(options.get("checkpoint_id"))
    if action == "revoke":
        return authority_documents.checkpoint_revocation(
            services.revoke_checkpoint(
                checkpoint_id=checkpoint_id,
                operator=operator,
                reason=options.get("reason") or "",
                execute=execute,
            )
        )
    expires_at = validation.timestamp(options.get("expires_at"), "expires_at", required=False)
    outcome = services.grant_checkpoint(
        checkpoint_id=checkpoint_id,
        project=options.get("project"),
        actor=options.get("subject"),
        role=options.get("role"),
        action_scopes=options.get("action_scopes") or [],
        operator=operator,
        expires_at=expires_at,
        evidence_ref=options.get("evidence_ref") or "",
        execute=execute,
    )
    return authority_documents.checkpoint_grant(outcome)
