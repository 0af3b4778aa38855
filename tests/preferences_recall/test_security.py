"""Issue 10 item 1: no remote command execution through a config.

Every variant that ran before is replayed over the real HTTP stack with real host tokens
and real provider subprocesses: a registered config may only bind an installed extension
by id; configs belong to a Goal; providers run sandboxed (scratch cwd, minimal
environment, no inherited descriptors, resource limits) and cannot read the server's
environment.
"""

import json
import os
import sys
from pathlib import Path

import pytest
from django.utils import timezone

from loopx_site.core import sandbox as runner
from preferences import services
from preferences.models import ProviderExtension, SemanticPreferenceConfig
from tests.factories import AgentFactory, GoalFactory
from tests.helpers import run_cli
from tests.preferences_recall.conftest import (
    CONFIG_SCHEMA,
    SURFACE,
    bound_config,
    legacy_config,
    manifest,
    provider,
)

pytestmark = pytest.mark.django_db

RECALL = "/api/v1/semantic-preferences/recall/"
DOCTOR = "/api/v1/semantic-preferences/doctor/"
MISSING = "No registered config has this name."


def _force_row(name: str, config: dict, *, goal, project: str = "p") -> None:
    """A row written around the service (an old row, or a direct database edit)."""
    now = timezone.now()
    SemanticPreferenceConfig.objects.create(
        name=name,
        goal=goal,
        project=project,
        config=config,
        config_digest="sha256:0",
        created_at=now,
        updated_at=now,
    )


def _touch(marker: Path) -> list[str]:
    return ["/bin/sh", "-c", f"touch {marker}"]


def _items(response) -> dict[str, str]:
    return {i["preference_ref"]: i["summary"] for i in response.json()["items"]}


@pytest.fixture
def demo_client(goal, host_client):
    return host_client("demo")


# -- a registered config cannot carry a command ---------------------------------------------


@pytest.mark.parametrize(
    "provider_fields",
    [
        pytest.param({"argv": ["/bin/sh", "-c", "id"]}, id="argv-sh-c"),
        pytest.param(
            {"extension_id": "loopx-local", "args": ["--pythonpath", "/tmp", "--settings", "x"]},
            id="pythonpath-settings-args",
        ),
        pytest.param(
            {"extension_id": "x", "extension_state_file": "/tmp/state.json"}, id="state-file"
        ),
        pytest.param({"argv": ["./provider.sh"]}, id="relative-argv"),
        pytest.param({"extension_id": "x", "probe_argv": ["/bin/sh", "-c", "id"]}, id="probe-argv"),
        pytest.param({"id": "no_extension"}, id="no-extension-id"),
    ],
)
def test_registration_refuses_every_command_bearing_provider(goal, provider_fields):
    config = {**bound_config("x"), "provider": provider_fields}
    with pytest.raises(Exception) as exc:
        services.register_config(
            name="evil", project="p", config=config, goal_id="demo", execute=True
        )
    assert exc.value.code == "config_invalid"
    assert not SemanticPreferenceConfig.objects.exists()


def test_sh_c_argv_in_a_registered_row_is_refused_at_load_and_never_runs(
    demo_client, goal, tmp_path
):
    marker = tmp_path / "ran"
    _force_row("evil", legacy_config(_touch(marker)), goal=goal)
    for url, body in (
        (RECALL, {"config": "evil", "surface": SURFACE, "execute": True}),
        (DOCTOR, {"config": "evil", "execute": True}),
    ):
        response = demo_client.post(url, body, format="json")
        assert response.status_code == 400, response.content
        assert (response.json()["code"], response.json()["field"]) == (
            "config_invalid",
            "provider.argv",
        )
        assert "/bin/sh" not in response.content.decode()
    probe = legacy_config([sys.executable, "-c", "pass"], probe_argv=_touch(marker))
    _force_row("evil-probe", probe, goal=goal)
    response = demo_client.post(DOCTOR, {"config": "evil-probe", "execute": True}, format="json")
    assert response.status_code == 400
    assert not marker.exists()


def test_pythonpath_and_settings_args_never_reach_the_builtin_provider(
    demo_client, goal, tmp_path, write_json
):
    evil_dir = tmp_path / "attacker"
    evil_dir.mkdir()
    marker = tmp_path / "imported"
    (evil_dir / "evil.py").write_text(f"open({str(marker)!r}, 'w').write('x')\n")
    shipped = Path(__file__).resolve().parents[2] / "preferences" / "extensions"
    services.install_extension(manifest_path=shipped / "loopx-local.json", execute=True)
    args = ["--pythonpath", str(evil_dir), "--settings", "evil"]
    config = bound_config("loopx-local")
    config["provider"]["args"] = args
    _force_row("evil", config, goal=goal)
    response = demo_client.post(
        RECALL, {"config": "evil", "surface": SURFACE, "execute": True}, format="json"
    )
    assert (response.status_code, response.json()["code"]) == (400, "config_invalid")
    # Not even a local CLI config may hand these to the project's own entrypoint.
    path = write_json("cli.json", config)
    cli = run_cli(
        "semantic_preference", "recall", "--project", "p", "--config", str(path),
        "--surface", SURFACE, "--execute",
    )  # fmt: skip
    assert (cli.code, cli.json["field"]) == (2, "provider.args")
    assert not marker.exists()


def test_a_foreign_extension_state_file_is_refused_without_install_or_activation(
    demo_client, goal, tmp_path
):
    marker = tmp_path / "ran"
    state = tmp_path / "elsewhere" / "state.json"
    state.parent.mkdir()
    state.write_text(
        json.dumps(
            {
                "schema_version": "semantic_preference_extension_state_v0",
                "extensions": [{**manifest("evil", _touch(marker)), "active": True}],
            }
        )
    )
    config = bound_config("evil")
    config["provider"]["extension_state_file"] = str(state)
    _force_row("evil", config, goal=goal)
    response = demo_client.post(
        RECALL, {"config": "evil", "surface": SURFACE, "execute": True}, format="json"
    )
    assert (response.status_code, response.json()["code"]) == (400, "config_invalid")
    assert response.json()["field"] == "provider.extension_state_file"
    assert str(state) not in response.content.decode()
    assert not marker.exists()
    assert not ProviderExtension.objects.exists()


def test_relative_argv_against_a_caller_chosen_directory_never_runs(
    demo_client, goal, tmp_path, write_json, monkeypatch
):
    marker = tmp_path / "ran"
    project = tmp_path / "project"
    project.mkdir()
    script = project / "provider.sh"
    script.write_text(f"#!/bin/sh\ntouch {marker}\n")
    script.chmod(0o755)
    _force_row("evil", legacy_config(["./provider.sh"]), goal=goal, project=str(project))
    response = demo_client.post(
        RECALL, {"config": "evil", "surface": SURFACE, "execute": True}, format="json"
    )
    assert (response.status_code, response.json()["code"]) == (400, "config_invalid")
    # The CLI refuses it too, even run from that directory with that project.
    monkeypatch.chdir(project)
    path = write_json("cli.json", legacy_config(["./provider.sh"]))
    cli = run_cli(
        "semantic_preference", "recall", "--project", str(project), "--config", str(path),
        "--surface", SURFACE, "--execute",
    )  # fmt: skip
    assert (cli.code, cli.json["code"], cli.json["field"]) == (2, "config_invalid", "provider.argv")
    assert not marker.exists()


# -- ownership: a host runs only its Goal's (or explicitly shared) configs -----------------


def test_a_foreign_goals_config_is_404_like_a_missing_one_and_never_runs(
    bind, host_client, operator_client, tmp_path
):
    GoalFactory(goal_id="demo")
    GoalFactory(goal_id="other")
    marker = tmp_path / "calls"
    bind("owned", provider("valid", "--marker", str(marker)), goal_id="demo")
    foreign = host_client("other")
    for url, body in (
        (RECALL, {"config": "owned", "surface": SURFACE, "execute": True}),
        (DOCTOR, {"config": "owned", "execute": True}),
    ):
        hidden = foreign.post(url, body, format="json")
        missing = foreign.post(url, {**body, "config": "no-such-config"}, format="json")
        assert hidden.status_code == missing.status_code == 404
        assert hidden.json() == missing.json()
        assert hidden.json()["error"] == MISSING
    assert not marker.exists()
    assert (
        host_client("demo")
        .post(RECALL, {"config": "owned", "surface": SURFACE, "execute": True}, format="json")
        .status_code
        == 200
    )
    assert (
        operator_client.post(RECALL, {"config": "owned", "surface": SURFACE}, format="json").json()[
            "status"
        ]
        == "preview_ready"
    )


def test_an_operator_can_share_a_config_with_another_goal(bind, host_client):
    GoalFactory(goal_id="demo")
    GoalFactory(goal_id="other")
    bind("owned", provider("valid"), goal_id="demo")
    body = {"config": "owned", "surface": SURFACE, "execute": True}
    assert host_client("other").post(RECALL, body, format="json").status_code == 404
    preview = services.share_config(name="owned", goal_ids=["other"])
    assert preview["config"]["shared_with"] == ["other"]
    assert host_client("other").post(RECALL, body, format="json").status_code == 404
    services.share_config(name="owned", goal_ids=["other"], execute=True)
    shared = host_client("other").post(RECALL, body, format="json")
    assert (shared.status_code, shared.json()["status"]) == (200, "completed")
    services.share_config(name="owned", goal_ids=[], execute=True)
    assert host_client("other").post(RECALL, body, format="json").status_code == 404


def test_a_config_without_an_owner_is_for_operators_only(bind, demo_client, operator_client):
    bind("unowned", provider("valid"), goal_id=None)
    body = {"config": "unowned", "surface": SURFACE}
    assert demo_client.post(RECALL, body, format="json").status_code == 404
    assert operator_client.post(RECALL, body, format="json").status_code == 200


def test_the_demo_config_belongs_to_goal_demo_and_is_not_shared(host_client):
    from preferences import demo_recall

    GoalFactory(goal_id="demo")
    GoalFactory(goal_id="other")
    demo_recall.load(log=lambda _m: None)
    body = {"config": "demo", "surface": SURFACE}
    assert host_client("demo").post(RECALL, body, format="json").status_code == 200
    assert host_client("other").post(RECALL, body, format="json").status_code == 404


# -- the verified scope reaches the built-in provider, never a body field ---------------------


def _builtin(name: str, goal_id: str | None) -> None:
    """An installed provider holding the built-in provider's permission (the row is what
    `extension install` writes for the shipped manifest, with a probe program instead)."""
    now = timezone.now()
    ProviderExtension.objects.create(
        extension_id=f"ext-{name}",
        capability="semantic-preference",
        protocol="semantic_preference_provider_v0",
        entrypoint_argv=provider("introspect"),
        doctor_argv=None,
        permission="project_database_read",
        timeout_seconds=20,
        manifest_digest="sha256:0",
        revision="0" * 16,
        active=True,
        installed_at=now,
        updated_at=now,
    )
    services.register_config(
        name=name,
        project="loopx-demo",
        config=bound_config(f"ext-{name}", limit=10),
        goal_id=goal_id,
        execute=True,
    )


def test_the_builtin_provider_gets_the_tokens_scope_not_the_bodys(host_client):
    goal = GoalFactory(goal_id="demo")
    AgentFactory(goal=goal, agent_id="author")
    other = GoalFactory(goal_id="other")
    _builtin("scoped", "demo")
    services.share_config(name="scoped", goal_ids=[other.goal_id], execute=True)
    body = {
        "config": "scoped",
        "surface": SURFACE,
        "execute": True,
        "goal_id": "victim",
        "agent_id": "victim-agent",
        "context": {"goal_id": "victim"},
    }
    # a body naming a scope is refused outright (strict bodies, issue 33) ...
    smuggled = host_client("demo", "author").post(RECALL, body, format="json")
    assert smuggled.status_code == 400
    assert (smuggled.json()["code"], smuggled.json()["field"]) == ("invalid_argument", "agent_id")
    # ... and a scope inside the context still never reaches the provider
    body.pop("goal_id")
    body.pop("agent_id")
    seen = json.loads(
        _items(host_client("demo", "author").post(RECALL, body, format="json"))["scope"]
    )
    assert seen == {
        "LOOPX_RECALL_AGENT_ID": "author",
        "LOOPX_RECALL_GOAL_ID": "demo",
        "LOOPX_RECALL_PROJECT": "loopx-demo",
    }
    body.pop("context")
    shared = json.loads(_items(host_client("other").post(RECALL, body, format="json"))["scope"])
    assert shared == {"LOOPX_RECALL_GOAL_ID": "other", "LOOPX_RECALL_PROJECT": "loopx-demo"}


def test_external_providers_get_no_scope_or_server_variables(bind, demo_client):
    GoalFactory(goal_id="demo")
    bind("ext", provider("introspect"), limit=10)
    items = _items(
        demo_client.post(
            RECALL, {"config": "ext", "surface": SURFACE, "execute": True}, format="json"
        )
    )
    assert set(items["env"].split(",")) <= {"PATH", "LANG", "LOOPX_SANDBOX_RUN"}  # run token
    assert items["scope"] == "{}"


# -- the sandbox of every provider run ---------------------------------------------------------


def test_a_provider_child_cannot_read_the_servers_environment(bind, demo_client, monkeypatch):
    GoalFactory(goal_id="demo")
    monkeypatch.setenv("LOOPX_TEST_SERVER_SECRET", "s3cr3t-value")
    bind("peek", provider("introspect"), limit=10)
    response = demo_client.post(
        RECALL, {"config": "peek", "surface": SURFACE, "execute": True}, format="json"
    )
    items = _items(response)
    assert runner.mark_non_dumpable() is sys.platform.startswith("linux")
    if sys.platform.startswith("linux"):
        assert items["parent_environ"] == "denied"
    assert "LOOPX_TEST_SERVER_SECRET" not in items["env"]
    assert "s3cr3t-value" not in response.content.decode()


def test_providers_run_with_limits_no_inherited_fds_and_a_removed_scratch_dir(
    bind, demo_client, tmp_path
):
    GoalFactory(goal_id="demo")
    leaked = open(tmp_path / "held-open", "w")  # noqa: SIM115 - an fd the server holds
    os.set_inheritable(leaked.fileno(), True)
    try:
        bind("box", provider("introspect"), limit=10, timeout=7)
        items = _items(
            demo_client.post(
                RECALL, {"config": "box", "surface": SURFACE, "execute": True}, format="json"
            )
        )
    finally:
        leaked.close()
    fds = [int(fd) for fd in items["fds"].split(",")]
    assert set(fds) - {0, 1, 2} <= {max(fds)}  # only the listing's own descriptor
    assert os.path.basename(items["cwd"]).startswith("loopx-provider-")
    assert not os.path.exists(items["cwd"])
    limits = json.loads(items["limits"])
    assert 0 < limits["RLIMIT_CPU"] <= 7 + runner.CPU_SECONDS_MARGIN
    assert 0 < limits["RLIMIT_AS"] <= runner.MAX_ADDRESS_SPACE_BYTES
    assert 0 < limits["RLIMIT_NPROC"] <= runner.MAX_PROCESSES


def test_a_cli_local_config_may_still_name_a_command(write_json):
    """The operator's own git-ignored file is the one place besides an installed
    extension where a command may come from."""
    path = write_json("local.json", legacy_config(provider("valid")))
    assert services.recall(path, project="p", surface=SURFACE, execute=True)["status"] == (
        "completed"
    )
    assert CONFIG_SCHEMA == "semantic_preference_hook_config_v0"


# -- config and manifest files go through the safe reader ------------------------------------


@pytest.mark.parametrize("command", ["recall", "install"])
def test_a_fifo_config_or_manifest_is_refused_without_blocking(tmp_path, command):
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    if command == "recall":
        argv = ["recall", "--config", str(fifo), "--surface", SURFACE, "--execute"]
    else:
        argv = ["extension", "install", "--manifest", str(fifo), "--execute"]
    result = run_cli("semantic_preference", *argv)
    assert result.code == 2
    assert result.json["status"] == "invalid_request"
    assert str(fifo) not in result.stdout


@pytest.mark.parametrize("name", ["deep.json", "deep.toml"])
def test_deeply_nested_config_and_manifest_files_are_refused(tmp_path, name):
    path = tmp_path / name
    if name.endswith(".json"):
        path.write_text("[" * 5000 + "]" * 5000)
        argv = ["recall", "--config", str(path), "--surface", SURFACE]
    else:
        path.write_text("x = " + "[" * 5000 + "]" * 5000)
        argv = ["extension", "install", "--manifest", str(path)]
    result = run_cli("semantic_preference", *argv)
    assert result.code == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert result.json["code"] in ("config_invalid", "invalid_manifest")
