"""Demo data of the recall hook: the installed ``loopx-local`` extension, a registered
config ``demo`` (owned by Goal ``demo``, shared with no other Goal) and a few provider
notes for project ``loopx-demo`` (the registry demo runs first).

Create-only (``loopx_site.core.demo_kit``): an installed extension (enabled or not), a
registered config and a note that exist are kept as the operator left them."""

from pathlib import Path

from loopx_site.core.demo_kit import Ledger
from preferences import services
from preferences.documents import recall as documents
from preferences.models.recall import ProviderExtension, ProviderNote, SemanticPreferenceConfig

PROJECT = "loopx-demo"
GOAL_ID = "demo"
MANIFEST = Path(__file__).resolve().parent / "extensions" / "loopx-local.json"

DEMO_CONFIG = documents.hook_config(
    provider={
        "id": "loopx_local",
        "extension_id": "loopx-local",
        "setup_hints": {
            "configure": "Run `manage.py semantic_preference doctor --project loopx-demo "
            "--config demo --execute` after adding notes."
        },
    },
    surfaces={
        "issue_fix.pr_description": {
            "query": "PR description structure and reviewer language preferences",
            "limit": 5,
        },
        "agent_workflow.turn_admission": {
            "query": "turn admission quota todo priorities before starting work",
            "limit": 3,
            "failure_policy": "fail_open",
        },
    },
)

NOTES = [
    {
        "note_id": "pr-description-sections",
        "summary": "PR descriptions use three sections: Why, What changed, How to verify.",
        "body": "description structure sections reviewer",
        "surfaces": ["issue_fix.pr_description"],
    },
    {
        "note_id": "reviewer-language",
        "summary": "Write reviewer-facing language plainly; no marketing adjectives.",
        "body": "reviewer language tone preferences",
        "surfaces": ["issue_fix.pr_description"],
    },
    {
        "note_id": "turn-admission-todo-first",
        "summary": "Before starting a turn, finish the oldest open Todo before new work.",
        "body": "turn admission todo priorities quota",
        "surfaces": ["agent_workflow.turn_admission"],
    },
]


def _install() -> None:
    installed = services.install_extension(manifest_path=MANIFEST, execute=True)
    if not installed.row.active:
        services.activate_extension(extension_id="loopx-local", execute=True)


def load(*, log) -> dict:
    ledger = Ledger()
    ledger.ensure(
        "extension loopx-local",
        exists=ProviderExtension.objects.filter(extension_id="loopx-local").exists,
        create=_install,
    )
    log(f"provider extension loopx-local: {ledger.objects['extension loopx-local']}")
    ledger.ensure(
        "config demo",
        exists=SemanticPreferenceConfig.objects.filter(name="demo").exists,
        create=lambda: services.register_config(
            name="demo", project=PROJECT, config=DEMO_CONFIG, goal_id=GOAL_ID, execute=True
        ),
    )
    for note in NOTES:
        ledger.ensure(
            f"note {note['note_id']}",
            exists=ProviderNote.objects.filter(project=PROJECT, note_id=note["note_id"]).exists,
            create=lambda note=note: services.save_provider_note(project=PROJECT, **note),
        )
    log(f"semantic preference config `demo` and {len(NOTES)} provider notes for {PROJECT}")
    return ledger.document(
        extension_id="loopx-local",
        config="demo",
        project=PROJECT,
        provider_notes=len(NOTES),
    )
