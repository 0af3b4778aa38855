"""``semantic_preference recall`` (and the ``manage.py recall`` shortcut)."""

from typing import Any

from loopx_site.core.cli import format_mapping, format_table
from preferences.cli.common import add_config, config_and_scope

NAME = "recall"
HELP = "Recall ranked semantic preferences for one surface (preview unless --execute)."


def arguments(parser) -> None:
    add_config(parser)
    parser.add_argument("--surface", required=True, help="Module-qualified surface id.")
    parser.add_argument(
        "--context",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="Repeatable lower_snake=value context entry.",
    )
    parser.add_argument(
        "--execute", action="store_true", help="Invoke the provider (default: preview)."
    )


def run(command, *, project, config, surface, context, execute, **_) -> dict[str, Any]:
    from preferences import services
    from preferences.documents import recall as documents
    from preferences.recall.config import parse_context_entries

    source, scope = config_and_scope(config)
    result = services.recall(
        source,
        project=project,
        surface=surface,
        execute=execute,
        context=parse_context_entries(context),
        scope=scope,
    )
    return documents.recall(result)


def render(payload: dict[str, Any]) -> str:
    head = format_mapping(
        payload,
        skip=("items", "maintenance_guidance", "provider", "request", "corpus_inventory"),
    )
    provider = payload.get("provider") or {}
    lines = [head, f"provider: {provider.get('extension_id') or provider.get('source') or '-'}"]
    request = payload.get("request")
    if request:
        lines += [
            "",
            "provider request (sent on --execute):",
            format_mapping({k: v for k, v in request.items() if k != "context"}),
            "context: "
            + (", ".join(f"{k}={v}" for k, v in request["context"].items()) or "(none)"),
        ]
    if payload.get("items"):
        lines += ["", format_table(payload["items"], ["preference_ref", "summary"])]
    inventory = payload.get("corpus_inventory") or []
    if inventory:
        lines += [
            "",
            "corpus inventory:",
            format_table(
                [{**c, "writeback_triggers": ",".join(c["writeback_triggers"])} for c in inventory],
                ["corpus_id", "read_role", "write_mode", "writeback_triggers", "closure_policy"],
            ),
        ]
    guidance = payload.get("maintenance_guidance")
    if guidance:
        lines += [
            "",
            "maintenance guidance: corpora "
            + ", ".join(guidance["corpus_ids"])
            + "; triggers "
            + ", ".join(guidance["writeback_triggers"])
            + "; close with "
            + " | ".join(guidance["closure_outcomes"])
            + f" ({guidance['completion']})",
        ]
    return "\n".join(lines)
