"""CLI of the semantic preference recall hook: ``recall``, ``doctor``, ``receipt``,
``maintenance-receipt`` and ``extension install|activate|deactivate|list`` under
``manage.py semantic_preference`` (and the ``manage.py recall`` shortcut).

Parse → one service call → render. ``--config CFG`` is a local-private config file (git
must ignore it) or the name of an operator-registered config.
"""

import argparse
from typing import Any

from loopx_site.core.cli import Subcommands, format_mapping, format_table
from preferences import services
from preferences.recall.config import parse_context_entries


def add_recall_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--project", required=True, help="Project reference for the provider.")
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


def run_recall(*, project, config, surface, context, execute, **_) -> dict[str, Any]:
    return services.recall(
        services.config_for_cli(config),
        project=project,
        surface=surface,
        execute=execute,
        context=parse_context_entries(context),
    )


def render_recall(payload: dict[str, Any]) -> str:
    head = format_mapping(payload, skip=("items", "maintenance_guidance", "provider"))
    provider = payload.get("provider") or {}
    lines = [head, f"provider: {provider.get('extension_id') or provider.get('source') or '-'}"]
    if payload.get("items"):
        lines += ["", format_table(payload["items"], ["preference_ref", "summary"])]
    guidance = payload.get("maintenance_guidance")
    if guidance:
        lines += [
            "",
            "maintenance guidance:",
            format_table(
                [
                    {**c, "writeback_triggers": ",".join(c["writeback_triggers"])}
                    for c in guidance["corpora"]
                ],
                ["corpus_id", "write_mode", "writeback_triggers", "closure_policy"],
            ),
        ]
    return "\n".join(lines)


def add_doctor_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--project", required=True, help="Project reference for the provider.")
    parser.add_argument(
        "--config", required=True, help="Ignored config file, or a registered config name."
    )
    parser.add_argument(
        "--execute", action="store_true", help="Run the read-only probe (default: preview)."
    )


def run_doctor(*, project, config, execute, **_) -> dict[str, Any]:
    return services.doctor(services.config_for_cli(config), project=project, execute=execute)


def run_receipt(
    *, surface, application_id, outcome, preference_refs, artifact_ref, **_
) -> dict[str, Any]:
    return services.application_receipt(
        surface=surface,
        application_id=application_id,
        outcome=outcome,
        preference_refs=preference_refs,
        artifact_ref=artifact_ref,
    )


def run_maintenance_receipt(
    *, trigger, outcome, corpus_ids, scope_refs, evidence_ref, **_
) -> dict[str, Any]:
    return services.maintenance_receipt(
        trigger=trigger,
        outcome=outcome,
        corpus_ids=corpus_ids,
        scope_refs=scope_refs,
        evidence_ref=evidence_ref,
    )


def run_install(*, manifest, execute, **_) -> dict[str, Any]:
    return services.install_extension(manifest_path=manifest, execute=execute)


def run_activate(*, extension_id, **_) -> dict[str, Any]:
    return services.activate_extension(extension_id=extension_id)


def run_deactivate(*, extension_id, **_) -> dict[str, Any]:
    return services.deactivate_extension(extension_id=extension_id)


def run_list(**_) -> dict[str, Any]:
    return services.list_extensions()


EXTENSION_COLUMNS = ["extension_id", "version", "active", "permission", "timeout_seconds"]


def render_extension(payload: dict[str, Any]) -> str:
    return "\n".join(
        [
            format_mapping(payload, skip=("extension",)),
            format_table([payload["extension"]], EXTENSION_COLUMNS),
        ]
    )


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
        render=format_mapping,
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
    receipt.add_argument(
        "--preference-ref",
        action="append",
        required=True,
        dest="preference_refs",
        help="Repeatable provider-owned reference (hashed into the receipt).",
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
    maintenance.add_argument("--outcome", required=True, help="verified | no_write_rationale")
    maintenance.add_argument(
        "--corpus-id", action="append", required=True, dest="corpus_ids", help="Repeatable."
    )
    maintenance.add_argument(
        "--scope-ref",
        action="append",
        default=[],
        dest="scope_refs",
        help="Repeatable provider-owned scope reference (hashed into the receipt).",
    )
    maintenance.add_argument("--evidence-ref", help="Compact evidence reference.")

    extension = sub.group("extension", "Installed semantic preference provider extensions.")
    install = extension.add(
        "install",
        "Install a provider extension from its manifest (preview unless --execute).",
        run=run_install,
        render=render_extension,
    )
    install.add_argument("--manifest", required=True, help="Manifest JSON file.")
    install.add_argument("--execute", action="store_true", help="Install (default: preview).")
    activate = extension.add(
        "activate", "Activate an installed extension.", run=run_activate, render=render_extension
    )
    activate.add_argument("extension_id")
    deactivate = extension.add(
        "deactivate",
        "Deactivate an installed extension.",
        run=run_deactivate,
        render=render_extension,
    )
    deactivate.add_argument("extension_id")
    extension.add("list", "List installed extensions.", run=run_list, render=render_list)
