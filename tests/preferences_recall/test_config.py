import copy
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from preferences import services
from preferences.recall.config import load_config_file, parse_context_entries, validate_config
from preferences.recall.errors import SemanticPreferenceError
from tests.preferences_recall.conftest import SURFACE, legacy_config, provider

pytestmark = pytest.mark.django_db

requires_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def _error(exc_info) -> SemanticPreferenceError:
    return exc_info.value


def _git(repo, *args):
    subprocess.run(
        ["git", "-c", "user.email=t@example.com", "-c", "user.name=t", *args],
        cwd=repo,
        check=True,
        capture_output=True,
    )


@pytest.fixture
def repo(tmp_path):
    path = tmp_path / "repo"
    path.mkdir()
    _git(path, "init", "-q")
    return path


# -- git ignore rule ----------------------------------------------------------------------


@requires_git
def test_tracked_config_is_rejected_as_not_ignored(repo):
    config = repo / "semantic.json"
    config.write_text('{"schema_version": "semantic_preference_hook_config_v0"}')
    _git(repo, "add", "semantic.json")
    _git(repo, "commit", "-q", "-m", "track it")
    with pytest.raises(SemanticPreferenceError) as exc:
        load_config_file(config)
    assert _error(exc).code == "config_not_ignored"
    assert str(repo) not in _error(exc).message


@requires_git
def test_tracked_config_stays_rejected_even_when_gitignore_lists_it(repo):
    config = repo / "semantic.json"
    config.write_text('{"schema_version": "semantic_preference_hook_config_v0"}')
    _git(repo, "add", "semantic.json")
    _git(repo, "commit", "-q", "-m", "track it")
    (repo / ".gitignore").write_text("semantic.json\n")
    with pytest.raises(SemanticPreferenceError) as exc:
        load_config_file(config)
    assert _error(exc).code == "config_not_ignored"


@requires_git
def test_untracked_but_unignored_config_in_a_work_tree_is_rejected(repo):
    sub = repo / "nested" / "dir"
    sub.mkdir(parents=True)
    config = sub / "semantic.json"
    config.write_text('{"schema_version": "semantic_preference_hook_config_v0"}')
    with pytest.raises(SemanticPreferenceError) as exc:
        load_config_file(config)
    assert _error(exc).code == "config_not_ignored"


@requires_git
def test_ignored_config_in_a_work_tree_is_accepted(repo):
    (repo / ".gitignore").write_text(".local/\n")
    private = repo / ".local"
    private.mkdir()
    config = private / "semantic.json"
    config.write_text('{"schema_version": "semantic_preference_hook_config_v0"}')
    loaded = load_config_file(config)
    assert loaded.enabled is False
    assert loaded.origin == "file"


@requires_git
def test_symlink_outside_the_repo_to_a_tracked_config_is_rejected(repo, tmp_path):
    config = repo / "semantic.json"
    config.write_text('{"schema_version": "semantic_preference_hook_config_v0"}')
    _git(repo, "add", "semantic.json")
    _git(repo, "commit", "-q", "-m", "track it")
    link = tmp_path / "outside.json"
    link.symlink_to(config)
    with pytest.raises(SemanticPreferenceError) as exc:
        load_config_file(link)
    assert _error(exc).code == "config_not_ignored"


def test_config_outside_any_work_tree_is_accepted(write_json):
    path = write_json("cfg.json", legacy_config(provider("valid")))
    assert load_config_file(path).enabled is True


def test_without_git_a_config_under_a_dot_git_directory_fails_closed(tmp_path, monkeypatch):
    (tmp_path / "proj" / ".git").mkdir(parents=True)
    config = tmp_path / "proj" / "cfg.json"
    config.write_text('{"schema_version": "semantic_preference_hook_config_v0"}')
    monkeypatch.setenv("PATH", str(tmp_path / "no-bin"))
    with pytest.raises(SemanticPreferenceError) as exc:
        load_config_file(config)
    assert _error(exc).code == "config_not_ignored"


def test_missing_config_file_is_config_not_found_without_echoing_the_path(tmp_path):
    missing = tmp_path / "secret-dir" / "nope.json"
    with pytest.raises(SemanticPreferenceError) as exc:
        load_config_file(missing)
    assert _error(exc).code == "config_not_found"
    assert "secret-dir" not in str(_error(exc).envelope())


@pytest.mark.parametrize(
    "content", [b"{not json", b"\xff\xfe", b"[1, 2]", b'{"enabled": NaN}', b"x" * 70_000]
)
def test_unreadable_config_content_is_invalid_config(tmp_path, content):
    path = tmp_path / "cfg.json"
    path.write_bytes(content)
    with pytest.raises(SemanticPreferenceError) as exc:
        load_config_file(path)
    assert _error(exc).code == "config_invalid"


# -- shape -------------------------------------------------------------------------------


def _base():
    return legacy_config(provider("valid"))


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda c: c.update(extra=1), "extra"),
        (lambda c: c["provider"].update(command="rm -rf /"), "provider.command"),
        (lambda c: c["surfaces"][SURFACE].update(weight=2), f"surfaces.{SURFACE}.weight"),
    ],
)
def test_unknown_fields_are_rejected_at_every_level(mutate, field):
    config = _base()
    mutate(config)
    with pytest.raises(SemanticPreferenceError) as exc:
        validate_config(config)
    assert _error(exc).code == "config_invalid"
    assert _error(exc).field == field
    assert "rm -rf" not in str(_error(exc).envelope())


def test_argv_and_extension_id_are_mutually_exclusive():
    config = _base()
    config["provider"]["extension_id"] = "loopx-local"
    with pytest.raises(SemanticPreferenceError) as exc:
        validate_config(config)
    assert (_error(exc).code, _error(exc).field) == ("config_invalid", "provider.argv")


@pytest.mark.parametrize("field", ["timeout_seconds", "probe_argv"])
def test_an_extension_config_cannot_override_manifest_owned_fields(field):
    config = {
        "schema_version": "semantic_preference_hook_config_v0",
        "enabled": True,
        "provider": {
            "extension_id": "loopx-local",
            field: 5 if field == "timeout_seconds" else ["x"],
        },
        "surfaces": {SURFACE: {"query": "q"}},
    }
    with pytest.raises(SemanticPreferenceError) as exc:
        validate_config(config)
    assert _error(exc).field == f"provider.{field}"


def test_args_do_not_combine_with_legacy_argv():
    config = _base()
    config["provider"]["args"] = ["--project", "."]
    with pytest.raises(SemanticPreferenceError) as exc:
        validate_config(config)
    assert _error(exc).field == "provider.args"


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("provider", "timeout_seconds"), 0),
        (("provider", "timeout_seconds"), 121),
        (("provider", "timeout_seconds"), True),
        (("provider", "argv"), []),
        (("provider", "argv"), "semantic-provider --flag"),
        (("surfaces", SURFACE, "limit"), 0),
        (("surfaces", SURFACE, "limit"), 21),
        (("surfaces", SURFACE, "query"), ""),
        (("surfaces", SURFACE, "query"), "q" * 501),
        (("surfaces", SURFACE, "failure_policy"), "fail_sometimes"),
        (("enabled",), "yes"),
        (("schema_version",), "semantic_preference_hook_config_v1"),
    ],
)
def test_out_of_range_values_are_invalid_config(path, value):
    config = _base()
    target = config
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    with pytest.raises(SemanticPreferenceError) as exc:
        validate_config(config)
    assert _error(exc).code == "config_invalid"


def test_defaults_are_limit_5_fail_open_and_timeout_30():
    config = _base()
    del config["provider"]["timeout_seconds"]
    config["surfaces"][SURFACE] = {"query": "q"}
    loaded = validate_config(config)
    surface = loaded.surface(SURFACE)
    assert (surface.limit, surface.failure_policy) == (5, "fail_open")
    assert loaded.provider.timeout_seconds == 30


@pytest.mark.parametrize("surface_id", ["nodot", ".leading", "a..b", "a.b c", "x" * 130 + ".y"])
def test_surface_keys_must_be_module_qualified_ids(surface_id):
    config = _base()
    config["surfaces"] = {surface_id: {"query": "q"}}
    with pytest.raises(SemanticPreferenceError) as exc:
        validate_config(config)
    assert _error(exc).code == "config_invalid"


def test_any_module_can_add_a_surface_by_config_alone(write_json):
    config = _base()
    config["surfaces"] = {
        "content_ops.draft_language": {"query": "draft language", "limit": 3},
        "some_future_module.any_surface": {"query": "anything"},
    }
    path = write_json("cfg.json", config)
    for surface in config["surfaces"]:
        result = services.recall(path, project="p", surface=surface, execute=True)
        assert result["status"] == "completed"
        assert result["items"][0]["summary"].endswith(surface)


def test_unknown_surface_is_a_structured_error(write_json):
    path = write_json("cfg.json", _base())
    with pytest.raises(SemanticPreferenceError) as exc:
        services.recall(path, project="p", surface="content_ops.unknown")
    assert _error(exc).code == "unknown_surface"


# -- disabled ----------------------------------------------------------------------------


def test_disabled_config_returns_disabled_and_never_invokes_the_provider(write_json, tmp_path):
    marker = tmp_path / "calls.txt"
    config = legacy_config(provider("valid", "--marker", str(marker)), enabled=False)
    path = write_json("cfg.json", config)
    result = services.recall(path, project="p", surface=SURFACE, execute=True)
    doctor = services.doctor(path, project="p", execute=True)
    assert result["status"] == "disabled"
    assert result["items"] == []
    assert doctor["status"] == "disabled"
    assert not marker.exists()


def test_the_same_config_enabled_does_invoke_the_provider(write_json, tmp_path):
    marker = tmp_path / "calls.txt"
    path = write_json("cfg.json", legacy_config(provider("valid", "--marker", str(marker))))
    services.recall(path, project="p", surface=SURFACE, execute=True)
    assert marker.read_text() == "called\n"


def test_a_disabled_config_may_omit_provider_and_surfaces():
    loaded = validate_config({"schema_version": "semantic_preference_hook_config_v0"})
    assert (loaded.enabled, loaded.provider, loaded.surfaces) == (False, None, {})


def test_an_enabled_config_needs_a_provider_and_a_surface():
    with pytest.raises(SemanticPreferenceError):
        validate_config({"schema_version": "semantic_preference_hook_config_v0", "enabled": True})
    config = _base()
    config["surfaces"] = {}
    with pytest.raises(SemanticPreferenceError):
        validate_config(config)


# -- preview ---------------------------------------------------------------------------------


def test_preview_resolves_the_provider_without_invoking_it(write_json, tmp_path):
    marker = tmp_path / "calls.txt"
    path = write_json("cfg.json", legacy_config(provider("valid", "--marker", str(marker))))
    result = services.recall(path, project="p", surface=SURFACE)
    assert result["status"] == "preview_ready"
    assert result["provider"] == {
        "source": "argv",
        "provider_id": "test_provider",
        "extension_id": None,
        "timeout_seconds": 10,
        "doctor": False,
    }
    assert not marker.exists()


# -- context -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "entry",
    ["repository", "Repository=x", "_x=1", "-x=1", "k=a\nb", "1k=v", "k" * 65 + "=v"],
)
def test_context_entries_must_be_lower_snake_equals_value(entry):
    with pytest.raises(SemanticPreferenceError) as exc:
        parse_context_entries([entry])
    assert _error(exc).code == "invalid_context"


def test_context_entries_parse_into_a_sorted_mapping_and_the_last_repeat_wins():
    assert parse_context_entries(["repository=owner/repo", "branch_name=a=b"]) == {
        "branch_name": "a=b",
        "repository": "owner/repo",
    }
    # real LoopX 2.1.1: a repeated key keeps its last value, not an error
    assert parse_context_entries(["k=1", "k=2"]) == {"k": "2"}


@pytest.mark.parametrize("entry", ["pr-number=1", "a__b=1", "repository="])
def test_context_takes_what_loopx_takes(entry):
    key, _, value = entry.partition("=")
    assert parse_context_entries([entry]) == {key: value}


def test_context_takes_21_entries_like_loopx_and_stays_bounded():
    entries = [f"k{i}=v" for i in range(21)]
    assert len(parse_context_entries(entries)) == 21
    with pytest.raises(SemanticPreferenceError) as exc:
        parse_context_entries([f"k{i}=v" for i in range(65)])
    assert _error(exc).code == "invalid_context"


def test_context_reaches_the_provider_request(write_json):
    path = write_json("cfg.json", legacy_config(provider("valid", "--echo-request")))
    result = services.recall(
        path, project="p", surface=SURFACE, execute=True, context={"repository": "owner/repo"}
    )
    request = result["items"][0]["summary"]
    assert '"context": {"repository": "owner/repo"}' in request
    assert '"schema_version": "semantic_preference_provider_request_v0"' in request
    assert '"limit": 5' in request


def test_validation_does_not_mutate_the_callers_config():
    config = _base()
    before = copy.deepcopy(config)
    validate_config(config)
    assert config == before


def test_relative_state_file_needs_a_config_file():
    config = {
        "schema_version": "semantic_preference_hook_config_v0",
        "enabled": True,
        "provider": {"extension_state_file": "state.json"},
        "surfaces": {SURFACE: {"query": "q"}},
    }
    with pytest.raises(SemanticPreferenceError) as exc:
        validate_config(config)
    assert _error(exc).field == "provider.extension_state_file"
    assert validate_config(config, origin="file", base_dir=Path(os.getcwd())).provider is not None
