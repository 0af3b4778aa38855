import json
import os
from pathlib import Path

import pytest
from django.db import IntegrityError
from django.utils import timezone

from loopx_site.core.access import SHELL
from preferences import services
from preferences.documents import extensions as extension_documents
from preferences.models import ProviderExtension
from preferences.recall.errors import SemanticPreferenceError
from tests.helpers import run_cli
from tests.preferences_recall.conftest import (
    PROVIDERS,
    SURFACE,
    extension_config,
    manifest,
    provider,
)

pytestmark = pytest.mark.django_db

SHIPPED = Path(__file__).resolve().parents[2] / "preferences" / "extensions" / "loopx-local.json"


# -- install / activate / deactivate / list --------------------------------------------------


def test_install_previews_by_default_and_writes_nothing(write_json):
    path = write_json("m.json", manifest("alpha", provider("valid")))
    result = extension_documents.operation(services.install_extension(manifest_path=path))
    assert (result["status"], result["operation"], result["dry_run"]) == (
        "preview",
        "install",
        True,
    )
    assert (result["changed"], result["would_change"]) == (False, True)
    assert ProviderExtension.objects.count() == 0


def test_install_execute_installs_enabled_and_a_reinstall_is_an_error(write_json):
    path = write_json("m.json", manifest("alpha", provider("valid")))
    first = extension_documents.operation(
        services.install_extension(manifest_path=path, execute=True)
    )
    assert (first["status"], first["changed"], first["enabled"]) == ("applied", True, True)
    # real LoopX 2.1.1: installing an installed id again, same manifest or not, is refused
    for execute in (False, True):
        with pytest.raises(SemanticPreferenceError) as exc:
            services.install_extension(manifest_path=path, execute=execute)
        assert exc.value.code == "extension_installed"
        assert exc.value.envelope()["schema_version"] == "loopx_extension_error_v0"
    with pytest.raises(SemanticPreferenceError) as exc:
        services.upgrade_extension(manifest_path=path, execute=True)
    assert exc.value.message == "This revision is already active."
    row = ProviderExtension.objects.get()
    assert row.active is True
    assert row.entrypoint_argv == provider("valid")


def test_a_changed_manifest_needs_upgrade_which_keeps_a_rollback(install, write_json):
    first = install(manifest("alpha", provider("valid"), timeout=10))
    path = write_json("m2.json", manifest("alpha", provider("valid"), timeout=20))
    with pytest.raises(SemanticPreferenceError) as exc:
        services.install_extension(manifest_path=path, execute=True)
    assert exc.value.code == "extension_installed"
    preview = extension_documents.operation(services.upgrade_extension(manifest_path=path))
    assert (preview["status"], preview["would_change"]) == ("preview", True)
    assert ProviderExtension.objects.get().timeout_seconds == 10
    result = extension_documents.operation(
        services.upgrade_extension(manifest_path=path, execute=True)
    )
    assert (result["status"], result["previous_revision"]) == ("applied", first["revision"])
    assert result["rollback_available"] is True
    row = ProviderExtension.objects.get()
    assert (row.timeout_seconds, row.active) == (20, True)
    back = extension_documents.operation(
        services.rollback_extension(extension_id="alpha", execute=True)
    )
    assert back["revision"] == first["revision"]
    assert ProviderExtension.objects.get().timeout_seconds == 10


def test_upgrade_of_a_missing_extension_is_not_found(write_json):
    path = write_json("m.json", manifest("alpha", provider("valid")))
    with pytest.raises(SemanticPreferenceError) as exc:
        services.upgrade_extension(manifest_path=path, execute=True)
    assert exc.value.code == "extension_not_found"


def test_enable_and_disable_preview_then_apply_idempotently(install):
    install(manifest("alpha", provider("valid")), active=False)
    preview = extension_documents.operation(services.activate_extension(extension_id="alpha"))
    assert (preview["status"], preview["would_change"]) == ("preview", True)
    assert ProviderExtension.objects.get().active is False
    assert (
        extension_documents.operation(
            services.activate_extension(extension_id="alpha", execute=True)
        )["changed"]
        is True
    )
    assert (
        extension_documents.operation(
            services.activate_extension(extension_id="alpha", execute=True)
        )["changed"]
        is False
    )
    assert (
        extension_documents.operation(
            services.deactivate_extension(extension_id="alpha", operator=SHELL, execute=True)
        )["changed"]
        is True
    )
    again = extension_documents.operation(
        services.deactivate_extension(extension_id="alpha", operator=SHELL, execute=True)
    )
    assert again["status"] == "unchanged"
    assert ProviderExtension.objects.get().active is False


def test_activating_an_unknown_extension_is_not_found():
    with pytest.raises(SemanticPreferenceError) as exc:
        services.activate_extension(extension_id="nope")
    assert (exc.value.code, exc.value.http_status) == ("extension_not_found", 404)


def test_extension_payloads_never_show_the_command(install):
    install(manifest("alpha", provider("valid"), doctor=provider("doctor_ok")))
    listing = extension_documents.listing(services.list_extensions())
    text = json.dumps(listing)
    assert listing["extensions"][0]["extension_id"] == "alpha"
    assert listing["extensions"][0]["doctor"] is True
    assert str(PROVIDERS) not in text
    assert "valid.py" not in text


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda m: m.update(capability="post-writeback-hook"), "capability"),
        (lambda m: m.update(protocol="other_v1"), "protocol"),
        (lambda m: m.update(permission="root"), "permission"),
        (lambda m: m.update(timeout_seconds=0), "timeout_seconds"),
        (lambda m: m.update(timeout_seconds=121), "timeout_seconds"),
        (lambda m: m.update(entrypoint="provider --serve"), "entrypoint"),
        (lambda m: m.update(entrypoint=[]), "entrypoint"),
        (lambda m: m.update(extension_id="has space"), "extension_id"),
        (lambda m: m.update(shell=True), "shell"),
        (lambda m: m.pop("entrypoint"), "entrypoint"),
        (lambda m: m.update(permission="project_database_read"), "permission"),
    ],
)
def test_invalid_manifests_are_rejected_with_nothing_installed(write_json, mutate, field):
    document = manifest("alpha", provider("valid"))
    mutate(document)
    path = write_json("m.json", document)
    with pytest.raises(SemanticPreferenceError) as exc:
        services.install_extension(manifest_path=path, execute=True)
    assert (exc.value.code, exc.value.field) == ("invalid_manifest", field)
    assert ProviderExtension.objects.count() == 0


def test_relative_manifest_arguments_resolve_against_the_manifest_directory(tmp_path):
    (tmp_path / "ext").mkdir()
    (tmp_path / "ext" / "provider.py").write_text("print('hi')")
    document = manifest("alpha", ["python3", "./provider.py"])
    (tmp_path / "ext" / "manifest.json").write_text(json.dumps(document))
    services.install_extension(manifest_path=tmp_path / "ext" / "manifest.json", execute=True)
    argv = ProviderExtension.objects.get().entrypoint_argv
    assert os.path.isabs(argv[0])
    assert os.path.basename(argv[0]).startswith("python3")
    assert argv[1] == str((tmp_path / "ext" / "provider.py").resolve())


def test_the_shipped_loopx_local_manifest_is_valid_and_project_owned():
    result = extension_documents.operation(services.install_extension(manifest_path=SHIPPED))
    assert result["extension"]["extension_id"] == "loopx-local"
    assert result["extension"]["permission"] == "project_database_read"
    document = json.loads(SHIPPED.read_text())
    assert document["entrypoint"][:2] == ["python", "manage.py"]


def test_constraints_reject_duplicate_ids_and_out_of_range_timeouts():
    now = timezone.now()
    fields = {
        "capability": "semantic-preference",
        "protocol": "semantic_preference_provider_v0",
        "entrypoint_argv": ["x"],
        "permission": "provider_private",
        "manifest_digest": "sha256:0",
        "installed_at": now,
        "updated_at": now,
    }
    ProviderExtension.objects.create(extension_id="a", timeout_seconds=5, **fields)
    with pytest.raises(IntegrityError):
        ProviderExtension.objects.create(extension_id="a", timeout_seconds=5, **fields)


def test_timeout_range_check_constraint():
    now = timezone.now()
    with pytest.raises(IntegrityError):
        ProviderExtension.objects.create(
            extension_id="b",
            capability="semantic-preference",
            protocol="semantic_preference_provider_v0",
            entrypoint_argv=["x"],
            permission="provider_private",
            manifest_digest="sha256:0",
            installed_at=now,
            updated_at=now,
            timeout_seconds=500,
        )


def test_identity_present_check_constraint():
    now = timezone.now()
    with pytest.raises(IntegrityError):
        ProviderExtension.objects.create(
            extension_id="c",
            capability="",
            protocol="semantic_preference_provider_v0",
            entrypoint_argv=["x"],
            permission="provider_private",
            manifest_digest="sha256:0",
            installed_at=now,
            updated_at=now,
            timeout_seconds=5,
        )


# -- selection ---------------------------------------------------------------------------------


def test_the_unique_active_implementation_is_selected_and_args_are_appended(install):
    install(manifest("alpha", provider("valid")))
    install(manifest("beta", provider("garbage")), active=False)
    result = services.recall(
        extension_config(args=["--items", "2"]), project="p", surface=SURFACE, execute=True
    )
    assert result["status"] == "completed"
    assert result["provider"]["extension_id"] == "alpha"
    assert len(result["items"]) == 2


def test_no_active_implementation_is_provider_unavailable_under_fail_open(install):
    install(manifest("alpha", provider("valid")), active=False)
    result = services.recall(extension_config(), project="p", surface=SURFACE, execute=True)
    assert result["status"] == "provider_unavailable"
    assert result["failure_kind"] == "extension_binding_unavailable"


def test_no_active_implementation_fails_a_fail_closed_surface(install):
    with pytest.raises(SemanticPreferenceError) as exc:
        services.recall(
            extension_config(policy="fail_closed"), project="p", surface=SURFACE, execute=True
        )
    assert exc.value.code == "provider_failed"
    assert exc.value.details["failure_kind"] == "extension_binding_unavailable"


def test_several_active_implementations_are_ambiguous(install):
    install(manifest("alpha", provider("valid")))
    install(manifest("beta", provider("valid")))
    with pytest.raises(SemanticPreferenceError) as exc:
        services.recall(extension_config(), project="p", surface=SURFACE)
    assert exc.value.code == "provider_ambiguous"
    assert exc.value.details == {"extension_ids": ["alpha", "beta"]}


def test_extension_id_disambiguates(install):
    install(manifest("alpha", provider("valid")))
    install(manifest("beta", provider("valid", "--items", "1")))
    result = services.recall(
        extension_config(extension_id="beta"), project="p", surface=SURFACE, execute=True
    )
    assert result["provider"]["extension_id"] == "beta"
    assert len(result["items"]) == 1


def test_a_deactivated_extension_follows_the_surface_policy(install):
    install(manifest("alpha", provider("valid")))
    services.deactivate_extension(extension_id="alpha", operator=SHELL, execute=True)
    open_result = services.recall(
        extension_config(extension_id="alpha"), project="p", surface=SURFACE, execute=True
    )
    assert open_result["failure_kind"] == "extension_binding_unavailable"
    with pytest.raises(SemanticPreferenceError) as exc:
        services.recall(
            extension_config(extension_id="alpha", policy="fail_closed"),
            project="p",
            surface=SURFACE,
            execute=True,
        )
    assert exc.value.details["failure_kind"] == "extension_binding_unavailable"


def test_the_manifest_timeout_applies_to_extension_providers(install):
    install(manifest("alpha", provider("sleeper"), timeout=1))
    result = services.recall(extension_config(), project="p", surface=SURFACE, execute=True)
    assert result["failure_kind"] == "timed_out"
    assert result["provider"]["timeout_seconds"] == 1


def test_extension_state_file_overrides_runtime_state(write_json, install):
    install(manifest("alpha", provider("garbage")))
    state = write_json(
        "state.json",
        {
            "schema_version": "semantic_preference_extension_state_v0",
            "extensions": [
                {**manifest("gamma", provider("valid", "--items", "1")), "active": True}
            ],
        },
    )
    config = extension_config(extension_state_file=str(state))
    result = services.recall(config, project="p", surface=SURFACE, execute=True)
    assert result["provider"]["extension_id"] == "gamma"
    assert len(result["items"]) == 1


def test_a_missing_state_file_is_an_unavailable_binding(tmp_path):
    config = extension_config(extension_state_file=str(tmp_path / "none.json"))
    result = services.recall(config, project="p", surface=SURFACE, execute=True)
    assert result["failure_kind"] == "extension_binding_unavailable"


def test_a_malformed_state_file_is_invalid_config(write_json):
    state = write_json("state.json", {"schema_version": "nope", "extensions": []})
    with pytest.raises(SemanticPreferenceError) as exc:
        services.recall(
            extension_config(extension_state_file=str(state)), project="p", surface=SURFACE
        )
    assert exc.value.code == "config_invalid"


# -- doctor ----------------------------------------------------------------------------------


def test_doctor_runs_the_manifest_doctor_only_with_execute(install, tmp_path):
    marker = tmp_path / "probe.txt"
    install(manifest("alpha", provider("valid"), doctor=provider("doctor_ok", str(marker))))
    marker.unlink()  # the install ran the manifest doctor once
    preview = services.doctor(extension_config(), project="p")
    assert (preview["status"], preview["probe_configured"]) == ("probe_required", True)
    assert not marker.exists()
    result = services.doctor(extension_config(), project="p", execute=True)
    assert (result["status"], result["verified"], result["available"]) == ("ready", True, True)
    assert result["automatic_setup_performed"] is False
    assert marker.read_text() == "probed\n"


def test_an_install_whose_doctor_fails_is_refused_without_its_stderr(write_json):
    path = write_json(
        "m.json", manifest("alpha", provider("valid"), doctor=provider("doctor_fail"))
    )
    with pytest.raises(SemanticPreferenceError) as exc:
        services.install_extension(manifest_path=path, execute=True)
    assert exc.value.code == "extension_doctor_failed"
    assert "PROBE-SECRET-TOKEN" not in json.dumps(exc.value.envelope())
    assert ProviderExtension.objects.count() == 0


def test_doctor_reports_an_unhealthy_probe_without_its_stderr(install, tmp_path):
    flag = tmp_path / "fail"
    install(
        manifest("alpha", provider("valid"), doctor=provider("doctor_ok", "--fail-if", str(flag)))
    )
    flag.write_text("x")
    result = services.doctor(extension_config(), project="p", execute=True)
    assert (result["status"], result["failure_kind"]) == (
        "provider_unavailable",
        "probe_nonzero_exit",
    )
    assert result["verified"] is False


def test_doctor_reports_an_unavailable_binding_with_setup_hints():
    config = extension_config(setup_hints={"install": "Install the provider extension first."})
    result = services.doctor(config, project="p", execute=True)
    assert result["status"] == "provider_unavailable"
    assert result["failure_kind"] == "extension_binding_unavailable"
    assert result["setup_hints"] == {"install": "Install the provider extension first."}


def test_doctor_without_a_probe_is_ready_but_unverified(install):
    install(manifest("alpha", provider("valid")))
    result = services.doctor(extension_config(), project="p", execute=True)
    assert (result["status"], result["verified"], result["probe_configured"]) == (
        "ready",
        False,
        False,
    )


# -- commands ----------------------------------------------------------------------------


def test_extension_commands_install_activate_list_deactivate(write_json):
    path = write_json("m.json", manifest("alpha", provider("valid")))
    preview = run_cli("semantic_preference", "extension", "install", "--manifest", str(path))
    assert (preview.code, preview.json["status"]) == (0, "preview")
    installed = run_cli(
        "semantic_preference", "extension", "install", "--manifest", str(path), "--execute"
    )
    assert (installed.json["status"], installed.json["enabled"]) == ("applied", True)
    off = run_cli("semantic_preference", "extension", "disable", "alpha", "--execute")
    assert (off.json["operation"], off.json["enabled"]) == ("disable", False)
    on = run_cli("semantic_preference", "extension", "activate", "alpha", "--execute")
    assert (on.json["operation"], on.json["enabled"], on.json["changed"]) == (
        "enable",
        True,
        True,
    )
    listing = run_cli("semantic_preference", "extension", "list")
    assert listing.json["schema_version"] == "loopx_extension_state_v0"
    assert [e["id"] for e in listing.json["extensions"]] == ["alpha"]
    assert listing.json["extensions"][0]["enabled"] is True
    text = run_cli("semantic_preference", "extension", "list", "--format", "text")
    assert "alpha" in text.stdout
    assert "EXTENSION_ID" in text.stdout
    gone = run_cli("semantic_preference", "extension", "deactivate", "alpha", "--execute")
    assert gone.json["status"] == "applied"


def test_extension_install_errors_are_structured_and_do_not_echo_the_path(tmp_path):
    missing = tmp_path / "private-dir" / "m.json"
    result = run_cli(
        "semantic_preference", "extension", "install", "--manifest", str(missing), "--execute"
    )
    assert result.code == 2
    assert result.json["schema_version"] == "loopx_extension_error_v0"
    assert "private-dir" not in result.stdout
    unknown = run_cli("semantic_preference", "extension", "activate", "nope", "--execute")
    assert (unknown.code, unknown.json["code"]) == (2, "extension_not_found")


def _loopx_identity(program: str) -> str:
    """LoopX 2.1.1's ``readiness._file_identity`` digest, computed independently."""
    import hashlib

    real = os.path.realpath(program)
    with open(real, "rb") as handle:
        content = hashlib.sha256(handle.read()).hexdigest()
    identity = {
        "content_sha256": content,
        "executable": True,
        "kind": "file_artifact",
        "schema_version": "loopx_runtime_entrypoint_identity_v1",
        "size": os.stat(real).st_size,
    }
    serialized = json.dumps(identity, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(serialized.encode())


def test_extension_doctor_and_operations_carry_loopx_fields(write_json):
    import sys

    path = write_json("m.json", manifest("alpha", provider("valid"), doctor=provider("doctor_ok")))
    preview = extension_documents.operation(services.install_extension(manifest_path=path))
    expected = _loopx_identity(sys.executable).hexdigest()
    doctor = preview["doctor"]
    assert list(doctor)[:4] == ["ok", "schema_version", "extension_id", "version"]
    assert (doctor["ok"], doctor["version"], doctor["status"]) == (True, "1.0.0", "probe_required")
    assert doctor["probed_entrypoint_identity"] == expected
    assert doctor["entrypoint_identity"] is None  # only a verified probe admits it
    applied = extension_documents.operation(
        services.install_extension(manifest_path=path, execute=True)
    )
    assert applied["doctor"]["verified"] is True
    assert applied["doctor"]["entrypoint_identity"] == expected
    assert applied["active_revision"] == applied["revision"]


def test_doctor_of_a_config_bound_to_a_disabled_or_uninstalled_extension_is_loopx_s(install):
    # real LoopX 2.1.1: bound to a disabled extension → doctor `disabled`; to one that is
    # not installed → exit 2, `extension `<id>` is not installed`
    with pytest.raises(SemanticPreferenceError) as exc:
        services.doctor(extension_config(extension_id="alpha"), project="p")
    assert (exc.value.code, exc.value.wire_status) == ("extension_not_found", "invalid_request")
    assert exc.value.message == "extension `alpha` is not installed"
    install(manifest("alpha", provider("valid")))
    services.deactivate_extension(extension_id="alpha", operator=SHELL, execute=True)
    result = services.doctor(extension_config(extension_id="alpha"), project="p", execute=True)
    assert (result["status"], result["failure_kind"]) == ("disabled", None)
    recalled = services.recall(
        extension_config(extension_id="alpha"), project="p", surface=SURFACE, execute=True
    )
    assert recalled["status"] == "provider_unavailable"  # recall keeps the failure policy
