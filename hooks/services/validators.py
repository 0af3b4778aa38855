"""Todo completion validators: operator-installed extensions the server runs at settlement.

Manifest (``loopx_completion_validator_manifest_v0``, JSON, installed from the operator's
shell with ``manage.py todo validator-install --manifest FILE --execute``)::

    {"schema_version": "loopx_completion_validator_manifest_v0",
     "validator_id": "loopx-evidence-check",          # [a-z0-9][a-z0-9._-]{0,63}
     "version": "1", "description": "…",             # optional, short
     "protocol": "loopx_completion_validator_v0",
     "entrypoint": ["python3", "./evidence_check.py", "--require-prefix", "test:"],
     "timeout_seconds": 10}                           # 1..120

A relative program or ``./``/``../`` argument is resolved against the manifest's directory,
a bare program against ``PATH``, once, at install: the stored argv is absolute. Exactly
these fields; nothing in a request can name, change or extend the argv.

Run (``run_for_settlement``): through ``loopx_site.core.sandbox`` like a provider — argv
from the manifest, no shell, a scratch working directory, ``PATH`` and ``LANG`` only,
rlimits, a wall-clock timeout (the manifest's), stdout capped at ``MAX_OUTPUT_BYTES``,
stderr discarded, the whole process group killed afterwards.

Protocol ``loopx_completion_validator_v0``. Stdin is one JSON object::

    {"schema_version": "loopx_completion_validator_input_v0",
     "validator_id": "…",
     "todo": {"goal_id", "todo_id", "state", "revision", "segment_ref"},
     "settlement": {"goal_id", "agent_id", "todo_id", "turn_instance_id", "event_kind",
                    "effect_id", "receipt_id", "receipt_state", "state_revision"},
     "reflection": {"reflection_digest", "surface_id", "source_types", "evidence_refs"}}

Stdout must be exactly one JSON object ``reward_memory_reflection_validation_v0`` with
``status`` (``passed`` | ``failed``), the input's ``reflection_digest`` and exactly its
``evidence_refs`` (optional: ``checks``, a list of at most 16 short lower-case tokens).
It passes only when the process exits 0 **and** that document is well formed, says
``passed`` and names exactly this digest and these refs. A plain exit 0, an empty or
garbage stdout, a mismatch, a non-zero exit, a timeout or an oversized output all fail
with one bounded ``failure_kind`` (``VALIDATOR_FAILURE_KINDS``); nothing of the program's
output is kept except its sha256 digest.
"""

import hashlib
import json
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.db import IntegrityError, transaction

from hooks import contracts
from hooks.errors import AREA, error
from hooks.models import CompletionValidator, DurableWritebackReceipt, TurnSettlement
from loopx_site.core import clock, files, sandbox
from loopx_site.core.canonical import canonical_bytes, digest_ref

MANIFEST_SCHEMA = contracts.VALIDATOR_MANIFEST_SCHEMA
PROTOCOL = contracts.VALIDATOR_PROTOCOL
#: The document a validator prints (the seed's name; Reward Memory consumes it).
VALIDATION_SCHEMA = "reward_memory_reflection_validation_v0"

MANIFEST_FIELDS = {
    "schema_version",
    "validator_id",
    "version",
    "description",
    "protocol",
    "entrypoint",
    "timeout_seconds",
}
REQUIRED_FIELDS = {"schema_version", "validator_id", "protocol", "entrypoint", "timeout_seconds"}
OUTPUT_FIELDS = {"schema_version", "status", "reflection_digest", "evidence_refs", "checks"}
VALIDATOR_ID_RE = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
CHECK_RE = re.compile(r"^[a-z0-9][a-z0-9_.:-]{0,63}$")
MAX_MANIFEST_BYTES = 16 * 1024
MAX_OUTPUT_BYTES = 16 * 1024
MAX_ARGV = 32
MAX_ARG_CHARS = 1024

PASSED = "passed"
FAILED = "failed"
#: Bounded reasons a validator run did not pass (reported, never raised).
VALIDATOR_FAILURE_KINDS = (
    "validator_unavailable",  # declared, but not installed or disabled
    "validator_execution_failed",
    "validator_timed_out",
    "validator_output_too_large",
    "validator_nonzero_exit",
    "validator_output_malformed",  # exit 0 without a well-formed validation document
    "validator_mismatch",  # a document for another digest or other evidence refs
    "validator_failed",  # the validator said failed
)
_RUN_FAILURES = {
    sandbox.EXECUTION_FAILED: "validator_execution_failed",
    sandbox.TIMED_OUT: "validator_timed_out",
    sandbox.RESPONSE_TOO_LARGE: "validator_output_too_large",
    sandbox.NONZERO_EXIT: "validator_nonzero_exit",
}


def _invalid(field: str | None, message: str):
    return error("invalid_manifest", message, field=field)


# -- manifests -----------------------------------------------------------------------------
@dataclass(frozen=True)
class Manifest:
    validator_id: str
    entrypoint: tuple[str, ...]
    timeout_seconds: int
    version: str = ""
    description: str = ""

    @property
    def digest(self) -> str:
        return digest_ref(contracts.validator_manifest(self))


def _resolve(argv: list[str], base_dir: Path | None) -> tuple[str, ...]:
    program, rest = argv[0], argv[1:]
    if not os.path.isabs(program):
        if "/" in program:
            if base_dir is None:
                raise _invalid("entrypoint", "A relative entrypoint needs a manifest file.")
            program = str((base_dir / program).resolve())
        else:
            program = shutil.which(program, path=os.environ.get("PATH", os.defpath)) or program
    resolved = [
        str((base_dir / a).resolve()) if base_dir and a.startswith(("./", "../")) else a
        for a in rest
    ]
    return (program, *resolved)


def validate_manifest(raw: Any, *, base_dir: Path | None = None) -> Manifest:
    """A ``loopx_completion_validator_manifest_v0`` object → ``Manifest`` (or
    ``invalid_manifest`` naming the field; never the file's path or content)."""
    if not isinstance(raw, dict):
        raise _invalid(None, "The manifest must be a JSON object.")
    unknown = sorted(str(k)[:64] for k in raw if k not in MANIFEST_FIELDS)
    if unknown:
        raise _invalid(unknown[0], f"Unknown manifest field {unknown[0]}.")
    missing = sorted(REQUIRED_FIELDS - set(raw))
    if missing:
        raise _invalid(missing[0], f"The manifest needs {missing[0]}.")
    if raw["schema_version"] != MANIFEST_SCHEMA:
        raise _invalid("schema_version", f"schema_version must be {MANIFEST_SCHEMA}.")
    if raw["protocol"] != PROTOCOL:
        raise _invalid("protocol", f"protocol must be {PROTOCOL}.")
    validator_id = raw["validator_id"]
    if not isinstance(validator_id, str) or not VALIDATOR_ID_RE.fullmatch(validator_id):
        raise _invalid("validator_id", f"validator_id must match {VALIDATOR_ID_RE.pattern}.")
    argv = raw["entrypoint"]
    if (
        not isinstance(argv, list)
        or not 1 <= len(argv) <= MAX_ARGV
        or not all(
            isinstance(a, str) and a and len(a) <= MAX_ARG_CHARS and "\x00" not in a for a in argv
        )
    ):
        raise _invalid("entrypoint", f"entrypoint is an argv list of 1..{MAX_ARGV} strings.")
    timeout = raw["timeout_seconds"]
    if isinstance(timeout, bool) or not isinstance(timeout, int) or not 1 <= timeout <= 120:
        raise _invalid("timeout_seconds", "timeout_seconds must be an integer 1-120.")
    texts = {}
    for name, limit in (("version", 64), ("description", 500)):
        value = raw.get(name, "")
        if not isinstance(value, str) or len(value) > limit or "\x00" in value:
            raise _invalid(name, f"{name} must be a string of at most {limit} characters.")
        texts[name] = value
    return Manifest(
        validator_id=validator_id,
        entrypoint=_resolve(argv, base_dir),
        timeout_seconds=timeout,
        **texts,
    )


def read_manifest_file(path: str | os.PathLike) -> Manifest:
    absolute = Path(os.path.abspath(path))
    data = files.read_text(
        absolute,
        option="manifest",
        area=AREA,
        max_bytes=MAX_MANIFEST_BYTES,
        code="invalid_manifest",
        not_found_code="manifest_not_found",
    )
    raw = files.loads_json(data, option="manifest", area=AREA, code="invalid_manifest")
    return validate_manifest(raw, base_dir=absolute.parent)


# -- install / enable / disable / list -----------------------------------------------------
@dataclass(frozen=True)
class ValidatorOperation:
    """One install, enable or disable: the row as it is (or, a preview, would be); the
    adapters render it with ``hooks.documents.validator_operation_result``."""

    operation: str  # install | enable | disable
    execute: bool
    changed: bool
    row: CompletionValidator
    would_change: bool | None = None


def install_validator(
    manifest: Manifest, *, installed_by: str = "", execute: bool = False
) -> ValidatorOperation:
    """Install a validator (enabled). The same manifest again is ``unchanged``; the same id
    with another manifest is ``validator_conflict`` (409) — nothing is replaced in place."""
    now = clock.now()
    existing = CompletionValidator.objects.filter(validator_id=manifest.validator_id).first()
    if existing is not None:
        if existing.manifest_digest != manifest.digest:
            raise error(
                "validator_conflict",
                f"Validator {manifest.validator_id!r} is installed with another manifest",
                field="validator_id",
            )
        return ValidatorOperation("install", execute=execute, changed=False, row=existing)
    row = CompletionValidator(
        validator_id=manifest.validator_id,
        version=manifest.version,
        description=manifest.description,
        entrypoint_argv=list(manifest.entrypoint),
        timeout_seconds=manifest.timeout_seconds,
        manifest_digest=manifest.digest,
        active=True,
        installed_by=installed_by,
        installed_at=now,
        updated_at=now,
    )
    if not execute:
        return ValidatorOperation(
            "install", execute=False, changed=False, row=row, would_change=True
        )
    try:
        with transaction.atomic():
            row.save(force_insert=True)
    except IntegrityError:  # a concurrent install won; decide against that row
        return install_validator(manifest, installed_by=installed_by, execute=execute)
    return ValidatorOperation("install", execute=True, changed=True, row=row)


def set_validator_active(
    validator_id: str, *, active: bool, execute: bool = False
) -> ValidatorOperation:
    with transaction.atomic():
        row = CompletionValidator.objects.select_for_update().filter(validator_id=validator_id)
        row = row.first()
        if row is None:
            raise error(
                "validator_not_found", "No installed validator has this id", field="validator_id"
            )
        would_change = row.active != active
        if execute and would_change:
            row.active, row.updated_at = active, clock.now()
            row.save(update_fields=["active", "updated_at"])
        return ValidatorOperation(
            "enable" if active else "disable",
            execute=execute,
            changed=execute and would_change,
            row=row,
            would_change=would_change,
        )


def list_validators() -> list[CompletionValidator]:
    """The installed validators (render with ``hooks.documents.validator_list``)."""
    return list(CompletionValidator.objects.all())


def installed_validator(validator_id: Any) -> CompletionValidator:
    """The installed, enabled validator a Todo may declare (``validator_not_found``)."""
    if not isinstance(validator_id, str) or not VALIDATOR_ID_RE.fullmatch(validator_id):
        raise error(
            "invalid_argument",
            f"validator must match {VALIDATOR_ID_RE.pattern}",
            field="validator",
        )
    row = CompletionValidator.objects.filter(validator_id=validator_id, active=True).first()
    if row is None:
        raise error(
            "validator_not_found",
            f"No enabled validator {validator_id!r} is installed",
            field="validator",
        )
    return row


# -- running -------------------------------------------------------------------------------
@dataclass(frozen=True)
class ValidatorRun:
    """One server-run validation of a settled Todo (public-safe: no argv, no output)."""

    declared: bool
    validator_id: str | None = None
    manifest_digest: str | None = None
    status: str | None = None  # passed | failed (None when nothing was declared)
    failure_kind: str | None = None
    checks: tuple[str, ...] = ()
    output_digest: str | None = None
    receipt_id: str | None = None
    ran: bool = False

    def public(self) -> dict[str, Any]:
        return {
            "declared": self.declared,
            "ran": self.ran,
            "validator_id": self.validator_id,
            "manifest_digest": self.manifest_digest,
            "status": self.status,
            "failure_kind": self.failure_kind,
            "checks": list(self.checks),
            "output_digest": self.output_digest,
            "receipt_id": self.receipt_id,
        }


def judge_output(stdout: bytes, *, reflection_digest: str, evidence_refs: list[str]):
    """(status, failure_kind, checks) of a validator's stdout after a clean exit 0."""
    try:
        document = json.loads(stdout.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return FAILED, "validator_output_malformed", ()
    if (
        not isinstance(document, dict)
        or set(document) - OUTPUT_FIELDS
        or document.get("schema_version") != VALIDATION_SCHEMA
        or document.get("status") not in (PASSED, FAILED)
        or not isinstance(document.get("reflection_digest"), str)
        or not isinstance(document.get("evidence_refs"), list)
        or not all(isinstance(r, str) for r in document["evidence_refs"])
    ):
        return FAILED, "validator_output_malformed", ()
    checks = document.get("checks", [])
    if (
        not isinstance(checks, list)
        or len(checks) > 16
        or not all(isinstance(x, str) and CHECK_RE.fullmatch(x) for x in checks)
    ):
        return FAILED, "validator_output_malformed", ()
    refs = document["evidence_refs"]
    if document["reflection_digest"] != reflection_digest or (
        len(refs) != len(evidence_refs) or sorted(refs) != sorted(evidence_refs)
    ):
        return FAILED, "validator_mismatch", tuple(checks)
    if document["status"] != PASSED:
        return FAILED, "validator_failed", tuple(checks)
    return PASSED, None, tuple(checks)


def run_for_settlement(
    *, settlement: TurnSettlement, receipt: DurableWritebackReceipt, reflection: dict[str, Any]
) -> ValidatorRun:
    """Run the settled Todo's declared validator once for ``reflection`` (its digest and
    evidence refs, computed by the caller's service). No validator declared → a
    ``declared: False`` run that started nothing."""
    todo = settlement.todo
    if todo.validator_id is None:
        return ValidatorRun(declared=False, receipt_id=receipt.receipt_id)
    validator = CompletionValidator.objects.get(pk=todo.validator_id)
    base = {
        "declared": True,
        "validator_id": validator.validator_id,
        "manifest_digest": validator.manifest_digest,
        "receipt_id": receipt.receipt_id,
    }
    if not validator.active or receipt.state != DurableWritebackReceipt.State.COMMITTED:
        return ValidatorRun(**base, status=FAILED, failure_kind="validator_unavailable")
    request = canonical_bytes(contracts.validator_input(settlement, receipt, validator, reflection))
    run = sandbox.run(
        list(validator.entrypoint_argv),
        request=request + b"\n",
        timeout_seconds=validator.timeout_seconds,
        env=sandbox.minimal_env(),
        max_stdout=MAX_OUTPUT_BYTES,
    )
    if run.failure_kind is not None:
        return ValidatorRun(
            **base, ran=True, status=FAILED, failure_kind=_RUN_FAILURES[run.failure_kind]
        )
    status, failure, checks = judge_output(
        run.stdout,
        reflection_digest=reflection["reflection_digest"],
        evidence_refs=list(reflection["evidence_refs"]),
    )
    return ValidatorRun(
        **base,
        ran=True,
        status=status,
        failure_kind=failure,
        checks=checks,
        output_digest="sha256:" + hashlib.sha256(run.stdout).hexdigest(),
    )
