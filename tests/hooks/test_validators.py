"""Completion validator extensions: operator-installed from a manifest, declared by a Todo
when it is created (CLI, admin, API by id only), run by the server in the sandbox."""

import json

import pytest

from hooks.models import CompletionValidator, Todo
from hooks.services import validators
from tests.helpers import run_cli
from tests.hooks import validators as vx


@pytest.fixture
def manifest(tmp_path):
    return vx.manifest_file(tmp_path, "echo-pass", vx.PASSING)


def test_validator_install_previews_then_installs_and_is_idempotent(db, manifest):
    preview = run_cli("todo", "validator-install", "--manifest", str(manifest))
    assert preview.code == 0, preview.stdout
    assert preview.json["status"] == "preview"
    assert not CompletionValidator.objects.exists()
    done = run_cli("todo", "validator-install", "--manifest", str(manifest), "--execute")
    assert done.json["status"] == "applied"
    again = run_cli("todo", "validator-install", "--manifest", str(manifest), "--execute")
    assert again.json["status"] == "unchanged"
    row = CompletionValidator.objects.get()
    assert row.entrypoint_argv[1].startswith("/")  # resolved once, at install
    listing = run_cli("todo", "validator-list")
    assert "/" not in json.dumps(listing.json["validators"][0]["validator_id"])
    assert str(manifest.parent) not in listing.stdout  # no argv, no path for readers


def test_installing_another_manifest_under_the_same_id_is_a_conflict(db, tmp_path, manifest):
    run_cli("todo", "validator-install", "--manifest", str(manifest), "--execute")
    other = vx.manifest_file(tmp_path, "echo-pass", vx.PLAIN_EXIT_0, timeout=7)
    refused = run_cli("todo", "validator-install", "--manifest", str(other), "--execute")
    assert (refused.code, refused.json["code"]) == (2, "validator_conflict")
    assert CompletionValidator.objects.get().timeout_seconds == 5


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"shell": "python3 -c 'evil()'"}, "shell"),
        ({"protocol": "semantic_preference_provider_v0"}, "protocol"),
        ({"timeout_seconds": 0}, "timeout_seconds"),
        ({"entrypoint": "python3 check.py"}, "entrypoint"),
        ({"validator_id": "Bad Id"}, "validator_id"),
    ],
)
def test_a_malformed_manifest_is_refused_and_nothing_installed(db, manifest, change, field):
    raw = json.loads(manifest.read_text())
    raw.update(change)
    manifest.write_text(json.dumps(raw))
    refused = run_cli("todo", "validator-install", "--manifest", str(manifest), "--execute")
    assert (refused.code, refused.json["code"], refused.json["field"]) == (
        2,
        "invalid_manifest",
        field,
    )
    assert not CompletionValidator.objects.exists()


def test_todo_add_declares_an_installed_validator(db, goal, manifest):
    run_cli("todo", "validator-install", "--manifest", str(manifest), "--execute")
    added = run_cli(
        "todo", "add", "--goal-id", "demo", "--todo-id", "t1", "--title", "T",
        "--validator", "echo-pass", "--execute",
    )  # fmt: skip
    assert added.code == 0, added.stdout
    assert added.json["todo"]["validator"] == "echo-pass"
    assert Todo.objects.get().validator.validator_id == "echo-pass"
    same = run_cli(
        "todo", "add", "--goal-id", "demo", "--todo-id", "t1", "--title", "T", "--execute"
    )  # the same id without the validator is another Todo
    assert (same.code, same.json["code"]) == (2, "todo_conflict")


def test_todo_add_with_an_unknown_or_disabled_validator_writes_nothing(db, goal, manifest):
    refused = run_cli(
        "todo", "add", "--goal-id", "demo", "--todo-id", "t1", "--title", "T",
        "--validator", "echo-pass", "--execute",
    )  # fmt: skip
    assert (refused.code, refused.json["code"]) == (2, "validator_not_found")
    run_cli("todo", "validator-install", "--manifest", str(manifest), "--execute")
    run_cli("todo", "validator-disable", "--validator-id", "echo-pass", "--execute")
    disabled = run_cli(
        "todo", "add", "--goal-id", "demo", "--todo-id", "t1", "--title", "T",
        "--validator", "echo-pass", "--execute",
    )  # fmt: skip
    assert disabled.json["code"] == "validator_not_found"
    assert not Todo.objects.exists()


def test_the_api_may_only_name_an_installed_validator_never_a_command(
    db, goal, manifest, host_client
):
    client = host_client("demo")
    url = "/api/v1/goals/demo/todos/"
    command = client.post(
        url,
        {"todo_id": "t1", "title": "T", "validator": "python3 -c 'evil()'", "execute": True},
        format="json",
    )
    assert command.status_code == 400, command.json()
    assert command.json()["field"] == "validator"
    missing = client.post(
        url, {"todo_id": "t1", "title": "T", "validator": "nope", "execute": True}, format="json"
    )
    assert missing.status_code == 404
    assert not Todo.objects.exists()
    validators.install_validator(validators.read_manifest_file(manifest), execute=True)
    ok = client.post(
        url, {"todo_id": "t1", "title": "T", "validator": "echo-pass", "execute": True},
        format="json",
    )  # fmt: skip
    assert ok.status_code == 201, ok.json()
    assert ok.json()["todo"]["validator"] == "echo-pass"


def test_the_admin_adds_a_todo_with_its_validator_through_the_service(
    db, goal, manifest, client, admin_user
):
    validators.install_validator(validators.read_manifest_file(manifest), execute=True)
    client.force_login(admin_user)
    response = client.post(
        "/admin/hooks/todo/add/",
        {
            "goal": goal.pk,
            "todo_id": "t-admin",
            "title": "Admin Todo",
            "segment_ref": "",
            "validator": CompletionValidator.objects.get().pk,
        },
    )
    assert response.status_code == 302, response.content[:500]
    todo = Todo.objects.get(todo_id="t-admin")
    assert todo.validator.validator_id == "echo-pass"
    assert todo.revision == 1


def test_the_validator_runs_with_a_minimal_environment(db, agent, tmp_path, monkeypatch):
    from hooks import services as hooks_services
    from hooks.selectors import find_settlement, receipt_for
    from tests.hooks.factories import settle

    monkeypatch.setenv("LOOPX_TEST_SECRET", "hunter2")
    script = """
    import json, os, sys
    doc = json.load(sys.stdin)
    r = doc["reflection"]
    leaked = "LOOPX_TEST_SECRET" in os.environ or "DATABASE_URL" in os.environ
    print(json.dumps({"schema_version": "reward_memory_reflection_validation_v0",
                      "status": "failed" if leaked else "passed",
                      "reflection_digest": r["reflection_digest"],
                      "evidence_refs": r["evidence_refs"],
                      "checks": sorted(k.lower() for k in os.environ)[:16]}))
    """
    vx.install(tmp_path, "env-check", script)
    hooks_services.add_todo(
        goal_id="demo", todo_id="t1", title="T", validator="env-check", execute=True
    )
    settle()
    settlement = find_settlement(agent=agent, turn_instance_id="turn-1")
    run = hooks_services.run_for_settlement(
        settlement=settlement,
        receipt=receipt_for(settlement),
        reflection={
            "reflection_digest": "sha256:" + "a" * 64,
            "surface_id": "issue_fix.pr_description",
            "source_types": ["real"],
            "evidence_refs": ["pr:1"],
        },
    )
    assert run.status == "passed", run
    assert set(run.checks) <= {"path", "lang", "loopx_sandbox_run"}  # the run token
