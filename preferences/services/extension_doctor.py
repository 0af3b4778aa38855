"""``extension doctor [ID] [--all-enabled] [--execute]``: LoopX's extension doctor of
installed extensions, read-only (a thin use of ``preferences.recall.doctor.probe``).

One id answers LoopX's ``loopx_extension_doctor_v0`` for its active revision (``disabled``
when it is disabled, ``extension_not_found`` when it is not installed); ``--all-enabled``
answers ``loopx_extension_doctor_batch_v0`` over every enabled extension. Without
``--execute`` nothing runs (``probe_required``); with it, an external extension's doctor
runs through the bounded runner and the project's own provider (``python manage.py``)
answers its in-process doctor report. Nothing is stored: a doctor never changes the
installed state (``local_state_write_performed: false``).
"""

from typing import Any

from preferences.documents import extensions as documents
from preferences.models import ProviderExtension
from preferences.recall import doctor as extension_doctor
from preferences.recall.errors import SemanticPreferenceError, invalid
from preferences.recall.manifest import is_project_entrypoint, manifest_of
from preferences.services.extensions import _extension_errors, _extension_id_argument


def _doctor_row(row: ProviderExtension, *, execute: bool) -> dict[str, Any]:
    manifest = manifest_of(row)
    if not row.active:
        return documents.disabled_doctor(manifest)
    if execute and manifest.doctor is not None and is_project_entrypoint(manifest.doctor):
        from preferences.recall.local_provider import doctor_report

        healthy = bool(doctor_report().get("healthy"))
        return documents.doctor(
            manifest,
            status="ready" if healthy else "provider_unavailable",
            available=healthy,
            verified=healthy,
            failure_kind=None if healthy else "doctor_unhealthy",
        )
    return extension_doctor.probe(manifest, execute=execute)


@_extension_errors
def doctor_extension(
    *, extension_id: str | None = None, all_enabled: bool = False, execute: bool = False
) -> dict[str, Any]:
    """LoopX's ``extension doctor``: exactly one of an id or ``all_enabled``."""
    if bool(extension_id) == bool(all_enabled):
        raise invalid(
            "invalid_argument",
            "extension_id",
            "extension doctor takes exactly one extension_id or --all-enabled.",
        )
    if all_enabled:
        rows = ProviderExtension.objects.filter(active=True).order_by("extension_id")
        return documents.doctor_batch([_doctor_row(r, execute=execute) for r in rows], execute)
    _extension_id_argument(extension_id)
    row = ProviderExtension.objects.filter(extension_id=extension_id).first()
    if row is None:
        raise SemanticPreferenceError(
            "extension_not_found", "No installed extension has this id.", field="extension_id"
        )
    return _doctor_row(row, execute=execute)
