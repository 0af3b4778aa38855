"""CLI of the semantic preference recall hook: ``recall``, ``doctor``, ``receipt``,
``maintenance-receipt`` and ``extension install|upgrade|enable|disable|rollback|list``
(``activate``/``deactivate`` are aliases of ``enable``/``disable``) under
``manage.py semantic_preference`` (and the ``manage.py recall`` shortcut).

Parse → one service call → render. ``--config CFG`` is a local-private config file (git
must ignore it; the only place besides an installed extension a provider command may come
from) or the name of an operator-registered config (run with its owner Goal as scope).
"""

import argparse
import importlib
from typing import Any

from loopx_site.core.cli import Subcommands, format_mapping, format_table


def _services():
    """``preferences.services``, imported when a recall subcommand runs: building the
    parser (every ``semantic_preference`` call) needs none of it."""
    return importlib.import_module("preferences.services")


def _documents():
    """``preferences.documents.recall``, imported with the services it renders."""
    return importlib.import_module("preferences.documents.recall")


def _extension_documents():
    """``preferences.documents.extensions``, imported with the services it renders."""
    return importlib.import_module("preferences.documents.extensions")


def _operation(result) -> dict[str, Any]:
    return _extension_documents().operation(result)


def add_recall_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--project", default=".", help="Project reference for the provider (default: .)."
    )
    parser.add_argument(
        "--config", required=True, help="Ignored config file, or a registered config name."
    )
    parser.add_argument("--surface", required=True, help="Module-qualified surface id.")
    parser.add_argument(
        "--context",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="Repeatable lower_snake=value context entry.",
    )
    parser.add_argument(
        "--execute", action="store_true", help="Invoke the provider (default: preview)."
    )


def _config_and_scope(config: str):
    services = _services()
    source = services.config_for_cli(config)
    scope = services.scope_of(source) if not isinstance(source, str) else None
    return source, scope


def run_recall(*, project, config, surface, context, execute, **_) -> dict[str, Any]:
    from preferences.recall.config import parse_context_entries

    source, scope = _config_and_scope(config)
    result = _services().recall(
        source,
        project=project,
        surface=surface,
        execute=execute,
        context=parse_context_entries(context),
        scope=scope,
    )
    return _documents().recall(result)


def render_recall(payload: dict[str, Any]) -> str:
    head = format_mapping(
        payload,
        skip=("items", "maintenance_guidance", "provider", "request", "corpus_inventory"),
    )
    provider = payload.get("provider") or {}
    lines = [head, f"provider: {provider.get('extension_id') or provider.get('source') or '-'}"]
    request = payload.get("request")
    if request:
        lines += [
            "",
            "provider request (sent on --execute):",
            format_mapping({k: v for k, v in request.items() if k != "context"}),
            "context: "
            + (", ".join(f"{k}={v}" for k, v in request["context"].items()) or "(none)"),
        ]
    if payload.get("items"):
        lines += ["", format_table(payload["items"], ["preference_ref", "summary"])]
    inventory = payload.get("corpus_inventory") or []
    if inventory:
        lines += [
            "",
            "corpus inventory:",
            format_table(
                [{**c, "writeback_triggers": ",".join(c["writeback_triggers"])} for c in inventory],
                ["corpus_id", "read_role", "write_mode", "writeback_triggers", "closure_policy"],
            ),
        ]
    guidance = payload.get("maintenance_guidance")
    if guidance:
        lines += [
            "",
            "maintenance guidance: corpora "
            + ", ".join(guidance["corpus_ids"])
            + "; triggers "
            + ", ".join(guidance["writeback_triggers"])
            + "; close with "
            + " | ".join(guidance["closure_outcomes"])
            + f" ({guidance['completion']})",
        ]
    return "\n".join(lines)


def render_doctor(payload: dict[str, Any]) -> str:
    head = format_mapping(payload, skip=("config", "provider", "setup_hints"))
    hints = payload.get("setup_hints") or {}
    lines = [head]
    for key in ("install", "configure"):
        if hints.get(key):
            lines.append(f"setup hint ({key}): {hints[key]}")
    return "\n".join(lines)


def add_refs(parser: argparse.ArgumentParser, flag: str, help_text: str) -> None:
    """A repeatable optional ``--<name>-ref`` gathered into ``<name>_refs`` (empty when
    not given): provider-owned references a receipt hashes."""
    dest = flag.removeprefix("--").replace("-", "_") + "s"
    parser.add_argument(flag, action="append", default=[], dest=dest, help=help_text)


def add_doctor_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--project", default=".", help="Project reference for the provider (default: .)."
    )
    parser.add_argument(
        "--config", required=True, help="Ignored config file, or a registered config name."
    )
    parser.add_argument(
        "--execute", action="store_true", help="Run the read-only probe (default: preview)."
    )


def run_doctor(*, project, config, execute, **_) -> dict[str, Any]:
    source, scope = _config_and_scope(config)
    result = _services().doctor(source, project=project, execute=execute, scope=scope)
    return _documents().doctor(result)


def _call(service: str, *options: str, render=None, **fixed: Any):
    """A handler passing these options (``option:argument`` renames one) to the service
    named ``service`` (looked up on call: the recall half of ``services`` loads lazily),
    and its result to ``render`` when given (the documents module's builder)."""

    def run(**given) -> dict[str, Any]:
        names = [o.partition(":") for o in options]
        arguments = {(arg or opt): given[opt] for opt, _, arg in names}
        result = getattr(_services(), service)(**arguments, **fixed)
        return result if render is None else render(result)

    return run


run_receipt = _call(
    "application_receipt",
    "surface",
    "application_id",
    "outcome",
    "preference_refs",
    "artifact_ref",
    render=lambda fields: _documents().application_receipt(**fields),
)
run_maintenance_receipt = _call(
    "maintenance_receipt",
    "trigger",
    "outcome",
    "corpus_ids",
    "scope_refs",
    "evidence_ref",
    render=lambda fields: _documents().maintenance_receipt(**fields),
)
run_install = _call("install_extension", "manifest:manifest_path", "execute", render=_operation)
run_upgrade = _call("upgrade_extension", "manifest:manifest_path", "execute", render=_operation)
run_enable = _call("activate_extension", "extension_id", "execute", render=_operation)


def run_disable(*, extension_id, execute, **_) -> dict[str, Any]:
    from loopx_site.core import access

    return _operation(
        _services().deactivate_extension(
            extension_id=extension_id, execute=execute, operator=access.SHELL
        )
    )


run_rollback = _call("rollback_extension", "extension_id", "execute", render=_operation)
run_list = _call("list_extensions", render=lambda rows: _extension_documents().listing(rows))
run_extension_doctor = _call(
    "doctor_extension",
    "extension_id",
    "all_enabled",
    "execute",
    render=lambda run: _extension_documents().doctor_run(run),
)
run_extension_run = _call("run_extension", "extension_id", "input_json", "execute")


EXTENSION_COLUMNS = [
    "extension_id",
    "version",
    "enabled",
    "active_revision",
    "rollback_available",
    "permission",
    "timeout_seconds",
]


def render_extension(payload: dict[str, Any]) -> str:
    doctor = payload.get("doctor") or {}
    lines = [format_mapping(payload, skip=("extension", "doctor"))]
    if doctor:
        lines.append(f"doctor: {doctor.get('status')} (verified: {doctor.get('verified')})")
    lines.append(format_table([payload["extension"]], EXTENSION_COLUMNS))
    return "\n".join(lines)


def render_list(payload: dict[str, Any]) -> str:
    return format_table(payload["extensions"], EXTENSION_COLUMNS)


def register(sub: Subcommands) -> None:
    """Add the recall hook's subcommands to ``manage.py semantic_preference``."""
    recall = sub.add(
        "recall",
        "Recall ranked semantic preferences for one surface (preview unless --execute).",
        run=run_recall,
        render=render_recall,
    )
    add_recall_arguments(recall)

    doctor = sub.add(
        "doctor",
        "Check a config and its provider; --execute runs the read-only provider probe.",
        run=run_doctor,
        render=render_doctor,
    )
    add_doctor_arguments(doctor)

    receipt = sub.add(
        "receipt",
        "Build an application receipt (returned, not written).",
        run=run_receipt,
        render=format_mapping,
    )
    receipt.add_argument("--surface", required=True)
    receipt.add_argument("--application-id", required=True)
    receipt.add_argument("--outcome", required=True, help="applied | ignored | failed")
    add_refs(
        receipt,
        "--preference-ref",
        "Optional, repeatable provider-owned reference (hashed into the receipt).",
    )
    receipt.add_argument("--artifact-ref", help="Public https:// URL of the artifact.")

    maintenance = sub.add(
        "maintenance-receipt",
        "Build a maintenance receipt (returned, not written).",
        run=run_maintenance_receipt,
        render=format_mapping,
    )
    maintenance.add_argument(
        "--trigger", required=True, help="explicit_feedback | source_truth_changed"
    )
    maintenance.add_argument(
        "--outcome", required=True, help="verified | no_write_rationale | failed"
    )
    maintenance.add_argument(
        "--corpus-id", action="append", required=True, dest="corpus_ids", help="Repeatable."
    )
    add_refs(
        maintenance,
        "--scope-ref",
        "Repeatable provider-owned scope reference (hashed into the receipt).",
    )
    maintenance.add_argument("--evidence-ref", help="Compact evidence reference.")

    _register_extension(sub)


def _register_extension(sub: Subcommands) -> None:
    """``semantic_preference extension …``: LoopX's extension verbs."""
    extension = sub.group("extension", "Installed semantic preference provider extensions.")
    for verb, run, text in (
        ("install", run_install, "Install a provider extension (TOML or JSON manifest)."),
        ("upgrade", run_upgrade, "Install a new revision of an installed extension."),
    ):
        command = extension.add(
            verb, text + " Preview unless --execute.", run=run, render=render_extension
        )
        command.add_argument("--manifest", required=True, help="Manifest file (.toml or .json).")
        command.add_argument("--execute", action="store_true", help="Apply (default: preview).")
    for verb, run, text in (
        ("enable", run_enable, "Enable an installed extension."),
        ("activate", run_enable, "Alias of enable."),
        ("disable", run_disable, "Disable an installed extension."),
        ("deactivate", run_disable, "Alias of disable."),
        ("rollback", run_rollback, "Make the previous revision active again."),
    ):
        command = extension.add(
            verb, text + " Preview unless --execute.", run=run, render=render_extension
        )
        command.add_argument("extension_id")
        command.add_argument("--execute", action="store_true", help="Apply (default: preview).")
    extension.add("list", "List installed extensions.", run=run_list, render=render_list)
    doctor_verb = extension.add(
        "doctor",
        "LoopX's extension doctor of one installed extension or --all-enabled "
        "(read-only; --execute runs the doctor).",
        run=run_extension_doctor,
        render=format_mapping,
    )
    doctor_verb.add_argument("extension_id", nargs="?")
    doctor_verb.add_argument("--all-enabled", action="store_true")
    doctor_verb.add_argument("--execute", action="store_true", help="Run the doctor probe.")
    run_verb = extension.add(
        "run",
        "LoopX's run of a standalone extension: every extension here is a capability "
        "provider, so it is refused as LoopX refuses it (use recall).",
        run=run_extension_run,
        render=format_mapping,
    )
    run_verb.add_argument("extension_id")
    run_verb.add_argument("--input-json", required=True, help="Request JSON file, or - for stdin.")
    run_verb.add_argument("--execute", action="store_true")
