"""The hooks app's documents, rendered once for the CLI and the API from service
results (completion validators so far)."""

from typing import Any

from hooks.models import CompletionValidator
from loopx_site.core import clock

VALIDATOR_PROTOCOL = "loopx_completion_validator_v0"
VALIDATOR_OPERATION_SCHEMA = "loopx_completion_validator_operation_v0"
VALIDATOR_LIST_SCHEMA = "loopx_completion_validator_list_v0"


def validator_payload(row: CompletionValidator) -> dict[str, Any]:
    """Public projection: no argv, only the manifest digest."""
    return {
        "validator_id": row.validator_id,
        "version": row.version,
        "description": row.description,
        "protocol": VALIDATOR_PROTOCOL,
        "active": row.active,
        "timeout_seconds": row.timeout_seconds,
        "manifest_digest": row.manifest_digest,
        "installed_by": row.installed_by or None,
        "installed_at": clock.iso(row.installed_at),
        "updated_at": clock.iso(row.updated_at),
    }


def validator_operation(operation, *, execute, changed, row, would_change=None) -> dict[str, Any]:
    document = {
        "ok": True,
        "schema_version": VALIDATOR_OPERATION_SCHEMA,
        "status": "preview" if not execute else ("applied" if changed else "unchanged"),
        "operation": operation,
        "execute": execute,
        "changed": changed,
        "validator": validator_payload(row),
    }
    if would_change is not None:
        document["would_change"] = would_change
    return document


def validator_list(rows) -> dict[str, Any]:
    return {
        "ok": True,
        "schema_version": VALIDATOR_LIST_SCHEMA,
        "validators": [validator_payload(r) for r in rows],
    }
