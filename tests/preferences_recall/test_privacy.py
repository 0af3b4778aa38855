"""A privacy sweep over every non-private output of the hook: receipts, doctor reports,
extension projections, degraded recalls, errors and logs. None may contain an absolute
path, a provider command, provider stderr, a config value or a raw provider ref."""

import logging
import re
import sys

import pytest

from preferences import services
from tests.helpers import run_cli
from tests.preferences_recall.conftest import (
    PROVIDERS,
    SURFACE,
    legacy_config,
    manifest,
    provider,
)

pytestmark = pytest.mark.django_db

ABSOLUTE_PATH = re.compile(r"(?<![\w:/])/(?:tmp|home|work|usr|root|var|etc|opt)/")
FORBIDDEN = [
    str(PROVIDERS),
    sys.executable,
    ".py",
    "hunter2",
    "AKIA-STDERR-SECRET",
    "PROBE-SECRET-TOKEN",
    "SECRET-GARBAGE-TOKEN",
    "provider-owned-scope-reference",
    "provider-owned-actor-reference",
    "raw-pref-ref-SECRET",
    "Traceback",
]


def _sweep(texts: list[str]) -> None:
    for text in texts:
        assert not ABSOLUTE_PATH.search(text), text[:300]
        for needle in FORBIDDEN:
            assert needle not in text, (needle, text[:300])


def test_no_output_of_the_hook_leaks_private_material(write_json, install, tmp_path, caplog):
    caplog.set_level(logging.DEBUG)
    outputs: list[str] = []

    def cli(*argv):
        result = run_cli(*argv)
        outputs.extend([result.stdout, result.stderr])
        return result

    broken = tmp_path / "broken"
    install(
        manifest(
            "alpha",
            provider("nonzero_secret"),
            doctor=provider("doctor_ok", "--fail-if", str(broken)),
        ),
        active=True,
    )
    broken.write_text("x")
    cli("semantic_preference", "extension", "list")
    cli("semantic_preference", "extension", "list", "--format", "text")
    cli("semantic_preference", "extension", "activate", "alpha", "--execute")
    cli("semantic_preference", "extension", "disable", "alpha")
    failing = write_json(
        "failing.json", manifest("beta", provider("valid"), doctor=provider("doctor_fail"))
    )
    cli("semantic_preference", "extension", "install", "--manifest", str(failing), "--execute")
    cli("semantic_preference", "extension", "install", "--manifest", str(tmp_path / "nope.json"))

    ext_cfg = write_json(
        "ext.json",
        {
            "schema_version": "semantic_preference_hook_config_v0",
            "enabled": True,
            "provider": {"args": ["--secret-arg", str(tmp_path)]},
            "surfaces": {SURFACE: {"query": "q", "failure_policy": "fail_closed"}},
        },
    )
    for argv in (
        ("recall", "--project", "p", "--config", str(ext_cfg), "--surface", SURFACE),
        ("recall", "--project", "p", "--config", str(ext_cfg), "--surface", SURFACE, "--execute"),
        ("doctor", "--project", "p", "--config", str(ext_cfg), "--execute"),
        ("doctor", "--project", "p", "--config", str(ext_cfg), "--execute", "--format", "text"),
    ):
        cli("semantic_preference", *argv)

    for name, kind_provider in (
        ("garbage", provider("garbage")),
        ("huge", provider("huge")),
        ("missing", [str(tmp_path / "bin" / "missing")]),
        ("inventory", provider("invalid_inventory")),
    ):
        for policy in ("fail_open", "fail_closed"):
            path = write_json(f"{name}-{policy}.json", legacy_config(kind_provider, policy=policy))
            cli("recall", "--project", "p", "--config", str(path), "--surface", SURFACE,
                "--execute")  # fmt: skip
            cli("recall", "--project", "p", "--config", str(path), "--surface", SURFACE,
                "--execute", "--format", "text")  # fmt: skip

    valid = write_json("valid.json", legacy_config(provider("valid")))
    result = services.recall(valid, project="p", surface=SURFACE, execute=True)
    # The private result is the caller's; its guidance is public and must be clean.
    outputs.append(str(result["maintenance_guidance"]))
    outputs.append(str(result["provider"]))

    cli("semantic_preference", "receipt", "--surface", SURFACE, "--application-id", "a",
        "--outcome", "applied", "--preference-ref", "raw-pref-ref-SECRET")  # fmt: skip
    cli("semantic_preference", "receipt", "--surface", SURFACE, "--application-id", "a",
        "--outcome", "applied", "--preference-ref", "raw-pref-ref-SECRET",
        "--artifact-ref", "https://u:hunter2@example.com/x")  # fmt: skip
    cli("semantic_preference", "maintenance-receipt", "--trigger", "explicit_feedback",
        "--outcome", "verified", "--corpus-id", "c",
        "--scope-ref", "provider-owned-scope-reference")  # fmt: skip
    cli("semantic_preference", "maintenance-receipt", "--trigger", "explicit_feedback",
        "--outcome", "verified", "--corpus-id", "c", "--evidence-ref", "/etc/evidence")  # fmt: skip

    outputs.extend(record.getMessage() for record in caplog.records)
    assert len(outputs) > 40
    _sweep(outputs)
