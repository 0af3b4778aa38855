"""The session privacy scan itself: what it flags, what it leaves to the caller."""

import logging

import pytest

from loopx_site.core.errors import DomainError
from tests import privacy_scan


@pytest.mark.privacy_exempt("feeds the scanner the strings it must catch")
def test_the_scan_flags_paths_credentials_commands_and_recalled_text(monkeypatch):
    capture = privacy_scan.Capture()
    monkeypatch.setattr(privacy_scan, "CAPTURE", capture)
    capture.add(
        "cli",
        {
            "schema_version": "semantic_preference_recall_v0",
            "items": [{"summary": "Keep PR descriptions under twenty lines."}],
        },
    )
    capture.add("api", {"schema_version": "x_receipt_v0", "note": "kept under twenty lines"})
    capture.add(
        "api", {"schema_version": "x_receipt_v0", "s": "Keep PR descriptions under twenty lines."}
    )
    capture.add("error_envelope", {"error": "cannot read /home/alice/.config/loopx.json"})
    capture.add("log:loopx", "provider said lxh_" + "A" * 30)
    capture.quote("The owner's exact words, verbatim.")
    capture.add("cli", {"receipt": "The owner's exact words, verbatim."})
    found = privacy_scan.findings()
    assert len(found) == 4, found
    assert any("recalled_or_quoted_text('Keep PR" in f for f in found)
    assert any("absolute_path" in f for f in found)
    assert any("credential_like" in f for f in found)
    assert any("The owner's exact words" in f for f in found)


def test_private_results_are_scanned_by_their_public_part_only():
    public, recalled = privacy_scan._public_part(
        {
            "schema_version": "reward_memory_recall_result_v0",
            "items": [{"summary": "A private summary for the caller."}],
            "public_packet": {"recall_id": "rmc_1"},
        }
    )
    assert public == {"recall_id": "rmc_1"}
    assert recalled == ["A private summary for the caller."]
    token, _ = privacy_scan._public_part({"schema_version": "loopx_host_token_v0", "token": "s"})
    assert "token" not in token


def test_envelopes_and_log_lines_of_this_run_are_captured():
    before = len(privacy_scan.CAPTURE.texts)
    DomainError("invalid_argument", "a clean message").envelope()
    logging.getLogger("loopx.test").warning("a clean log line")
    channels = [c for _, c, _ in privacy_scan.CAPTURE.texts[before:]]
    assert "error_envelope" in channels
    assert "log:loopx.test" in channels
