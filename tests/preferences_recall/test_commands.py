import pytest

from tests.helpers import run_cli
from tests.preferences_recall.conftest import SURFACE, legacy_config, provider

pytestmark = pytest.mark.django_db


def _recall(*args, command=("semantic_preference", "recall")):
    return run_cli(*command, *args)


def test_recall_preview_then_execute_from_a_file(write_json, tmp_path):
    marker = tmp_path / "calls.txt"
    path = str(write_json("cfg.json", legacy_config(provider("valid", "--marker", str(marker)))))
    preview = _recall("--project", "p", "--config", path, "--surface", SURFACE)
    assert (preview.code, preview.json["status"]) == (0, "preview_ready")
    assert not marker.exists()
    done = _recall(
        "--project", "p", "--config", path, "--surface", SURFACE,
        "--context", "repository=owner/repo", "--execute",
    )  # fmt: skip
    assert done.json["status"] == "completed"
    assert marker.exists()


def test_the_recall_shortcut_takes_the_same_arguments(write_json):
    path = str(write_json("cfg.json", legacy_config(provider("valid"))))
    args = ("--project", "p", "--config", path, "--surface", SURFACE, "--execute")
    assert _recall(*args).json == _recall(*args, command=("recall",)).json


def test_a_registered_config_name_works_on_the_command_line(bind):
    bind("mine", provider("valid"), project="p", goal_id=None)
    result = _recall("--project", "p", "--config", "mine", "--surface", SURFACE, "--execute")
    assert result.json["status"] == "completed"


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (("--context", "Repository=x"), "invalid_context"),
        (("--context", "novalue"), "invalid_context"),
        (("--surface", "content_ops.nope"), "unknown_surface"),
    ],
)
def test_bad_arguments_exit_2_with_one_structured_error(write_json, args, code):
    path = str(write_json("cfg.json", legacy_config(provider("valid"))))
    base = ["--project", "p", "--config", path, "--surface", SURFACE]
    if args[0] == "--surface":
        base = base[:-2]
    result = _recall(*base, *args, "--execute")
    assert result.code == 2
    assert result.json["schema_version"] == "semantic_preference_error_v0"
    assert result.json["code"] == code
    assert "Traceback" not in result.stdout + result.stderr


def test_missing_config_and_missing_flags_are_structured_errors(tmp_path):
    missing = _recall("--project", "p", "--config", str(tmp_path / "x.json"), "--surface", SURFACE)
    assert (missing.code, missing.json["code"]) == (2, "config_not_found")
    assert str(tmp_path) not in missing.stdout
    no_surface = _recall("--project", "p", "--config", "x")
    assert (no_surface.code, no_surface.json["code"]) == (2, "invalid_argument")


def test_invalid_config_errors_name_the_field_not_the_value(write_json):
    config = legacy_config(provider("valid"))
    config["provider"]["extension_id"] = "x"
    path = str(write_json("cfg.json", config))
    result = _recall("--project", "p", "--config", path, "--surface", SURFACE)
    assert result.code == 2
    assert result.json["field"] == "provider.argv"
    assert "valid.py" not in result.stdout


def test_text_format_renders_items_and_guidance(write_json):
    path = str(write_json("cfg.json", legacy_config(provider("valid"))))
    result = _recall(
        "--project", "p", "--config", path, "--surface", SURFACE, "--execute", "--format", "text"
    )
    assert result.code == 0
    assert "PREFERENCE_REF" in result.stdout
    assert "maintenance guidance" in result.stdout
    assert "project_preferences" in result.stdout


def test_doctor_command(write_json, tmp_path):
    marker = tmp_path / "probe.txt"
    config = legacy_config(provider("valid"), probe_argv=provider("doctor_ok", str(marker)))
    path = str(write_json("cfg.json", config))
    preview = run_cli("semantic_preference", "doctor", "--project", "p", "--config", path)
    assert (preview.json["status"], preview.json["probe_configured"]) == ("probe_required", True)
    done = run_cli("semantic_preference", "doctor", "--project", "p", "--config", path, "--execute")
    assert (done.json["status"], done.json["verified"]) == ("ready", True)
    assert done.json["config"] == {"valid": True, "enabled": True, "surfaces": [SURFACE]}
    assert marker.exists()


def test_every_subcommand_has_help():
    for argv in (
        ("semantic_preference", "recall", "--help"),
        ("semantic_preference", "doctor", "--help"),
        ("semantic_preference", "receipt", "--help"),
        ("semantic_preference", "maintenance-receipt", "--help"),
        ("semantic_preference", "extension", "install", "--help"),
        ("recall", "--help"),
        ("local_preference_provider", "--help"),
    ):
        result = run_cli(*argv)
        assert result.code == 0, argv
        assert "usage:" in result.stdout
