"""`--format text` is readable for every command: tables and `key: value` lines from the
one kernel renderer, never a Python dict or a JSON blob; `--format` anywhere."""

import argparse
import json
import re

import pytest
from django.core.management import get_commands, load_command_class

from loopx_site.core.cli import LoopxCommand, format_table, render_payload
from reward_memory.models import MemoryRecord
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
    "mcp": [],  # no LOOPX_MCP_TOKEN here: the refusal, before any protocol
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
    "reward_memory provider-deletion": ["--record-ref", "{record}"],
    "reward_memory relevance-eval": ["--records", "bench/relevance_real/records.jsonl",
                                     "--queries", "bench/relevance_real/queries_heldout.jsonl",
                                     "--limit", "3"],
    "reward_memory corpus-ranking": ["--corpus-id", "loopx-demo-turn-admission",
                                     "--ranking", "hybrid", "--actor", "user:operator"],
    "reward_memory embed-backfill": [],
    "retention": [],
    "goal erase": ["--goal-id", "demo", "--agent-id", "reviewer"],  # a preview
    "memory export": ["--goal-id", "demo", "--output", "{export_file}"],  # the summary
    "memory import": ["--input", "{record_file}"],  # not a stream: invalid_export
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
    "todo validator-install": ["--manifest", "hooks/extensions/evidence_check.json"],
    "todo validator-list": [],
    "todo validator-enable": ["--validator-id", "loopx-evidence-check"],
    "todo validator-disable": ["--validator-id", "loopx-evidence-check"],
    "reward_memory reflection-validate": ["--goal-id", "demo", "--agent-id", "author",
                                          "--reflection-digest", "sha256:" + "0" * 64,
                                          "--status", "passed", "--actor", "user:demo-owner"],
    "token create": ["--goal-id", "demo", "--agent-id", "author"],
    "turn run-once": ["--goal-id", "demo", "--agent-id", "author",
                      "--turn-instance-id", "text-run-once"],
    "quota should-run": ["--goal-id", "demo", "--agent-id", "author"],
    "turn verify-capsule": ["--goal-id", "demo", "--agent-id", "author", "--capsule-file", "-"],
    "agent_turn_recall": ["--goal-id", "demo", "--agent-id", "author",
                          "--turn-instance-id", "text-turn-recall", "--quota-decision-json", "-"],
    "semantic_preference agent observe": ["--goal-id", "demo", "--agent-id", "author"],
    "semantic_preference extension disable": ["loopx-local"],
    "semantic_preference extension enable": ["loopx-local"],
    "semantic_preference extension upgrade": ["--manifest",
                                              "preferences/extensions/loopx-local.json"],
    "semantic_preference extension rollback": ["loopx-local"],
    "semantic_preference extension doctor": ["--all-enabled"],
    "semantic_preference extension run": ["loopx-local", "--input-json",
                                          "preferences/extensions/loopx-local.json"],
    "reward_memory checkpoint": ["list"],
    "reward_memory route-check": ["--case", "pr-3237"],
    "reward_memory mark-experience": ["--record-ref", "{record}", "--state", "stale",
                                      "--source-truth-ref", "rev:text-1",
                                      "--actor", "user:demo-owner"],
    "reward_memory retire-record": ["--record-ref", "{record}", "--actor", "user:demo-owner",
                                    "--reason-summary", "Superseded by the new template."],
    "reward_memory revoke-record": ["--record-ref", "{record}", "--actor", "user:demo-owner",
                                    "--revocation-ref", "rev:text-2"],
    "reward_memory supersede-record": ["--record-ref", "{record}", "--actor", "user:demo-owner",
                                       "--by-record-ref", "{other_record}"],
    "reward_memory reopen": ["--corpus-id", "loopx-demo-pr-description",
                             "--candidate-ref", "cand_missing", "--actor", "user:demo-owner"],
    "reward_memory operator-control": ["--input", "{record_file}", "--action", "retire",
                                       "--control-ref", "demo-core-contributor",
                                       "--reasoning-summary", "Superseded by the new template.",
                                       "--actor", "user:demo-owner"],
    "turn settle": ["--goal-id", "demo", "--agent-id", "author", "--todo-id", "demo-ship-docs",
                    "--turn-instance-id", "text-turn", "--event-kind", "todo_completed"],
    "configure_goal": ["--goal-id", "demo",
                       "--reward-memory-config", ".local/reward-memory/demo-experiment.json",
                       "--reward-memory-agent", "author"],
    "reward_memory hook": ["--boundary", "reviewer_artifact.summary", "--goal-id", "demo",
                           "--agent-id", "author", "--query", "description sections"],
    "reward_memory evaluate": [],
    "reward_memory dogfood-evaluate": ["--input", "{record_file}"],
}  # fmt: skip

STDIN = {
    "turn verify-capsule": json.dumps({"schema_version": "loopx_turn_capsule_v0"}),
    "local_preference_provider recall": json.dumps(
        {
            "schema_version": "semantic_preference_provider_request_v0",
            "project": "loopx-demo",
            "surface": "issue_fix.pr_description",
            "query": "description sections",
            "limit": 3,
        }
    ),
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


def _refs(tmp_path) -> dict[str, str]:
    """Values only the demo's rows know (content-derived record refs)."""
    records = list(MemoryRecord.objects.order_by("pk").values_list("record_ref", flat=True))
    record_file = tmp_path / "record.json"
    record_file.write_text(json.dumps({"record_ref": records[0]}))
    return {"record": records[0], "other_record": records[1], "record_file": str(record_file),
            "export_file": str(tmp_path / "demo.jsonl")}  # fmt: skip


def _stdin(leaf):
    if leaf == "agent_turn_recall":  # the quota decision LoopX hands over, made for real
        return run_cli("quota", "should-run", "--goal-id", "demo", "--agent-id", "author").stdout
    return STDIN.get(leaf)


@pytest.mark.parametrize("leaf", sorted(INVOCATIONS))
def test_text_output_is_readable(demo, leaf, tmp_path):
    refs = _refs(tmp_path)
    argv = [*leaf.split(), *(a.format(**refs) for a in INVOCATIONS[leaf]), "--format", "text"]
    result = run_cli(*argv, stdin=_stdin(leaf))
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


@pytest.mark.slow  # manage.py in a subprocess
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


def test_text_conflict_error_shows_the_current_revision(agent):
    common = [
        "--goal-id",
        "demo",
        "--agent-id",
        "author",
        "--key",
        "style.tone",
        "--source-ref",
        "owner-message-1",
        "--source-quote",
        "Be calm.",
    ]
    first = run_cli(
        "remember",
        *common,
        "--statement",
        "Be calm.",
        "--expected-revision",
        "none",
        "--operation-id",
        "tone-1",
        "--execute",
    )
    assert first.code == 0, first.stdout
    stale = run_cli(
        "remember",
        *common,
        "--statement",
        "Be brisk.",
        "--expected-revision",
        "none",
        "--operation-id",
        "tone-2",
        "--execute",
        "--format",
        "text",
    )
    assert stale.code == 2
    assert stale.stdout.startswith("error: revision_conflict")
    assert "current revision: 1" in stale.stdout


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (
            ["semantic_preference", "agent", "read", "--goal-id", "bad id", "--agent-id", "a"],
            "error: invalid_argument (--goal-id): --goal-id must match",
        ),
        (
            ["semantic_preference", "agent", "read", "--goal-id", "nope", "--agent-id", "a"],
            "error: goal_not_registered (--goal-id): ",
        ),
    ],
)
def test_text_errors_name_the_flag_the_person_typed(db, argv, expected):
    result = run_cli(*argv, "--format", "text")
    assert result.code == 2
    assert result.stdout.startswith(expected), result.stdout
    assert "goal_id" not in result.stdout
    as_json = run_cli(*argv)
    assert as_json.json["field"] == "goal_id"  # the machine document keeps the field name
