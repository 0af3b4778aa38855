"""What the ``todo`` subcommands share: their text tables."""

from loopx_site.core.cli import format_table

TODO_COLUMNS = ["todo_id", "state", "segment_ref", "validator", "revision", "title", "updated_at"]
VALIDATOR_COLUMNS = ["validator_id", "active", "version", "manifest_digest"]


def preview_hint(payload) -> str:
    return " (nothing written; add --execute)" if payload["status"] == "preview" else ""


def render_validator(payload) -> str:
    """A validator change: its status, then the validator's row."""
    return f"status: {payload['status']}{preview_hint(payload)}\n\n" + format_table(
        [payload["validator"]], VALIDATOR_COLUMNS
    )


def toggle_arguments(parser) -> None:
    parser.add_argument("--validator-id", required=True)
    parser.add_argument("--execute", action="store_true")
