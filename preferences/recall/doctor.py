"""The extension doctor: the read-only probe of one manifest's doctor command, run
through the bounded runner before an install, upgrade, enable or rollback executes."""

import hashlib
import json
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

    identity = _identity(manifest.entrypoint)
    if manifest.doctor is None:
        return documents.doctor(manifest, status="ready", probed_identity=identity)
    builtin = is_project_entrypoint(manifest.doctor)
    if not builtin and not _program_exists(manifest.doctor[0]):
        return documents.doctor(
            manifest, status="provider_missing", available=False, failure_kind="execution_failed"
        )
    if not execute or builtin:
        return documents.doctor(manifest, status="probe_required", probed_identity=identity)
    run = runner.run(
        list(manifest.doctor),
        request=b"",
        timeout_seconds=manifest.timeout_seconds,
        env=runner.minimal_env(),
    )
    if run.failure_kind is None and _identity(manifest.entrypoint) == identity:
        return documents.doctor(manifest, status="ready", verified=True, probed_identity=identity)
    return documents.doctor(
        manifest,
        status="provider_unavailable",
        available=False,
        failure_kind=run.failure_kind or "entrypoint_changed_during_probe",
        probed_identity=identity,
    )


def _identity(argv: tuple[str, ...]) -> str | None:
    """LoopX's ``entrypoint_identity``: sha256 of the sorted compact JSON of the
    entrypoint file's identity (size and content digest); ``None`` when it is not an
    executable file (or is the project's own ``python manage.py``)."""
    if is_project_entrypoint(argv):
        return None
    program = argv[0]
    path = program if os.path.isabs(program) else shutil.which(program)
    try:
        resolved = os.path.realpath(path) if path else None
        if resolved is None or not os.path.isfile(resolved):
            return None
        stat = os.stat(resolved)
        if stat.st_mode & 0o111 == 0:
            return None
        with open(resolved, "rb") as handle:
            content = hashlib.file_digest(handle, "sha256").hexdigest()
    except OSError:
        return None
    identity = documents.entrypoint_identity(size=stat.st_size, content_sha256=content)
    serialized = json.dumps(identity, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(serialized.encode("utf-8")).hexdigest()


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
