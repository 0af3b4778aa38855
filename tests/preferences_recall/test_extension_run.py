"""``semantic_preference extension run``: refused as LoopX refuses a capability provider,
after LoopX's own checks in LoopX's order; nothing is ever run."""

import pytest

from preferences import services
from preferences.recall.errors import SemanticPreferenceError
from tests.helpers import run_cli
from tests.preferences_recall.conftest import manifest, provider

pytestmark = pytest.mark.django_db


def _code(**options) -> str:
    with pytest.raises(SemanticPreferenceError) as exc:
        services.run_extension(**options)
    assert exc.value.envelope()["schema_version"] == "loopx_extension_error_v0"
    return exc.value.code


def test_an_installed_provider_is_refused_and_never_run(install, write_json, tmp_path):
    marker = tmp_path / "ran"
    install(manifest("alpha", provider("valid", str(marker))))
    request = write_json("in.json", {"query": "x"})
    for execute in (False, True):
        assert _code(extension_id="alpha", input_json=str(request), execute=execute) == (
            "extension_not_standalone"
        )
    assert not marker.exists()


def test_the_input_is_checked_first_then_the_id_then_enabled(install, write_json, tmp_path):
    install(manifest("alpha", provider("valid")), active=False)
    good = str(write_json("in.json", {}))
    (tmp_path / "bad.json").write_text("{not json")
    assert _code(extension_id="missing", input_json=str(tmp_path / "absent.json")) == (
        "invalid_input"
    )
    assert _code(extension_id="alpha", input_json=str(tmp_path / "bad.json")) == "invalid_input"
    assert _code(extension_id="alpha", input_json=str(write_json("a.json", [1]))) == (
        "invalid_input"
    )
    assert _code(extension_id="missing", input_json=good) == "extension_not_found"
    assert _code(extension_id="alpha", input_json=good) == "extension_disabled"


def test_cli_extension_run_reads_stdin_and_exits_2(install):
    install(manifest("alpha", provider("valid")))
    result = run_cli(
        "semantic_preference", "extension", "run", "alpha", "--input-json", "-", stdin="{}"
    )
    assert (result.code, result.json["status"], result.json["code"]) == (
        2,
        "invalid_request",
        "extension_not_standalone",
    )
