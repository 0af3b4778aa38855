"""Provider extension lifecycle — the locked writes of installed runtime state.

Lifecycle (preview unless ``execute``; each verb returns an ``ExtensionOperation`` that
``preferences.documents.extensions.operation`` renders as ``loopx_extension_operation_v0``):
``install`` (new id; installs enabled), ``upgrade`` (new revision of an installed id; the
old one is kept for ``rollback``), ``enable`` / ``disable`` (aliases ``activate`` /
``deactivate``), ``rollback`` (swap the active and the rollback revision). Installing,
upgrading, enabling or rolling back an external provider that declares a doctor runs that
doctor first and refuses when it fails. At most ``MAX_REVISIONS`` revisions are kept.
"""

import functools
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction

from loopx_site.core import access, clock
from loopx_site.core.errors import DomainError
from preferences.models import ProviderExtension
from preferences.recall import config as config_module
from preferences.recall import doctor as extension_doctor
from preferences.recall.errors import SemanticPreferenceError, invalid
from preferences.recall.manifest import (
    Manifest,
    manifest_from_document,
    manifest_of,
    read_manifest_file,
    revision_entry,
)

MAX_REVISIONS = 5
#: Errors of the extension verbs: ``loopx_extension_error_v0`` (LoopX's schema).
EXTENSION_AREA = "loopx_extension"


@dataclass(frozen=True)
class ExtensionOperation:
    """What one lifecycle verb did, or would do (``documents.operation`` renders it):
    ``row`` as it stands after it (a preview's row is changed but not saved);
    ``target_version`` is the version a rollback preview would make active."""

    operation: str
    execute: bool
    changed: bool
    row: ProviderExtension
    previous_revision: str | None = None
    doctor: dict[str, Any] | None = None
    would_change: bool | None = None
    target_version: str | None = None


def _fields_from(manifest: Manifest) -> dict[str, Any]:
    return {
        "capability": manifest.capability,
        "protocol": manifest.protocol,
        "version": manifest.version,
        "description": manifest.description,
        "entrypoint_argv": list(manifest.entrypoint),
        "doctor_argv": list(manifest.doctor) if manifest.doctor is not None else None,
        "permission": manifest.permission,
        "timeout_seconds": manifest.timeout_seconds,
        "setup_hints": dict(manifest.setup_hints),
        "manifest_digest": manifest.digest,
        "revision": manifest.revision,
    }


def _retain(revisions: list, entry: dict, keep: str | None) -> list:
    kept = [r for r in revisions or [] if r.get("revision") != entry["revision"]]
    kept.append(entry)
    if len(kept) > MAX_REVISIONS:
        required = [r for r in kept if r.get("revision") == keep]
        kept = kept[-MAX_REVISIONS:]
        if required and required[0] not in kept:
            kept = [required[0], *kept[-(MAX_REVISIONS - 1) :]]
    return kept


def _preview(
    operation: str, row: ProviderExtension, previous, doctor, **fields: Any
) -> ExtensionOperation:
    """The preview of a change that would move ``row`` off revision ``previous``."""
    return ExtensionOperation(
        operation,
        execute=False,
        changed=False,
        row=row,
        previous_revision=previous,
        doctor=doctor,
        would_change=True,
        **fields,
    )


def _locked(extension_id: str) -> ProviderExtension:
    _extension_id_argument(extension_id)
    row = ProviderExtension.objects.select_for_update().filter(extension_id=extension_id).first()
    if row is None:
        raise SemanticPreferenceError(
            "extension_not_found", "No installed extension has this id.", field="extension_id"
        )
    return row


def _extension_id_argument(extension_id: Any) -> str:
    if not isinstance(extension_id, str) or not config_module.PROVIDER_ID_RE.fullmatch(
        extension_id
    ):
        raise invalid(
            "invalid_argument",
            "extension_id",
            f"extension_id must match {config_module.PROVIDER_ID_RE.pattern}.",
        )
    return extension_id


def install_manifest(
    manifest: Manifest, *, execute: bool = False, operation: str = "install"
) -> ExtensionOperation:
    """``install`` a new extension (enabled) or ``upgrade`` an installed one.

    The same manifest again writes nothing (``changed: false``). ``install`` of an id
    that is installed with another manifest and ``upgrade`` of a missing id are refused.
    """
    if operation not in ("install", "upgrade"):
        raise invalid("invalid_argument", "operation", "operation must be install or upgrade.")
    doctor = extension_doctor.probe(manifest, execute=execute)
    if execute:
        extension_doctor.require_ready(manifest, doctor, operation)
    for _attempt in range(2):
        try:
            with transaction.atomic():
                row = (
                    ProviderExtension.objects.select_for_update()
                    .filter(extension_id=manifest.extension_id)
                    .first()
                )
                return _install_locked(manifest, row, operation, execute, doctor)
        except IntegrityError:
            continue  # a concurrent install created it; decide again against that row
    raise SemanticPreferenceError(
        "operation_conflict", "Concurrent installs of this extension did not settle."
    )


def _install_locked(manifest, row, operation, execute, doctor) -> ExtensionOperation:
    if row is None and operation == "upgrade":
        raise SemanticPreferenceError(
            "extension_not_found",
            "No installed extension has this id; install it first.",
            field="manifest",
        )
    # LoopX: installing an installed id (even the same manifest) and upgrading to the
    # revision that is already active are errors, not ``unchanged``.
    if row is not None and operation == "install":
        raise invalid(
            "extension_installed",
            "manifest",
            "This extension is already installed; `extension upgrade` installs a new manifest.",
        )
    if row is not None and row.revision == manifest.revision:
        raise invalid("extension_installed", "manifest", "This revision is already active.")
    now = clock.now()
    entry = {
        "revision": manifest.revision,
        "version": manifest.version,
        "manifest": manifest.as_document(),
        "doctor_verified": bool(doctor.get("verified")),
    }
    previous = row.revision if row is not None else None
    if row is None:
        row = ProviderExtension(
            extension_id=manifest.extension_id, installed_at=now, activated_at=now, active=True
        )
    for name, value in _fields_from(manifest).items():
        setattr(row, name, value)
    row.rollback_revision = previous or ""
    row.revisions = _retain(list(row.revisions or []), entry, previous)
    if operation == "upgrade" and not row.active:
        row.active = True
        row.activated_at = now
    row.updated_at = now
    if not execute:
        return _preview(operation, row, previous, doctor)
    with transaction.atomic():
        row.save()
    return ExtensionOperation(
        operation, execute=True, changed=True, row=row, previous_revision=previous, doctor=doctor
    )


def set_active(extension_id: str, *, active: bool, execute: bool = False) -> ExtensionOperation:
    """``enable`` / ``disable`` an installed extension (idempotent, row-locked)."""
    operation = "enable" if active else "disable"
    with transaction.atomic():
        row = _locked(extension_id)
        doctor = None
        if active:
            doctor = extension_doctor.probe(manifest_of(row), execute=execute)
            if execute and not row.active:
                extension_doctor.require_ready(manifest_of(row), doctor, operation)
        would_change = row.active != active
        if execute and would_change:
            now = clock.now()
            row.active = active
            row.updated_at = now
            row.activated_at = now if active else None
            row.save(update_fields=["active", "updated_at", "activated_at"])
        return ExtensionOperation(
            operation,
            execute=execute,
            changed=execute and would_change,
            row=row,
            doctor=doctor,
            would_change=would_change,
        )


def rollback(extension_id: str, *, execute: bool = False) -> ExtensionOperation:
    """Make the rollback revision active again (the current one becomes the rollback)."""
    with transaction.atomic():
        row = _locked(extension_id)
        target = revision_entry(row, row.rollback_revision) if row.rollback_revision else None
        if target is None:
            raise invalid(
                "no_rollback_revision", "extension_id", "This extension has no rollback revision."
            )
        manifest = manifest_from_document(target["manifest"])
        doctor = extension_doctor.probe(manifest, execute=execute)
        if execute:
            extension_doctor.require_ready(manifest, doctor, "rollback")
        previous = row.revision
        if not execute:
            # As LoopX: the preview names the version the rollback would make active.
            return _preview("rollback", row, previous, doctor, target_version=manifest.version)
        now = clock.now()
        for name, value in _fields_from(manifest).items():
            setattr(row, name, value)
        row.rollback_revision = previous
        if not row.active:
            row.active, row.activated_at = True, now
        row.updated_at = now
        row.save()
        return ExtensionOperation(
            "rollback",
            execute=True,
            changed=True,
            row=row,
            previous_revision=previous,
            doctor=doctor,
        )


def list_extensions() -> list[ProviderExtension]:
    """Every installed extension, by id (``documents.listing`` renders them)."""
    return list(ProviderExtension.objects.order_by("extension_id"))


def _extension_errors(function):
    """The operator's extension verbs answer LoopX's ``loopx_extension_error_v0``."""

    @functools.wraps(function)
    def verb(*args, **kwargs):
        try:
            return function(*args, **kwargs)
        except DomainError as err:
            err.area = EXTENSION_AREA
            raise

    return verb


@_extension_errors
def install_extension(*, manifest_path, execute: bool = False) -> ExtensionOperation:
    """``extension install --manifest FILE [--execute]``: validate, then install enabled."""
    return install_manifest(read_manifest_file(manifest_path), execute=execute)


@_extension_errors
def upgrade_extension(*, manifest_path, execute: bool = False) -> ExtensionOperation:
    """``extension upgrade --manifest FILE [--execute]``: a new revision of an installed id."""
    return install_manifest(read_manifest_file(manifest_path), execute=execute, operation="upgrade")


@_extension_errors
def activate_extension(*, extension_id: str, execute: bool = False) -> ExtensionOperation:
    """``extension enable|activate ID [--execute]``."""
    return set_active(extension_id, active=True, execute=execute)


@_extension_errors
def deactivate_extension(
    *, extension_id: str, operator: access.Caller, execute: bool = False
) -> ExtensionOperation:
    """``extension disable|deactivate ID [--execute]`` (the operator's shell) or the admin
    action (an account holding ``preferences.change_providerextension``)."""
    access.require_operator_permission(
        operator, "preferences.change_providerextension", error=SemanticPreferenceError
    )
    return set_active(extension_id, active=False, execute=execute)


@_extension_errors
def rollback_extension(*, extension_id: str, execute: bool = False) -> ExtensionOperation:
    """``extension rollback ID [--execute]``."""
    return rollback(extension_id, execute=execute)
