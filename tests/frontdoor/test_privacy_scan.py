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
    capture.add("log:loopx", "provider said lxh_Q2xhdWRlSXNBSGVscGZ1bEFz")
    capture.quote("The owner's exact words, verbatim.")
    capture.add("cli", {"receipt": "The owner's exact words, verbatim."})
    found = privacy_scan.findings()
    assert len(found) == 4, found
    assert any("recalled_or_quoted_text('Keep PR" in f for f in found)
    assert any("local_path" in f for f in found)
    assert any("credential" in f for f in found)
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


def test_request_log_paths_are_not_local_paths_but_filesystem_paths_are(monkeypatch):
    capture = privacy_scan.Capture()
    monkeypatch.setattr(privacy_scan, "CAPTURE", capture)
    capture.add("log:django.request", "Unauthorized: /api/v1/goals/demo/")
    capture.add("log:django.request", "Method Not Allowed (POST): /admin/dashboard/")
    assert privacy_scan.findings() == []
    capture.add("log:django.request", "Not Found: /home/bob/key.pem")
    (found,) = privacy_scan.findings()
    assert "local_path" in found


def test_records_a_logger_filter_drops_are_not_captured():
    before = len(privacy_scan.CAPTURE.texts)
    # Django's own 4xx record: ExpectedClientErrorFilter drops it, so nothing is written
    logging.getLogger("django.request").warning(
        "Unauthorized: %s", "/api/v1/goals/demo/", extra={"status_code": 401}
    )
    assert privacy_scan.CAPTURE.texts[before:] == []
    logging.getLogger("django.request").error(
        "Internal Server Error: /x/", extra={"status_code": 500}
    )
    assert [c for _, c, _ in privacy_scan.CAPTURE.texts[before:]] == ["log:django.request"]


def test_envelopes_and_log_lines_of_this_run_are_captured():
    before = len(privacy_scan.CAPTURE.texts)
    DomainError("invalid_argument", "a clean message").envelope()
    logging.getLogger("loopx.test").warning("a clean log line")
    channels = [c for _, c, _ in privacy_scan.CAPTURE.texts[before:]]
    assert "error_envelope" in channels
    assert "log:loopx.test" in channels


def test_public_urls_and_the_callers_own_journal_view_are_not_findings(monkeypatch):
    capture = privacy_scan.Capture()
    monkeypatch.setattr(privacy_scan, "CAPTURE", capture)
    quote = "Use the designated reviewer for my changes."
    capture.quote(quote)
    view = {"schema_version": "agent_preferences_v1", "items": [{"source_quote": quote}]}
    capture.add("api", {"schema_version": "x_receipt_v0", "artifact_ref": "https://x.org/pull/1"})
    capture.add("cli", {"schema_version": "semantic_preference_agent_v1", "current": view})
    capture.add("error_envelope", {"code": "revision_conflict", "current": view})
    assert privacy_scan.findings() == []
    capture.add("api", {"schema_version": "x_receipt_v0", "receipt": {"quote": quote}})
    assert len(privacy_scan.findings()) == 1


@pytest.mark.privacy_exempt("feeds the scanner the server path it must catch")
def test_a_host_packet_naming_this_servers_interpreter_or_checkout_is_flagged(monkeypatch):
    capture = privacy_scan.Capture()
    monkeypatch.setattr(privacy_scan, "CAPTURE", capture)
    read = {"argv": ["python", "manage.py", "semantic_preference", "agent", "read"],
            "command": "python manage.py semantic_preference agent read"}  # fmt: skip
    capture.add("api", {"schema_version": "loopx_quota_decision_v0", "required_reads": [read]})
    assert privacy_scan.findings() == []  # the host's own relative command is fine
    server = {"argv": ["/srv/loopx/.venv/bin/python", "/srv/loopx/manage.py"],
              "command": "/srv/loopx/.venv/bin/python /srv/loopx/manage.py agent read"}  # fmt: skip
    capture.add("api", {"schema_version": "loopx_quota_decision_v0", "required_reads": [server]})
    (found,) = privacy_scan.findings()
    assert "local_path" in found
