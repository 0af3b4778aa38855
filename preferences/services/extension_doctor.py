"""``extension doctor [ID] [--all-enabled] [--execute]``: LoopX's extension doctor of
installed extensions, read-only (a thin use of ``preferences.recall.doctor.probe``).

One id answers LoopX's ``loopx_extension_doctor_v0`` for its active revision (``disabled``
when it is disabled, ``extension_not_found`` when it is not installed); ``--all-enabled``
answers ``loopx_extension_doctor_batch_v0`` over every enabled extension. Without
``--execute`` nothing runs (``probe_required``); with it, an external extension's doctor
runs through the bounded runner and the project's own provider (``python manage.py``)
answers its in-process doctor report. Nothing is stored: a doctor never changes the
installed state (``local_state_write_performed: false``). The service returns a
``DoctorRun``; ``preferences.documents.extensions.doctor_run`` renders it.
"""

from dataclasses import dataclass
from typing import Any

from preferences.models import ProviderExtension
from preferences.recall import doctor as extension_doctor
from preferences.recall.errors import SemanticPreferenceError, invalid
from preferences.recall.manifest import Manifest, is_project_entrypoint, manifest_of
from preferences.services.extensions import _extension_errors, _extension_id_argument


@dataclass(frozen=True)
class ExtensionDoctor:
    """One installed extension's doctor: nothing probed while it is disabled; the
    project's own provider's in-process report (``healthy``) when executed; otherwise
    the probe's report (``preferences.recall.doctor.probe``)."""

    manifest: Manifest
    active: bool
    probe: dict[str, Any] | None = None
    healthy: bool | None = None


@dataclass(frozen=True)
class DoctorRun:
    """``extension doctor``: one extension's doctor, or (``batch``, ``--all-enabled``)
    every enabled one's."""

    doctors: list[ExtensionDoctor]
    execute: bool
    batch: bool = False


def _doctor_row(row: ProviderExtension, *, execute: bool) -> ExtensionDoctor:
    manifest = manifest_of(row)
    if not row.active:
        return ExtensionDoctor(manifest, active=False)
    if execute and manifest.doctor is not None and is_project_entrypoint(manifest.doctor):
        from preferences.recall.local_provider import doctor_report

        healthy = bool(doctor_report().get("healthy"))
        return ExtensionDoctor(manifest, active=True, healthy=healthy)
    return ExtensionDoctor(
        manifest, active=True, probe=extension_doctor.probe(manifest, execute=execute)
    )


@_extension_errors
def doctor_extension(
    *, extension_id: str | None = None, all_enabled: bool = False, execute: bool = False
) -> DoctorRun:
    """LoopX's ``extension doctor``: exactly one of an id or ``all_enabled``."""
    if bool(extension_id) == bool(all_enabled):
        raise invalid(
            "invalid_argument",
            "extension_id",
            "extension doctor takes exactly one extension_id or --all-enabled.",
        )
    if all_enabled:
        rows = ProviderExtension.objects.filter(active=True).order_by("extension_id")
        return DoctorRun([_doctor_row(r, execute=execute) for r in rows], execute, batch=True)
    _extension_id_argument(extension_id)
    row = ProviderExtension.objects.filter(extension_id=extension_id).first()
    if row is None:
        raise SemanticPreferenceError(
            "extension_not_found", "No installed extension has this id.", field="extension_id"
        )
    return DoctorRun([_doctor_row(row, execute=execute)], execute)
