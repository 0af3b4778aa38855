"""`--format text` is readable for every command: tables and `key: value` lines from the
one kernel renderer, never a Python dict or a JSON blob; `--format` anywhere."""

import argparse
import json
import re

import pytest
from django.core.management import call_command, get_commands, load_command_class

from loopx_site.core.cli import LoopxCommand, format_table, render_payload
from tests.helpers import run_cli

#: One invocation per leaf command (after the demo). Every leaf must be listed here.
INVOCATIONS = {
    "goal register": ["--goal-id", "demo", "--agent-id", "author"],
    "goal list": [],
    "hooks registrations": [],
    "hooks dispatches": [],
    "hooks intents": [],
    "hooks replay": [],
    "hooks execute-intents": ["--executor", "fake-scheduler"],
    "local_preference_provider recall": ["--project", "loopx-demo"],
    "local_preference_provider doctor": ["--project", "loopx-demo"],
    "local_preference_provider reindex": ["--project", "loopx-demo"],
    "loopx_demo": [],
    "recall": ["--project", "loopx-demo", "--config", "demo", "--surface",
               "issue_fix.pr_description"],
    "remember": ["--goal-id", "demo", "--agent-id", "author", "--key", "text.check",
                 "--statement", "Say it plainly.", "--source-ref", "owner-message-9",
                 "--source-quote", "Plainly.", "--expected-revision", "2",
                 "--operation-id", "text-1"],
    "reward_memory architecture": [],
    "reward_memory corpora": [],
    "reward_memory register-corpus": ["--input", "examples/corpus.json"],
    "reward_memory candidate-review": ["--case", "issue-fix-verified-contributor",
                                       "--decision", "accept"],
    "reward_memory apply-review": ["--review-id", "rmrv_missing", "--actor", "user:x"],
    "reward_memory ingest-event": ["--input", "reward_memory/fixtures/scoped_feedback_event.json",
                                   "--goal-id", "demo", "--agent-id", "author"],
    "reward_memory reconcile-ingest": ["--goal-id", "demo", "--agent-id", "author"],
    "reward_memory recall": ["--input", "examples/request.json"],
    "reward_memory application-receipt": ["--input", "examples/application.json"],
    "reward_memory expire-records": [],
    "reward_memory experiment-status": ["--goal-id", "demo", "--agent-id", "author"],
    "semantic_preference agent read": ["--goal-id", "demo", "--agent-id", "author"],
    "semantic_preference agent remember": [
        "--goal-id", "demo", "--agent-id", "author", "--key", "text.check",
        "--statement", "Say it plainly.", "--source-ref", "owner-message-9",
        "--source-quote", "Plainly.", "--expected-revision", "2", "--operation-id", "text-1"],
    "semantic_preference agent retire": [
        "--goal-id", "demo", "--agent-id", "author", "--key", "review.collaboration",
        "--source-ref", "owner-message-9", "--source-quote", "Drop it.",
        "--expected-revision", "2", "--operation-id", "text-2"],
    "semantic_preference agent history": ["--goal-id", "demo", "--agent-id", "author"],
    "semantic_preference agent migrate-scope": ["--goal-id", "demo", "--agent-id", "author",
                                                "--operation-id", "move-text"],
    "semantic_preference recall": ["--project", "loopx-demo", "--config", "demo", "--surface",
                                   "issue_fix.pr_description", "--execute"],
    "semantic_preference doctor": ["--project", "loopx-demo", "--config", "demo"],
    "semantic_preference receipt": [
        "--surface", "issue_fix.pr_description", "--application-id", "pr-1",
        "--outcome", "applied", "--preference-ref", "loopx-local:note:pr-description-sections"],
    "semantic_preference maintenance-receipt": [
        "--trigger", "explicit_feedback", "--outcome", "verified",
        "--corpus-id", "loopx_local.provider_notes", "--evidence-ref", "note-1"],
    "semantic_preference extension install": ["--manifest",
                                              "preferences/extensions/loopx-local.json"],
    "semantic_preference extension activate": ["--extension-id", "loopx-local"],
    "semantic_preference extension deactivate": ["--extension-id", "loopx-local"],
    "semantic_preference extension list": [],
    "todo add": ["--goal-id", "demo", "--todo-id", "text-todo", "--title", "Text check"],
    "todo list": ["--goal-id", "demo"],
    "token create": ["--goal-id", "demo", "--agent-id", "author"],
    "turn settle": ["--goal-id", "demo", "--agent-id", "author", "--todo-id", "demo-ship-docs",
                    "--turn-instance-id", "text-turn", "--event-kind", "todo_completed"],
}  # fmt: skip

STDIN = {
    "local_preference_provider recall": json.dumps(
        {
            "schema_version": "semantic_preference_provider_request_v0",
            "project": "loopx-demo",
            "surface": "issue_fix.pr_description",
            "query": "description sections",
            "limit": 3,
        }
    )
}

RAW = re.compile(r"\{'|\{\"|\[\{|\[\"|': ")


def _leaves(parser, path):
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield " ".join(path)
        return
    for name, child in subs[0].choices.items():
        yield from _leaves(child, [*path, name])


def all_leaf_commands() -> set[str]:
    found = set()
    for name, app in get_commands().items():
        if app.startswith("django") or app in ("rest_framework", "drf_spectacular"):
            continue
        command = load_command_class(app, name)
        if isinstance(command, LoopxCommand):
            found |= set(_leaves(command.create_parser("manage.py", name), [name]))
    return found


def test_every_command_has_a_text_output_check():
    assert all_leaf_commands() <= set(INVOCATIONS), all_leaf_commands() - set(INVOCATIONS)


@pytest.fixture
def demo(db):
    call_command("loopx_demo", stdout=open("/dev/null", "w"))  # noqa: SIM115


@pytest.mark.parametrize("leaf", sorted(INVOCATIONS))
def test_text_output_is_readable(demo, leaf):
    argv = [*leaf.split(), *INVOCATIONS[leaf], "--format", "text"]
    result = run_cli(*argv, stdin=STDIN.get(leaf))
    assert result.code in (0, 2), (leaf, result.stdout, result.stderr)
    assert result.stdout.strip(), leaf
    assert not RAW.search(result.stdout), (leaf, result.stdout)
    assert "Traceback" not in result.stdout + result.stderr
    if result.code == 2:
        assert result.stdout.startswith("error: "), result.stdout


@pytest.mark.parametrize(
    "argv",
    [
        ["goal", "--format", "text", "list"],
        ["goal", "list", "--format", "text"],
        ["goal", "list", "--format=text"],
        ["semantic_preference", "--format", "text", "agent", "read", "--goal-id", "demo",
         "--agent-id", "author"],
        ["semantic_preference", "agent", "--format", "text", "read", "--goal-id", "demo",
         "--agent-id", "author"],
    ],
)  # fmt: skip
def test_format_is_accepted_before_or_after_the_subcommand(demo, argv):
    result = run_cli(*argv)
    assert result.code == 0, result.stdout
    with pytest.raises(json.JSONDecodeError):
        json.loads(result.stdout)
    assert "GOAL_ID" in result.stdout or "revision=2" in result.stdout


def test_format_before_the_command_name_goes_through_manage_py(demo):
    import subprocess
    import sys

    from tests.helpers import ROOT, database_url_for_subprocess

    proc = subprocess.run(
        [sys.executable, "manage.py", "--format", "text", "goal", "list"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**__import__("os").environ, "DATABASE_URL": database_url_for_subprocess()},
        timeout=60,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.startswith("GOAL_ID")


def test_the_renderer_turns_nesting_into_sections_and_tables():
    text = render_payload(
        {
            "status": "ok",
            "flag": True,
            "view": {"revision": 2, "markers": ["a", "b"]},
            "items": [{"key": "k1", "body": {"x": 1}}, {"key": "k2", "body": None}],
            "empty": [],
        }
    )
    assert text.splitlines() == [
        "status: ok",
        "flag: yes",
        "view:",
        "  revision: 2",
        "  markers: a, b",
        "items:",
        "  KEY  BODY",
        "  k1   x=1",
        "  k2",
        "empty: -",
    ]
    assert format_table([], ["a"]).splitlines() == ["A", "(none)"]
