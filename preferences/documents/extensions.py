"""Documents of provider extensions: the stored manifest, the extension doctor
(``doctor_run`` of ``services.extension_doctor.DoctorRun``), lifecycle operations
(``operation`` of ``services.extensions.ExtensionOperation``:
``loopx_extension_operation_v0``), the listing (``loopx_extension_state_v0``) and the
public projection of an installed row (LoopX's status fields plus ours — no command, only
its digest)."""

from typing import Any

from loopx_site.core import clock

MANIFEST_SCHEMA = "loopx_provider_extension_manifest_v0"
DOCTOR_SCHEMA = "loopx_extension_doctor_v0"
OPERATION_SCHEMA = "loopx_extension_operation_v0"
LIST_SCHEMA = "loopx_extension_state_v0"


def manifest(m) -> dict[str, Any]:
    """A validated (resolved) ``Manifest`` as the JSON manifest it is stored as; its
    canonical digest is the manifest's revision."""
    return {
        "schema_version": MANIFEST_SCHEMA,
        "extension_id": m.extension_id,
        "version": m.version,
        "description": m.description,
        "capability": m.capability,
        "protocol": m.protocol,
        "entrypoint": list(m.entrypoint),
        "doctor": list(m.doctor) if m.doctor is not None else None,
        "permission": m.permission,
        "timeout_seconds": m.timeout_seconds,
        "setup_hints": dict(m.setup_hints),
    }


def doctor(
    m,
    *,
    status: str,
    available: bool = True,
    verified: bool = False,
    failure_kind: str | None = None,
    probed_identity: str | None = None,
) -> dict[str, Any]:
    """LoopX's extension doctor document for one manifest (``recall.doctor.probe``), key
    for key: ``entrypoint_identity`` only once verified, ``probed_entrypoint_identity``
    whenever the entrypoint file could be identified."""
    return {
        "ok": True,
        "schema_version": DOCTOR_SCHEMA,
        "extension_id": m.extension_id,
        "version": m.version,
        "status": status,
        "available": available,
        "verified": verified,
        "entrypoint_identity": probed_identity if verified else None,
        "probed_entrypoint_identity": probed_identity,
        "failure_kind": failure_kind,
        "external_writes_performed": False,
    }


DOCTOR_BATCH_SCHEMA = "loopx_extension_doctor_batch_v0"


def disabled_doctor(m) -> dict[str, Any]:
    """LoopX's doctor of a disabled extension: nothing is probed, so no version or
    identity is reported."""
    return {
        "ok": True,
        "schema_version": DOCTOR_SCHEMA,
        "extension_id": m.extension_id,
        "status": "disabled",
        "available": False,
        "verified": False,
        "entrypoint_identity": None,
        "failure_kind": None,
        "external_writes_performed": False,
    }


def extension_doctor(result) -> dict[str, Any]:
    """One ``services.extension_doctor.ExtensionDoctor``: ``disabled_doctor`` while
    disabled, the project provider's in-process report, or the probe's document."""
    if not result.active:
        return disabled_doctor(result.manifest)
    if result.healthy is not None:
        healthy = result.healthy
        return doctor(
            result.manifest,
            status="ready" if healthy else "provider_unavailable",
            available=healthy,
            verified=healthy,
            failure_kind=None if healthy else "doctor_unhealthy",
        )
    return result.probe


def doctor_run(result) -> dict[str, Any]:
    """``extension doctor`` of a ``services.extension_doctor.DoctorRun``: one extension's
    ``loopx_extension_doctor_v0``, or the ``--all-enabled`` batch."""
    if result.batch:
        return doctor_batch([extension_doctor(d) for d in result.doctors], result.execute)
    return extension_doctor(result.doctors[0])


def doctor_batch(doctors: list[dict[str, Any]], execute: bool) -> dict[str, Any]:
    """LoopX's ``--all-enabled`` batch: ``ready`` only when every executed doctor verified
    its extension, ``blocked`` otherwise; ``probe_required`` before ``--execute``."""
    verified = sum(bool(d.get("verified")) for d in doctors)
    blocked = len(doctors) - verified if execute else 0
    if execute:
        status = "ready" if blocked == 0 else "blocked"
    else:
        status = "probe_required" if doctors else "ready"
    return {
        "ok": blocked == 0,
        "schema_version": DOCTOR_BATCH_SCHEMA,
        "status": status,
        "execute": execute,
        "enabled_count": len(doctors),
        "verified_count": verified,
        "blocked_count": blocked,
        "extensions": doctors,
        # ours stores no doctor proof: the installed state is never written by a doctor
        "local_state_write_performed": False,
        "external_writes_performed": False,
    }


ENTRYPOINT_IDENTITY_SCHEMA = "loopx_runtime_entrypoint_identity_v1"


def entrypoint_identity(*, size: int, content_sha256: str) -> dict[str, Any]:
    """LoopX's identity of an executable entrypoint file (hashed into its identity)."""
    return {
        "schema_version": ENTRYPOINT_IDENTITY_SCHEMA,
        "kind": "file_artifact",
        "executable": True,
        "size": size,
        "content_sha256": content_sha256,
    }


def installed(row) -> dict[str, Any]:
    """``extension`` of a row with the stored entry of its active revision."""
    entries = [e for e in row.revisions or [] if isinstance(e, dict)]
    active_entry = next((e for e in entries if e.get("revision") == row.revision), None)
    return extension(row, active_entry)


def extension(row, active_entry: dict[str, Any] | None) -> dict[str, Any]:
    """Public projection of an installed ``ProviderExtension`` (``active_entry``: the
    stored revision entry of its active revision)."""
    active_entry = active_entry or {}
    return {
        "id": row.extension_id,
        "extension_id": row.extension_id,
        "enabled": row.active,
        "active": row.active,
        "active_revision": row.revision or None,
        "rollback_available": bool(row.rollback_revision),
        "doctor_verified": bool(row.active and active_entry.get("doctor_verified")),
        "revision_count": len(row.revisions or []),
        "version": row.version,
        "description": row.description,
        "capability": row.capability,
        "protocol": row.protocol,
        "permission": row.permission,
        "timeout_seconds": row.timeout_seconds,
        "doctor": row.doctor_argv is not None,
        "manifest_digest": row.manifest_digest,
        "installed_at": clock.iso(row.installed_at),
        "updated_at": clock.iso(row.updated_at),
        "activated_at": clock.iso(row.activated_at) if row.activated_at else None,
    }


#: Operations whose preview prints ``enabled: null``, as LoopX's do.
_UNDECIDED = ("install", "upgrade")


def operation(result) -> dict[str, Any]:
    """``loopx_extension_operation_v0`` of a ``services.extensions.ExtensionOperation``:
    ``preview`` unless ``execute``, then ``applied`` or ``unchanged``."""
    name, execute, changed, row = result.operation, result.execute, result.changed, result.row
    document = {
        "ok": True,
        "schema_version": OPERATION_SCHEMA,
        "status": "preview" if not execute else ("applied" if changed else "unchanged"),
        "operation": name,
        "dry_run": not execute,
        "changed": changed,
        "extension_id": row.extension_id,
        "version": row.version,
        "revision": row.revision,
        "active_revision": row.revision or None,
        "previous_revision": result.previous_revision,
        # LoopX: an install or upgrade preview has decided nothing about enablement yet.
        "enabled": row.active if (execute or (row.pk and name not in _UNDECIDED)) else None,
        "doctor": result.doctor,
        "rollback_available": bool(row.rollback_revision),
        "extension": installed(row),
    }
    if result.target_version is not None:
        document["version"] = result.target_version
    if result.would_change is not None:
        document["would_change"] = result.would_change
    return document


def listing(rows) -> dict[str, Any]:
    """``loopx_extension_state_v0`` of the installed rows (``services.list_extensions``)."""
    payloads = [installed(row) for row in rows]
    return {"ok": True, "schema_version": LIST_SCHEMA, "status": "listed", "extensions": payloads}
