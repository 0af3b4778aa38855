"""``semantic_preference doctor``."""

from typing import Any

from loopx_site.core.cli import format_mapping
from preferences.cli.common import add_config, config_and_scope

NAME = "doctor"
HELP = "Check a config and its provider; --execute runs the read-only provider probe."


def arguments(parser) -> None:
    add_config(parser)
    parser.add_argument(
        "--execute", action="store_true", help="Run the read-only probe (default: preview)."
    )


def run(command, *, project, config, execute, **_) -> dict[str, Any]:
    from preferences import services
    from preferences.documents import recall as documents

    source, scope = config_and_scope(config)
    result = services.doctor(source, project=project, execute=execute, scope=scope)
    return documents.doctor(result)


def render(payload: dict[str, Any]) -> str:
    head = format_mapping(payload, skip=("config", "provider", "setup_hints"))
    hints = payload.get("setup_hints") or {}
    lines = [head]
    for key in ("install", "configure"):
        if hints.get(key):
            lines.append(f"setup hint ({key}): {hints[key]}")
    return "\n".join(lines)
