"""LoopX wire contract of semantic preference recall, doctor, receipts and extensions.

Every case replays a call from LoopX's own tests or smoke scripts (cited per case; the
repository is ``loopx-project/loopx``) against our real commands — in-process through
``ManagementUtility`` or as a real ``manage.py`` subprocess — and, where the operation is
on the API, against ``/api/v1/semantic-preferences/…``; the host's assertions are kept.
The provider programs are the smoke scripts' own (``providers/loopx_*.py``), run unchanged:
through an argv in a local config file (git-ignored: it lives outside any work tree) and
through LoopX's TOML extension manifest.
"""

import json
import sys
from pathlib import Path

import pytest

from preferences import services
from tests.factories import GoalFactory
from tests.helpers import run_cli, run_manage
from tests.preferences_recall.conftest import PROVIDERS

pytestmark = pytest.mark.django_db

HOOK_SMOKE = "examples/semantic-preference-hook-smoke.py"
ISSUE_FIX_SMOKE = "examples/issue-fix-pr-description-builder-smoke.py"
EXTENSION_TESTS = "tests/extensions/test_extension_runtime.py"
CONTRACT = "loopx/capabilities/semantic_preference/contract.py"
CLI = "loopx/capabilities/semantic_preference/cli.py"

CONFIG_SCHEMA = "semantic_preference_hook_config_v0"
RECALL = "/api/v1/semantic-preferences/recall/"
DOCTOR = "/api/v1/semantic-preferences/doctor/"
RECEIPTS = "/api/v1/semantic-preferences/receipts/"
MAINTENANCE = "/api/v1/semantic-preferences/maintenance-receipts/"
PR = "issue_fix.pr_description"
DRAFT = "content_ops.draft_language"
OTHER = "other_module.summary"


def sp(*argv: str):
    """``manage.py semantic_preference …`` (LoopX: ``loopx semantic-preference …``)."""
    return run_cli("semantic_preference", *argv)


def ok(*argv: str) -> dict:
    result = sp(*argv)
    assert result.code == 0, result.stdout + result.stderr
    return result.json


def failure(*argv: str) -> dict:
    result = sp(*argv)
    assert result.code == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    return result.json


@pytest.fixture
def project(tmp_path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    return path


@pytest.fixture
def write(tmp_path):
    def do(name: str, document: dict) -> Path:
        path = tmp_path / name
        path.write_text(json.dumps(document))
        return path

    return do


@pytest.fixture
def smoke_config(write):
    """The enabled config of the hook smoke: the smoke's provider by argv, a probe,
    LoopX's setup_hints object and two module-owned surfaces."""
    return write(
        "config.json",
        {
            "schema_version": CONFIG_SCHEMA,
            "enabled": True,
            "provider": {
                "id": "fixture_memory",
                "argv": [sys.executable, str(PROVIDERS / "loopx_smoke_hook.py")],
                "probe_argv": [sys.executable, "-c", "raise SystemExit(0)"],
                "setup_hints": {
                    "install": "Install the fixture provider explicitly.",
                    "configure": "Configure the fixture provider explicitly.",
                },
            },
            "surfaces": {
                PR: {"query": "PR description preferences"},
                DRAFT: {"query": "Draft language preferences"},
            },
        },
    )


def extension_provider(directory: Path, *, doctor_exit: int = 0) -> Path:
    """LoopX's ``_provider`` (tests/extensions/test_extension_runtime.py): an executable
    script with a ``#!<python>`` line."""
    source = (PROVIDERS / "loopx_extension_runtime.py").read_text()
    path = directory / ("provider" if doctor_exit == 0 else f"provider-{doctor_exit}")
    path.write_text(
        f"#!{sys.executable}\n" + source.replace("DOCTOR_EXIT = 0", f"DOCTOR_EXIT = {doctor_exit}")
    )
    path.chmod(0o755)
    return path


def toml_manifest(path: Path, *, entrypoint: Path, version: str, permissions=None) -> Path:
    """LoopX's ``_manifest`` (tests/extensions/test_extension_runtime.py), verbatim fields."""
    declared = json.dumps(permissions if permissions is not None else ["semantic_preference.read"])
    path.write_text(
        f"""\
schema_version = "loopx_extension_manifest_v0"
id = "test-semantic-extension"
version = "{version}"
requires_loopx_api = ">=1,<2"
permissions = {declared}

[runtime]
protocol = "semantic_preference_provider_v0"
entrypoint = {json.dumps(str(entrypoint))}
doctor_args = ["--doctor"]
required_permissions = ["semantic_preference.read"]
timeout_seconds = 5

[[implements]]
capability_id = "semantic-preference"
protocol = "semantic_preference_provider_v0"
"""
    )
    return path


def extension_config(write, project: Path) -> Path:
    """The config of ``test_semantic_preference_resolves_enabled_extension`` (our runtime
    state is the database, so no ``extension_state_file``; ``--project`` args kept)."""
    return write(
        "semantic-preference.json",
        {
            "schema_version": CONFIG_SCHEMA,
            "enabled": True,
            "provider": {
                "id": "openviking_semantic_preference",
                "extension_id": "test-semantic-extension",
                "args": ["--project", str(project)],
            },
            "surfaces": {
                PR: {"query": "validation preferences", "limit": 3, "failure_policy": "fail_open"}
            },
        },
    )


def _recall(project, config, surface, *extra):
    return [
        "recall",
        "--project",
        str(project),
        "--config",
        str(config),
        "--surface",
        surface,
        *extra,
    ]


# -- examples/semantic-preference-hook-smoke.py ------------------------------------------------


@pytest.mark.parametrize("surface", [PR, DRAFT])
def test_hook_smoke_preview_then_execute_per_surface(project, smoke_config, surface):
    """Cites examples/semantic-preference-hook-smoke.py (recall_cli loop over surfaces)."""
    preview = ok(*_recall(project, smoke_config, surface))
    assert preview["status"] == "preview_ready", preview
    assert preview["ok"] is True
    assert preview["request"] == {
        "schema_version": "semantic_preference_provider_request_v0",
        "surface": surface,
        "query": "PR description preferences" if surface == PR else "Draft language preferences",
        "limit": 5,
        "context": {},
    }
    recalled = ok(*_recall(project, smoke_config, surface, "--execute"))
    assert recalled["status"] == "completed", recalled
    assert recalled["items"][0]["summary"] == f"prefer {surface}", recalled
    assert (recalled["corpus_inventory"], recalled["maintenance_guidance"]) == ([], None)


def test_hook_smoke_recall_in_a_real_subprocess(project, smoke_config):
    """Cites examples/semantic-preference-hook-smoke.py (`run(...)`: a subprocess, exit 0,
    JSON on stdout)."""
    done = run_manage(
        "semantic_preference", *_recall(project, smoke_config, PR, "--execute"), "--format", "json"
    )
    assert done.returncode == 0, done.stderr or done.stdout
    assert json.loads(done.stdout)["items"][0]["summary"] == f"prefer {PR}"


def test_hook_smoke_doctor_preview_is_probe_required_and_execute_is_ready(project, smoke_config):
    """Cites examples/semantic-preference-hook-smoke.py (doctor_preview / provider_doctor)
    and loopx/capabilities/semantic_preference/contract.py (provider_doctor flags)."""
    preview = ok("doctor", "--project", str(project), "--config", str(smoke_config))
    assert preview["status"] == "probe_required", preview
    assert preview["schema_version"] == "semantic_preference_provider_doctor_v0"
    assert preview["automatic_setup_performed"] is False, preview
    for flag in ("credential_writes_performed", "service_writes_performed"):
        assert preview[flag] is False
    assert preview["setup_hints"] == {
        "install": "Install the fixture provider explicitly.",
        "configure": "Configure the fixture provider explicitly.",
    }
    doctor = ok("doctor", "--project", str(project), "--config", str(smoke_config), "--execute")
    assert doctor["status"] == "ready", doctor
    assert doctor["verified"] is True, doctor


def test_hook_smoke_receipt_is_stateless_and_hashes_refs(project, operator_client):
    """Cites examples/semantic-preference-hook-smoke.py (receipt with --artifact-ref)."""
    argv = [
        "receipt", "--surface", PR, "--application-id", "pr-17-description",
        "--outcome", "applied", "--preference-ref", f"memory://{PR}",
        "--artifact-ref", "https://example.com/pr/17",
    ]  # fmt: skip
    receipt = ok(*argv)
    assert receipt["preference_ref_digests"], receipt
    assert "memory://" not in json.dumps(receipt), receipt
    assert not list(project.rglob("*receipt*")), "receipt must remain stateless"
    api = operator_client.post(
        RECEIPTS,
        {
            "surface": PR,
            "application_id": "pr-17-description",
            "outcome": "applied",
            "preference_refs": [f"memory://{PR}"],
            "artifact_ref": "https://example.com/pr/17",
        },
        format="json",
    )
    assert api.json() == receipt


def test_hook_smoke_disabled_config_recalls_nothing_for_any_surface(project, write):
    """Cites examples/semantic-preference-hook-smoke.py (disabled.json, other_module.summary)."""
    disabled = write("disabled.json", {"schema_version": CONFIG_SCHEMA, "enabled": False})
    result = ok(*_recall(project, disabled, OTHER, "--execute"))
    assert result["status"] == "disabled", result
    assert result["items"] == []


def test_hook_smoke_failing_provider_fail_open_then_fail_closed(project, write):
    """Cites examples/semantic-preference-hook-smoke.py (failing.json: exit 7, both policies)
    and loopx/capabilities/semantic_preference/cli.py (the error document)."""
    payload = {
        "schema_version": CONFIG_SCHEMA,
        "enabled": True,
        "provider": {"argv": [sys.executable, "-c", "raise SystemExit(7)"]},
        "surfaces": {OTHER: {"query": "preferences"}},
    }
    failing = write("failing.json", payload)
    unavailable = ok(*_recall(project, failing, OTHER, "--execute"))
    assert unavailable["status"] == "provider_unavailable", unavailable
    assert (unavailable["ok"], unavailable["failure_kind"]) == (True, "nonzero_exit")
    payload["surfaces"][OTHER]["failure_policy"] = "fail_closed"
    write("failing.json", payload)
    error = failure(*_recall(project, failing, OTHER, "--execute"))
    assert (error["ok"], error["status"]) == (False, "invalid_request")
    assert error["schema_version"] == "semantic_preference_error_v0"
    assert isinstance(error["error"], str)
    assert "provider unavailable" in error["error"], error


def test_hook_smoke_missing_provider_doctor_and_recall(project, write):
    """Cites examples/semantic-preference-hook-smoke.py (missing.json)."""
    missing = write(
        "missing.json",
        {
            "schema_version": CONFIG_SCHEMA,
            "enabled": True,
            "provider": {
                "id": "missing_fixture",
                "argv": ["definitely-missing-semantic-provider"],
                "setup_hints": {"install": "Install it explicitly."},
            },
            "surfaces": {OTHER: {"query": "preferences"}},
        },
    )
    doctor = ok("doctor", "--project", str(project), "--config", str(missing))
    assert doctor["status"] == "provider_missing", doctor
    assert doctor["setup_hints"]["install"] == "Install it explicitly."
    recalled = ok(*_recall(project, missing, OTHER, "--execute"))
    assert recalled["status"] == "provider_unavailable", recalled


def test_hook_smoke_invalid_context_is_invalid_request(project, smoke_config):
    """Cites examples/semantic-preference-hook-smoke.py (invalid_context)."""
    error = failure(*_recall(project, smoke_config, PR, "--context", "not-a-key-value"))
    assert error["status"] == "invalid_request", error
    assert "lower-snake key=value" in error["error"], error
    assert error["code"] == "invalid_context"


def test_hook_smoke_receipt_refs_stay_bounded(operator_client):
    """Cites examples/semantic-preference-hook-smoke.py (21 refs → "at most 20")."""
    refs = [f"memory://{index}" for index in range(21)]
    argv = [
        "receipt",
        "--surface",
        OTHER,
        "--application-id",
        "bounded-receipt",
        "--outcome",
        "applied",
    ]
    error = failure(*argv, *[a for ref in refs for a in ("--preference-ref", ref)])
    assert "at most 20" in error["error"], error
    api = operator_client.post(
        RECEIPTS,
        {
            "surface": OTHER,
            "application_id": "bounded-receipt",
            "outcome": "applied",
            "preference_refs": refs,
        },
        format="json",
    )
    assert api.status_code == 400


# -- examples/issue-fix-pr-description-builder-smoke.py -----------------------------------------


def _issue_fix_config(write, counter: Path, *, enabled: bool = True, name="enabled.json") -> Path:
    document = {
        "schema_version": CONFIG_SCHEMA,
        "enabled": enabled,
        "provider": {
            "argv": [sys.executable, str(PROVIDERS / "loopx_smoke_issue_fix.py"), str(counter)]
        },
    }
    if enabled:
        document["surfaces"] = {
            PR: {"query": "PR description preferences", "failure_policy": "fail_open"}
        }
    return write(name, document)


def test_issue_fix_smoke_one_call_inventory_and_guidance(project, write, tmp_path):
    """Cites examples/issue-fix-pr-description-builder-smoke.py (enabled build: one provider
    call, corpus_inventory and maintenance_guidance.writeback_triggers)."""
    counter = tmp_path / "provider-count.txt"
    result = ok(*_recall(project, _issue_fix_config(write, counter), PR, "--execute"))
    assert counter.read_text() == "1", "enabled build must call provider once"
    assert result["corpus_inventory"][0]["corpus_id"] == "project_peer_preferences"
    assert result["maintenance_guidance"]["writeback_triggers"] == [
        "explicit_feedback",
        "source_truth_changed",
    ]
    assert result["maintenance_guidance"]["corpus_ids"] == ["project_peer_preferences"]
    receipt = ok(
        "receipt", "--surface", PR, "--application-id", "pr-17-description", "--outcome", "applied",
        "--preference-ref", result["items"][0]["preference_ref"],
        "--artifact-ref", "https://example.com/pr/17",
    )  # fmt: skip
    assert receipt["outcome"] == "applied"
    assert "viking://user/preferences/pr-description-chinese" not in json.dumps(receipt)


def test_issue_fix_smoke_disabled_config_never_calls_the_provider(project, write, tmp_path):
    """Cites examples/issue-fix-pr-description-builder-smoke.py (disabled.json keeps the
    counter unchanged)."""
    counter = tmp_path / "provider-count.txt"
    disabled = _issue_fix_config(write, counter, enabled=False, name="disabled.json")
    assert ok(*_recall(project, disabled, PR, "--execute"))["status"] == "disabled"
    assert not counter.exists(), "disabled build must not call provider"


def test_issue_fix_smoke_unattributed_application_is_a_failed_receipt_without_refs():
    """Cites examples/issue-fix-pr-description-builder-smoke.py (unattributed → outcome
    failed) and loopx/capabilities/semantic_preference/cli.py (--preference-ref optional)."""
    receipt = ok(
        "receipt", "--surface", PR, "--application-id", "pr-18-description", "--outcome", "failed"
    )
    assert (receipt["outcome"], receipt["preference_ref_digests"]) == ("failed", [])


# -- loopx/capabilities/semantic_preference/contract.py ------------------------------------------


@pytest.mark.parametrize("outcome", ["verified", "no_write_rationale", "failed"])
def test_contract_maintenance_receipt_outcomes(outcome, operator_client):
    """Cites loopx/capabilities/semantic_preference/contract.py (maintenance_receipt
    outcomes) and cli.py (maintenance-receipt choices)."""
    receipt = ok(
        "maintenance-receipt", "--trigger", "source_truth_changed", "--outcome", outcome,
        "--corpus-id", "project_preferences", "--scope-ref", "provider-owned-scope-reference",
        "--evidence-ref", "project-preference-readback-v2",
    )  # fmt: skip
    assert receipt["schema_version"] == "semantic_preference_maintenance_receipt_v0"
    assert receipt["outcome"] == outcome
    assert "provider-owned-scope-reference" not in json.dumps(receipt)
    api = operator_client.post(
        MAINTENANCE,
        {
            "trigger": "source_truth_changed",
            "outcome": outcome,
            "corpus_ids": ["project_preferences"],
            "scope_refs": ["provider-owned-scope-reference"],
            "evidence_ref": "project-preference-readback-v2",
        },
        format="json",
    )
    assert api.json() == receipt


# -- tests/extensions/test_extension_runtime.py -------------------------------------------------


def test_extension_install_preview_writes_nothing_and_needs_a_probe(tmp_path):
    """Cites tests/extensions/test_extension_runtime.py
    (test_install_disable_upgrade_and_rollback_preserve_verified_binding: preview)."""
    manifest = toml_manifest(
        tmp_path / "v1.toml", entrypoint=extension_provider(tmp_path), version="1.0.0"
    )
    preview = ok("extension", "install", "--manifest", str(manifest))
    assert preview["changed"] is False
    assert preview["doctor"]["status"] == "probe_required"
    assert preview["schema_version"] == "loopx_extension_operation_v0"
    assert ok("extension", "list")["extensions"] == []


def test_extension_lifecycle_install_disable_upgrade_rollback(tmp_path, project, write):
    """Cites tests/extensions/test_extension_runtime.py
    (test_install_disable_upgrade_and_rollback_preserve_verified_binding)."""
    provider = extension_provider(tmp_path)
    v1 = toml_manifest(tmp_path / "v1.toml", entrypoint=provider, version="1.0.0")
    v2 = toml_manifest(tmp_path / "v2.toml", entrypoint=provider, version="2.0.0")
    installed = ok("extension", "install", "--manifest", str(v1), "--execute")
    assert installed["changed"] is True
    assert installed["enabled"] is True
    config = extension_config(write, project)
    assert ok(*_recall(project, config, PR, "--execute"))["provider"]["timeout_seconds"] == 5
    disabled = ok("extension", "disable", "test-semantic-extension", "--execute")
    assert disabled["changed"] is True
    unavailable = ok(*_recall(project, config, PR, "--execute"))
    assert unavailable["failure_kind"] == "extension_binding_unavailable"
    upgraded = ok("extension", "upgrade", "--manifest", str(v2), "--execute")
    assert upgraded["previous_revision"] == installed["revision"]
    assert upgraded["rollback_available"] is True
    rolled_back = ok("extension", "rollback", "test-semantic-extension", "--execute")
    assert rolled_back["revision"] == installed["revision"]
    listed = [
        {
            k: e[k]
            for k in (
                "id",
                "enabled",
                "active_revision",
                "rollback_available",
                "doctor_verified",
                "revision_count",
            )
        }
        for e in ok("extension", "list")["extensions"]
    ]
    assert listed == [
        {
            "id": "test-semantic-extension",
            "enabled": True,
            "active_revision": installed["revision"],
            "rollback_available": True,
            "doctor_verified": True,
            "revision_count": 2,
        }
    ]


def test_extension_failed_upgrade_keeps_the_active_revision(tmp_path):
    """Cites tests/extensions/test_extension_runtime.py
    (test_failed_upgrade_keeps_the_active_revision)."""
    v1 = toml_manifest(
        tmp_path / "v1.toml", entrypoint=extension_provider(tmp_path), version="1.0.0"
    )
    broken = extension_provider(tmp_path, doctor_exit=2)
    v2 = toml_manifest(tmp_path / "v2.toml", entrypoint=broken, version="2.0.0")
    installed = ok("extension", "install", "--manifest", str(v1), "--execute")
    error = failure("extension", "upgrade", "--manifest", str(v2), "--execute")
    assert "doctor is not ready" in error["error"]
    status = ok("extension", "list")["extensions"][0]
    assert status["active_revision"] == installed["revision"]
    assert status["revision_count"] == 1


def test_extension_runtime_permission_must_be_declared(tmp_path):
    """Cites tests/extensions/test_extension_runtime.py
    (test_runtime_permission_must_be_declared_by_manifest)."""
    manifest = toml_manifest(
        tmp_path / "extension.toml",
        entrypoint=extension_provider(tmp_path),
        version="1.0.0",
        permissions=[],
    )
    error = failure("extension", "install", "--manifest", str(manifest))
    assert "requires undeclared permissions" in error["error"]
    assert error["status"] == "invalid_request"


def test_extension_resolves_for_recall_and_doctor_then_follows_disable(tmp_path, project, write):
    """Cites tests/extensions/test_extension_runtime.py
    (test_semantic_preference_resolves_enabled_extension)."""
    manifest = toml_manifest(
        tmp_path / "extension.toml", entrypoint=extension_provider(tmp_path), version="1.0.0"
    )
    ok("extension", "install", "--manifest", str(manifest), "--execute")
    config = extension_config(write, project)
    doctor = ok("doctor", "--project", str(project), "--config", str(config), "--execute")
    assert doctor["status"] == "ready"
    assert doctor["verified"] is True
    result = ok(*_recall(project, config, PR, "--execute"))
    assert result["status"] == "completed"
    assert result["items"][0]["summary"] == "Prefer compact validation notes."
    ok("extension", "disable", "test-semantic-extension", "--execute")
    unavailable = ok(*_recall(project, config, PR, "--execute"))
    assert unavailable["status"] == "provider_unavailable"
    assert unavailable["failure_kind"] == "extension_binding_unavailable"


@pytest.mark.django_db(transaction=True)
def test_extension_cli_install_in_a_subprocess_then_list(tmp_path):
    """Cites tests/extensions/test_extension_runtime.py
    (test_extension_cli_installs_preinstalled_runtime): install, then list, each a real
    process exiting 0 with JSON on stdout."""
    manifest = toml_manifest(
        tmp_path / "extension.toml", entrypoint=extension_provider(tmp_path), version="1.0.0"
    )
    installed = run_manage(
        "semantic_preference", "extension", "install",
        "--manifest", str(manifest), "--execute", "--format", "json",
    )  # fmt: skip
    assert installed.returncode == 0, installed.stdout + installed.stderr
    assert json.loads(installed.stdout)["changed"] is True
    listed = run_manage("semantic_preference", "extension", "list", "--format", "json")
    assert listed.returncode == 0
    assert json.loads(listed.stdout)["extensions"][0]["doctor_verified"] is True


@pytest.mark.django_db(transaction=True)
def test_extension_binding_over_the_api_with_a_registered_config(tmp_path, host_client):
    """Cites tests/extensions/test_extension_runtime.py
    (test_semantic_preference_resolves_enabled_extension), through the API: a registered
    config binds the TOML extension by id; the host's Goal owns it."""
    GoalFactory(goal_id="demo")
    manifest = toml_manifest(
        tmp_path / "extension.toml", entrypoint=extension_provider(tmp_path), version="1.0.0"
    )
    done = run_manage(
        "semantic_preference", "extension", "install", "--manifest", str(manifest), "--execute"
    )
    assert done.returncode == 0, done.stdout + done.stderr
    services.register_config(
        name="ext",
        project="loopx-demo",
        goal_id="demo",
        execute=True,
        config={
            "schema_version": CONFIG_SCHEMA,
            "enabled": True,
            "provider": {
                "id": "openviking_semantic_preference",
                "extension_id": "test-semantic-extension",
            },
            "surfaces": {PR: {"query": "validation preferences", "limit": 3}},
        },
    )
    client = host_client("demo")
    doctor = client.post(DOCTOR, {"config": "ext", "execute": True}, format="json").json()
    assert (doctor["status"], doctor["verified"]) == ("ready", True)
    result = client.post(
        RECALL, {"config": "ext", "surface": PR, "execute": True}, format="json"
    ).json()
    assert result["status"] == "completed"
    assert result["items"][0]["summary"] == "Prefer compact validation notes."
    assert str(tmp_path) not in json.dumps(result)  # the command never leaves the server
