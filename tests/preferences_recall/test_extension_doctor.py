"""``semantic_preference extension doctor``: LoopX's extension doctor, read-only."""

import pytest

from preferences import services
from preferences.documents import extensions as extension_documents
from preferences.models import ProviderExtension
from preferences.recall.errors import SemanticPreferenceError
from tests.helpers import run_cli
from tests.preferences_recall.conftest import manifest, provider

pytestmark = pytest.mark.django_db


def test_doctor_of_one_extension_probes_only_with_execute(install, tmp_path):
    marker = tmp_path / "ran"
    install(manifest("alpha", provider("valid"), doctor=provider("doctor_ok", str(marker))))
    marker.unlink()  # the install ran the manifest doctor once
    preview = extension_documents.doctor_run(services.doctor_extension(extension_id="alpha"))
    assert (preview["schema_version"], preview["status"], preview["verified"]) == (
        "loopx_extension_doctor_v0",
        "probe_required",
        False,
    )
    assert not marker.exists()
    result = extension_documents.doctor_run(
        services.doctor_extension(extension_id="alpha", execute=True)
    )
    assert (result["status"], result["verified"], result["failure_kind"]) == ("ready", True, None)
    assert result["entrypoint_identity"] == result["probed_entrypoint_identity"]
    assert marker.exists()


def test_doctor_of_a_disabled_extension_probes_nothing(install, tmp_path):
    marker = tmp_path / "ran"
    install(
        manifest("alpha", provider("valid"), doctor=provider("doctor_ok", str(marker))),
        active=False,
    )
    marker.unlink()
    result = extension_documents.doctor_run(
        services.doctor_extension(extension_id="alpha", execute=True)
    )
    assert (result["status"], result["available"], result["verified"]) == (
        "disabled",
        False,
        False,
    )
    assert "version" not in result  # as LoopX: nothing was probed
    assert not marker.exists()


def test_doctor_all_enabled_is_ready_only_when_every_doctor_verified(install, tmp_path):
    flag = tmp_path / "fail"
    install(manifest("alpha", provider("valid"), doctor=provider("doctor_ok")))
    install(
        manifest("beta", provider("valid"), doctor=provider("doctor_ok", "--fail-if", str(flag)))
    )
    install(manifest("gamma", provider("valid"), doctor=provider("doctor_ok")), active=False)
    preview = extension_documents.doctor_run(services.doctor_extension(all_enabled=True))
    assert (preview["schema_version"], preview["status"], preview["enabled_count"]) == (
        "loopx_extension_doctor_batch_v0",
        "probe_required",
        2,
    )
    ready = extension_documents.doctor_run(
        services.doctor_extension(all_enabled=True, execute=True)
    )
    assert ready["status"] == "ready"
    flag.write_text("x")
    blocked = extension_documents.doctor_run(
        services.doctor_extension(all_enabled=True, execute=True)
    )
    assert (blocked["status"], blocked["ok"]) == ("blocked", False)
    assert (blocked["verified_count"], blocked["blocked_count"]) == (1, 1)
    assert [d["extension_id"] for d in blocked["extensions"]] == ["alpha", "beta"]
    assert blocked["local_state_write_performed"] is False


def test_doctor_never_changes_the_installed_state(install):
    install(manifest("alpha", provider("valid"), doctor=provider("doctor_ok")))
    before = list(ProviderExtension.objects.values())
    services.doctor_extension(all_enabled=True, execute=True)
    services.doctor_extension(extension_id="alpha", execute=True)
    assert list(ProviderExtension.objects.values()) == before


@pytest.mark.parametrize(
    ("options", "code"),
    [
        ({"extension_id": "missing"}, "extension_not_found"),
        ({}, "invalid_argument"),
        ({"extension_id": "alpha", "all_enabled": True}, "invalid_argument"),
        ({"extension_id": "Bad Id"}, "invalid_argument"),
    ],
)
def test_doctor_refuses_a_missing_or_ambiguous_target(install, options, code):
    install(manifest("alpha", provider("valid")))
    with pytest.raises(SemanticPreferenceError) as exc:
        services.doctor_extension(**options)
    assert exc.value.code == code
    assert exc.value.envelope()["schema_version"] == "loopx_extension_error_v0"


def test_cli_extension_doctor_prints_loopx_documents(install):
    install(manifest("alpha", provider("valid"), doctor=provider("doctor_ok")))
    ok = run_cli("semantic_preference", "extension", "doctor", "alpha", "--execute")
    assert (ok.code, ok.json["status"]) == (0, "ready")
    missing = run_cli("semantic_preference", "extension", "doctor", "nope")
    assert (missing.code, missing.json["status"]) == (2, "invalid_request")
