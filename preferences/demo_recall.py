"""Demo data of the recall hook: the installed ``loopx-local`` extension, a registered
config ``demo`` (owned by Goal ``demo``, shared with no other Goal) and a few provider
notes for project ``loopx-demo`` (idempotent; the registry demo runs first)."""

from pathlib import Path

from loopx_site.core.errors import DomainError
from preferences import services

PROJECT = "loopx-demo"
GOAL_ID = "demo"
MANIFEST = Path(__file__).resolve().parent / "extensions" / "loopx-local.json"

DEMO_CONFIG = {
    "schema_version": "semantic_preference_hook_config_v0",
    "enabled": True,
    "provider": {
        "id": "loopx_local",
        "extension_id": "loopx-local",
        "setup_hints": {
            "configure": "Run `manage.py semantic_preference doctor --project loopx-demo "
            "--config demo --execute` after adding notes."
        },
    },
    "surfaces": {
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
}

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


def load(*, log) -> dict:
    try:
        installed = services.install_extension(manifest_path=MANIFEST, execute=True)
    except DomainError as exc:
        if exc.code != "extension_installed":
            raise
        installed = services.upgrade_extension(manifest_path=MANIFEST, execute=True)
    if not installed["enabled"]:
        services.activate_extension(extension_id="loopx-local", execute=True)
    log(f"provider extension loopx-local: {installed['status']}, enabled")
    services.register_config(
        name="demo", project=PROJECT, config=DEMO_CONFIG, goal_id=GOAL_ID, execute=True
    )
    for note in NOTES:
        services.save_provider_note(project=PROJECT, **note)
    log(f"semantic preference config `demo` and {len(NOTES)} provider notes for {PROJECT}")
    return {
        "extension_id": "loopx-local",
        "config": "demo",
        "project": PROJECT,
        "provider_notes": len(NOTES),
    }
