"""What the ``semantic_preference extension`` verbs share: their options and the text
form of one extension."""

from typing import Any

from loopx_site.core.cli import format_mapping, format_table

#: Every lifecycle verb previews unless ``--execute``.
PREVIEW = " Preview unless --execute."

EXTENSION_COLUMNS = [
    "extension_id",
    "version",
    "enabled",
    "active_revision",
    "rollback_available",
    "permission",
    "timeout_seconds",
]


def manifest_arguments(parser) -> None:
    parser.add_argument("--manifest", required=True, help="Manifest file (.toml or .json).")
    parser.add_argument("--execute", action="store_true", help="Apply (default: preview).")


def extension_arguments(parser) -> None:
    parser.add_argument("extension_id")
    parser.add_argument("--execute", action="store_true", help="Apply (default: preview).")


def render_extension(payload: dict[str, Any]) -> str:
    doctor = payload.get("doctor") or {}
    lines = [format_mapping(payload, skip=("extension", "doctor"))]
    if doctor:
        lines.append(f"doctor: {doctor.get('status')} (verified: {doctor.get('verified')})")
    lines.append(format_table([payload["extension"]], EXTENSION_COLUMNS))
    return "\n".join(lines)
