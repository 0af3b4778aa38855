"""The extension doctor: the read-only probe of one manifest's doctor command, run
through the bounded runner before an install, upgrade, enable or rollback executes."""

import os
import shutil
from typing import Any

from loopx_site.core import sandbox as runner
from preferences.documents import extensions as documents
from preferences.recall.errors import SemanticPreferenceError
from preferences.recall.manifest import Manifest, is_project_entrypoint


def probe(manifest: Manifest, *, execute: bool) -> dict[str, Any]:
    """LoopX's extension doctor document for one manifest.

    ``probe_required`` before ``execute``; with it, the manifest doctor runs through the
    bounded runner (empty stdin) and ``ready``/``provider_unavailable`` follow its exit.
    The project's own entrypoint is not probed here (its doctor reads the project
    database): run ``semantic_preference doctor --execute`` for it.
    """

    name = manifest.extension_id
    if manifest.doctor is None:
        return documents.doctor(name, status="ready")
    builtin = is_project_entrypoint(manifest.doctor)
    if not builtin and not _program_exists(manifest.doctor[0]):
        return documents.doctor(
            name, status="provider_missing", available=False, failure_kind="execution_failed"
        )
    if not execute or builtin:
        return documents.doctor(name, status="probe_required")
    run = runner.run(
        list(manifest.doctor),
        request=b"",
        timeout_seconds=manifest.timeout_seconds,
        env=runner.minimal_env(),
    )
    if run.failure_kind is None:
        return documents.doctor(name, status="ready", verified=True)
    return documents.doctor(
        name, status="provider_unavailable", available=False, failure_kind=run.failure_kind
    )


def _program_exists(program: str) -> bool:
    if os.path.isabs(program):
        return os.path.isfile(program) and os.access(program, os.X_OK)
    return shutil.which(program, path=os.environ.get("PATH", os.defpath)) is not None


def require_ready(manifest: Manifest, doctor: dict[str, Any], operation: str) -> None:
    if doctor["status"] not in ("ready", "probe_required"):
        raise SemanticPreferenceError(
            "extension_doctor_failed",
            f"The extension doctor is not ready ({doctor['status']}); {operation} refused.",
            field="manifest",
            details={"doctor_status": doctor["status"], "failure_kind": doctor["failure_kind"]},
        )
