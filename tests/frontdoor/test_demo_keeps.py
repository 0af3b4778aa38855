"""Re-running the demo never undoes an operator (issue 21 item 1), through real
processes: ``manage.py migrate`` + ``loopx_demo`` on a SQLite file, the operator's own
changes through real commands, then ``loopx_demo`` again — everything is kept, and the
loader says ``kept`` (JSON and text)."""

import io
import json
import subprocess
import sys

import pytest

from tests.helpers import ROOT, subprocess_env


@pytest.fixture
def manage(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    env = subprocess_env(
        DATABASE_URL=f"sqlite:///{tmp_path / 'demo.sqlite3'}",
        LOOPX_REWARD_MEMORY_CONFIG_ROOT=str(root),
    )

    def run(*argv, code=0):
        proc = subprocess.run(
            [sys.executable, str(ROOT / "manage.py"), *argv],
            capture_output=True,
            text=True,
            timeout=180,
            env=env,
            cwd=ROOT,
            check=False,
        )
        assert proc.returncode == code, (argv, proc.stdout[-2000:], proc.stderr[-2000:])
        return proc

    def doc(*argv, code=0):
        return json.loads(run(*argv, "--format", "json", code=code).stdout)

    run.json = doc
    return run


def _read(manage):
    return manage.json(
        "semantic_preference", "agent", "read", "--goal-id", "demo", "--agent-id", "author"
    )


def _check_password(manage, username, password):
    code = (
        "from django.contrib.auth import get_user_model; "
        f"u = get_user_model().objects.get(username={username!r}); "
        f"print('ok' if u.check_password({password!r}) else 'bad')"
    )
    return manage("shell", "-c", code).stdout.strip().splitlines()[-1]


@pytest.mark.slow
def test_rerunning_the_demo_keeps_every_operator_change_and_says_kept(manage):
    manage("migrate", "--noinput", "-v0")
    first = manage.json("loopx_demo", "--operator", "op")
    assert first["operator"]["status"] == "created"
    for label, loaded in first["loaded"].items():
        assert set(loaded["objects"].values()) == {"created"}, label

    # the README's own scope move, then a retire in the new scope
    manage(
        "goal", "register", "--goal-id", "demo", "--agent-id", "author", "--agent-id",
        "reviewer", "--state-ref", "goals/demo/state-v2.json", "--execute",
    )  # fmt: skip
    migrated = manage.json(
        "semantic_preference", "agent", "migrate-scope", "--goal-id", "demo",
        "--agent-id", "author", "--operation-id", "move-1", "--execute",
    )  # fmt: skip
    assert migrated["status"] == "applied"
    revision = _read(manage)["current"]["revision"]
    retired = manage.json(
        "semantic_preference", "agent", "retire", "--goal-id", "demo", "--agent-id", "author",
        "--key", "review.collaboration", "--source-ref", "owner-message-9",
        "--source-quote", "Forget the reviewer rule.", "--expected-revision", revision,
        "--operation-id", "forget-1", "--execute",
    )  # fmt: skip
    assert retired["status"] == "applied"
    # an operator revokes the demo's hard_policy checkpoint
    revoked = manage.json(
        "reward_memory", "checkpoint", "revoke", "--checkpoint-id", "demo-core-contributor",
        "--actor", "user:op", "--reason", "no longer a contributor", "--execute",
    )  # fmt: skip
    assert revoked["status"] == "revoked"
    # and rotates the operator password (make reset-operator-password)
    rotated = manage.json("loopx_demo", "--operator", "op", "--reset-password")
    password = rotated["operator"]["password"]
    view = _read(manage)

    second = manage.json("loopx_demo", "--operator", "op")
    assert second["operator"]["status"] == "kept"
    assert second["operator"]["password"] is None
    for label, loaded in second["loaded"].items():
        assert loaded["status"] == "kept", label
        assert set(loaded["objects"].values()) == {"kept"}, label
    text = manage("loopx_demo", "--operator", "op", "--format", "text").stdout
    assert "goal demo: kept" in text
    assert "preferences demo/author: kept" in text
    assert "checkpoint demo-core-contributor: kept" in text
    assert "operator: op kept" in text
    assert ": created" not in text

    goals = manage.json("goal", "list")
    demo = next(g for g in goals["goals"] if g["goal_id"] == "demo")
    assert demo["state_ref"] == "goals/demo/state-v2.json"  # not set back
    after = _read(manage)
    assert after["current"] == view["current"]  # same revision, retire still in force
    states = {i["key"]: i["state"] for i in after["current"]["items"]}
    assert states["review.collaboration"] == "retired"
    checkpoints = manage.json("reward_memory", "checkpoint", "list")
    policy = next(
        c for c in checkpoints["checkpoints"] if c["checkpoint_id"] == "demo-core-contributor"
    )
    assert policy["revoked_at"] is not None
    assert _check_password(manage, "op", password) == "ok"


# -- in process: one loader at a time ------------------------------------------------------
@pytest.mark.django_db(transaction=True)
def test_a_rerun_keeps_a_deactivated_extension_an_edited_note_and_a_retired_corpus():
    from django.core.management import call_command

    from loopx_site.core.access import SHELL
    from preferences import services as pref_services
    from preferences.models.recall import ProviderExtension, ProviderNote
    from reward_memory import principals
    from reward_memory import services as rm_services
    from reward_memory.models import Corpus

    call_command("loopx_demo", stdout=io.StringIO())
    pref_services.deactivate_extension(extension_id="loopx-local", execute=True, operator=SHELL)
    pref_services.save_provider_note(
        project="loopx-demo", note_id="reviewer-language", summary="Operator's own wording."
    )
    rm_services.set_corpus_active(
        corpus_id="loopx-demo-turn-admission",
        active=False,
        principal=principals.operator_account("user:demo-owner", field="actor"),
    )
    out = io.StringIO()
    call_command("loopx_demo", "--format", "json", stdout=out)
    loaded = json.loads(out.getvalue())["loaded"]
    assert ProviderExtension.objects.get(extension_id="loopx-local").active is False
    note = ProviderNote.objects.get(project="loopx-demo", note_id="reviewer-language")
    assert note.summary == "Operator's own wording."
    assert Corpus.objects.get(corpus_id="loopx-demo-turn-admission").active is False
    assert loaded["preferences.demo_recall"]["objects"]["extension loopx-local"] == "kept"
    assert loaded["preferences.demo_recall"]["objects"]["note reviewer-language"] == "kept"
    assert loaded["reward_memory"]["objects"]["corpus loopx-demo-turn-admission"] == "kept"


def test_the_ledger_creates_only_what_is_missing():
    from loopx_site.core.demo_kit import Ledger

    calls = []
    ledger = Ledger()
    assert ledger.ensure("a", exists=False, create=lambda: calls.append("a") or "made") == "made"
    assert ledger.ensure("b", exists=lambda: True, create=lambda: calls.append("b")) is None
    assert calls == ["a"]
    assert ledger.document(x=1) == {
        "status": "created",
        "x": 1,
        "objects": {"a": "created", "b": "kept"},
    }
    assert ledger.summary() == "1 created, 1 kept"
    kept = Ledger()
    kept.record("c", created=False)
    assert kept.status == "kept"
