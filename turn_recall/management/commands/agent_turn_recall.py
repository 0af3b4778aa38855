from loopx_site.core import files
from loopx_site.core.cli import LoopxCommand, format_mapping, format_table
from loopx_site.core.errors import DomainError
from turn_recall import contracts as c
from turn_recall import documents, services
from turn_recall.cli import acting, add_scope
from turn_recall.errors import as_recall_document


class Command(LoopxCommand):
    field_options = {"quota_decision": "quota_decision_json"}  # the packet is a file here
    help = (
        "Prepare bounded memory guidance for an autonomous turn from the exact quota "
        "packet (preview unless --execute)."
    )
    error_area = c.AREA

    def add_command_arguments(self, parser):
        add_scope(parser, execute="Recall (default: preview, no provider).")
        parser.add_argument(
            "--quota-decision-json",
            required=True,
            help="The quota should-run packet the host used (a file, or - for stdin).",
        )
        parser.add_argument("--session-ref", help="The host's session (joins the situation).")
        parser.add_argument(
            "--force-refresh",
            action="store_true",
            help="Ignore this turn's stored receipt and recall again (replaces it).",
        )

    def run(
        self,
        *,
        goal_id,
        agent_id,
        turn_instance_id,
        quota_decision_json,
        execute,
        session_ref=None,
        force_refresh=False,
        **_,
    ):
        try:
            scope = services.scope(acting(goal_id, agent_id))
        except DomainError as exc:
            raise as_recall_document(exc, goal_id=goal_id, agent_id=agent_id) from None
        result = services.agent_turn_recall(
            **scope,
            turn_instance_id=turn_instance_id,
            # read only once the surface is enabled (a bad packet while disabled is
            # ``disabled``, as LoopX)
            quota_decision=lambda: files.read_json(
                quota_decision_json,
                option="quota_decision_json",
                area=c.AREA,
                code="invalid_packet",
            ),
            execute=execute,
            session_ref=session_ref,
            force_refresh=force_refresh,
        )
        return documents.turn_recall(result)

    def render_text(self, payload, *, subcommand=None):
        head = format_mapping(
            {
                k: payload.get(k)
                for k in (
                    "status",
                    "reason_code",
                    "turn_recall_id",
                    "situation_fingerprint",
                    "provider_call_count",
                )
            }
        )
        guidance = (payload.get("context") or {}).get("guidance") or []
        return head + "\n\n" + format_table(guidance, ["target_class", "content_summary"])
