"""Provider failures with real subprocess providers: bounded kinds, both policies, and
nothing of the provider's command, stderr or output in any result or error."""

import json
import os
import sys
import time
from pathlib import Path

import pytest

from loopx_site.core import sandbox as runner
from preferences import services
from preferences.recall.errors import SemanticPreferenceError
from tests.helpers import run_cli
from tests.preferences_recall.conftest import PROVIDERS, SURFACE, legacy_config, provider

pytestmark = pytest.mark.django_db

FORBIDDEN = [
    "hunter2",
    "AKIA-STDERR-SECRET",
    "SECRET-GARBAGE-TOKEN",
    "PROBE-SECRET-TOKEN",
    str(PROVIDERS),
    "/tmp/",
    "python",
    "Traceback",
    "AAAAAAAAAAAAAAAA",
    "BBBBBBBBBBBBBBBB",
]

CASES = [
    ("sleeper", provider("sleeper"), "timed_out"),
    ("garbage", provider("garbage"), "invalid_json"),
    ("nonzero", provider("nonzero_secret"), "nonzero_exit"),
    ("huge", provider("huge"), "response_too_large"),
    ("missing", ["/nonexistent/bin/semantic-preference-provider"], "execution_failed"),
    ("missing_on_path", ["semantic-preference-provider-not-installed"], "execution_failed"),
    ("item_too_large", provider("item_too_large"), "item_too_large"),
    ("invalid_inventory", provider("invalid_inventory"), "invalid_corpus_inventory"),
    ("invalid_response", provider("invalid_response"), "invalid_response"),
]


def assert_private(text: str) -> None:
    for needle in FORBIDDEN:
        assert needle not in text, needle


@pytest.mark.parametrize(("name", "argv", "kind"), CASES, ids=[c[0] for c in CASES])
def test_fail_open_degrades_to_provider_unavailable_with_the_bounded_kind(
    write_json, name, argv, kind
):
    path = write_json("cfg.json", legacy_config(argv, policy="fail_open", timeout=1))
    result = services.recall(path, project="p", surface=SURFACE, execute=True)
    assert result["status"] == "provider_unavailable"
    assert result["items"] == []
    assert result["failure_kind"] == kind
    assert "maintenance_guidance" not in result
    assert_private(json.dumps(result))


@pytest.mark.parametrize(("name", "argv", "kind"), CASES, ids=[c[0] for c in CASES])
def test_fail_closed_raises_provider_failed_carrying_the_kind(write_json, name, argv, kind):
    path = write_json("cfg.json", legacy_config(argv, policy="fail_closed", timeout=1))
    with pytest.raises(SemanticPreferenceError) as exc:
        services.recall(path, project="p", surface=SURFACE, execute=True)
    envelope = exc.value.envelope()
    assert envelope["schema_version"] == "semantic_preference_error_v0"
    assert envelope["code"] == "provider_failed"
    assert envelope["details"] == {"surface": SURFACE, "failure_kind": kind}
    assert exc.value.http_status == 503
    assert_private(json.dumps(envelope))


@pytest.mark.parametrize(
    ("name", "argv", "kind"),
    [CASES[1], CASES[2], CASES[4]],
    ids=["garbage", "nonzero", "missing"],
)
def test_cli_fail_closed_exits_2_with_one_structured_error_and_no_stderr(
    write_json, name, argv, kind
):
    path = write_json("cfg.json", legacy_config(argv, policy="fail_closed", timeout=2))
    result = run_cli(
        "semantic_preference", "recall", "--project", "p", "--config", str(path),
        "--surface", SURFACE, "--execute",
    )  # fmt: skip
    assert result.code == 2
    assert result.json["code"] == "provider_failed"
    assert result.json["details"]["failure_kind"] == kind
    assert_private(result.stdout)
    assert_private(result.stderr)
    assert str(path) not in result.stdout


def test_cli_fail_open_exits_0_with_provider_unavailable(write_json):
    path = write_json("cfg.json", legacy_config(provider("nonzero_secret")))
    result = run_cli(
        "recall", "--project", "p", "--config", str(path), "--surface", SURFACE, "--execute"
    )
    assert result.code == 0
    assert result.json["status"] == "provider_unavailable"
    assert result.json["failure_kind"] == "nonzero_exit"
    assert_private(result.stdout + result.stderr)


def test_items_beyond_the_limit_are_truncated(write_json):
    path = write_json("cfg.json", legacy_config(provider("valid", "--items", "8"), limit=3))
    result = services.recall(path, project="p", surface=SURFACE, execute=True)
    assert result["status"] == "completed"
    assert [i["preference_ref"] for i in result["items"]] == ["pref-0", "pref-1", "pref-2"]
    assert result["truncated"] is True


def test_items_within_the_limit_are_not_truncated(write_json):
    path = write_json("cfg.json", legacy_config(provider("valid", "--items", "2"), limit=3))
    result = services.recall(path, project="p", surface=SURFACE, execute=True)
    assert len(result["items"]) == 2
    assert result["truncated"] is False


# -- the runner itself ---------------------------------------------------------------------


def _alive(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _wait_dead(pid: int, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not _alive(pid):
            return True
        time.sleep(0.05)
    return False


def _read_pid(pidfile: Path) -> int:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if pidfile.exists() and pidfile.read_text().strip():
            return int(pidfile.read_text())
        time.sleep(0.05)
    raise AssertionError("the provider never wrote its child's pid")


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs /proc to observe processes")
def test_timeout_kills_the_whole_process_group_including_spawned_children(tmp_path):
    pidfile = tmp_path / "child.pid"
    result = runner.run(provider("spawner", str(pidfile)), request=b"{}\n", timeout_seconds=2)
    assert result.failure_kind == "timed_out"
    child = _read_pid(pidfile)
    assert _wait_dead(child), "the provider's child outlived the timeout"


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs /proc to observe processes")
def test_a_provider_that_exits_cleanly_leaves_no_child_behind(tmp_path):
    pidfile = tmp_path / "child.pid"
    result = runner.run(provider("orphan_exit", str(pidfile)), request=b"{}\n", timeout_seconds=20)
    assert result.failure_kind is None
    assert _wait_dead(_read_pid(pidfile))


def test_stdout_is_capped_at_256000_bytes():
    script = "import sys; sys.stdout.write('x' * {n})"
    at_cap = runner.run(
        ["python3", "-c", script.format(n=256_000)], request=b"", timeout_seconds=20
    )
    over = runner.run(["python3", "-c", script.format(n=256_001)], request=b"", timeout_seconds=20)
    assert at_cap.failure_kind is None
    assert len(at_cap.stdout) == 256_000
    assert over.failure_kind == "response_too_large"
    assert over.stdout == b""


def test_the_provider_gets_a_minimal_environment_without_inherited_secrets(write_json, monkeypatch):
    monkeypatch.setenv("LOOPX_TEST_SECRET_TOKEN", "do-not-leak")
    monkeypatch.setenv("DATABASE_URL", "postgres://user:pw@db/secret")
    path = write_json("cfg.json", legacy_config(provider("valid", "--echo-env")))
    result = services.recall(path, project="p", surface=SURFACE, execute=True)
    names = set(result["items"][0]["summary"].split(","))
    assert "LOOPX_TEST_SECRET_TOKEN" not in names
    assert "DATABASE_URL" not in names
    assert "DJANGO_SETTINGS_MODULE" not in names
    assert {"PATH", "LANG"} <= names


def test_a_provider_that_ignores_a_large_stdin_request_still_times_out_cleanly():
    result = runner.run(provider("sleeper"), request=b"x" * (1024 * 1024), timeout_seconds=1)
    assert result.failure_kind == "timed_out"


def test_the_request_is_exactly_the_five_key_request_on_stdin(write_json):
    path = write_json("cfg.json", legacy_config(provider("valid", "--echo-request")))
    preview = services.recall(path, project="loopx-demo", surface=SURFACE, context={"b_key": "2"})
    result = services.recall(
        path, project="loopx-demo", surface=SURFACE, execute=True, context={"b_key": "2"}
    )
    request = json.loads(result["items"][0]["summary"])
    assert (
        request
        == preview["request"]
        == {
            "context": {"b_key": "2"},
            "limit": 5,
            "query": "PR description structure and reviewer language preferences",
            "schema_version": "semantic_preference_provider_request_v0",
            "surface": SURFACE,
        }
    )


def test_providers_run_in_a_scratch_directory_never_the_callers(write_json, tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    script = (
        "import json, os, sys; sys.stdin.read(); print(json.dumps({'schema_version': "
        "'semantic_preference_provider_response_v0', 'items': [{'preference_ref': 'cwd', "
        "'summary': os.getcwd()}]}))"
    )
    path = write_json("cfg.json", legacy_config([sys.executable, "-c", script]))
    result = services.recall(path, project=str(project), surface=SURFACE, execute=True)
    cwd = result["items"][0]["summary"]
    assert not os.path.exists(cwd)  # removed after the run
    assert os.path.basename(cwd).startswith("loopx-provider-")
    assert not cwd.startswith(str(project))
