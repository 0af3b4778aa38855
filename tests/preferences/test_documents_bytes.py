"""The same preferences document is the same bytes on the CLI and the API.

The CLI prints ``loopx_site.core.encoding.dumps(document)`` plus a newline; the API's
renderer writes the same encoding as the body. Nothing is removed before comparing: for
equal inputs, no field of these documents legitimately differs between the two."""

import re
from pathlib import Path

from tests.helpers import run_cli

ROOT = Path(__file__).resolve().parents[2]
BASE = "/api/v1/goals/demo/agents/author/preferences/"
SCOPE = ("--goal-id", "demo", "--agent-id", "author")


def _cli_bytes(*argv: str) -> bytes:
    result = run_cli("semantic_preference", *argv)
    assert result.code == 0, result.stdout + result.stderr
    assert result.stdout.endswith("\n")
    return result.stdout[:-1].encode("utf-8")


def _remember(key: str, operation_id: str, expected: str, statement: str) -> None:
    result = run_cli(
        "remember",
        *SCOPE,
        "--key",
        key,
        "--statement",
        statement,
        "--source-ref",
        "owner-message-1",
        "--source-quote",
        "Ünïcode — “quoted” owner words.",
        "--expected-revision",
        expected,
        "--operation-id",
        operation_id,
        "--execute",
    )
    assert result.code == 0, result.stdout


def test_journal_read_and_history_are_the_same_bytes_on_cli_and_api(scope, host_client):
    _remember("review.collaboration", "op-1", "none", "Ask the désigné reviewer 🙂.")
    _remember("review.language", "op-2", "1", "Write reviews in English.")
    client = host_client("demo", "author")

    read = client.get(BASE)
    assert read.status_code == 200
    assert _cli_bytes("agent", "read", *SCOPE) == read.content

    page = client.get(BASE + "history/", {"limit": 1})
    assert page.status_code == 200
    assert _cli_bytes("agent", "history", *SCOPE, "--limit", "1") == page.content
    cursor = page.json()["next_cursor"]
    assert cursor
    rest = client.get(BASE + "history/", {"limit": 1, "after_cursor": cursor})
    cli_rest = _cli_bytes("agent", "history", *SCOPE, "--limit", "1", "--after-cursor", cursor)
    assert cli_rest == rest.content
    # UTF-8 as is on both sides (no ``\u`` escapes).
    assert "Ünïcode".encode() in read.content
    assert "🙂".encode() in read.content


def test_application_receipt_is_the_same_bytes_on_cli_and_api(scope, host_client):
    body = {
        "surface": "issue_fix.pr_description",
        "application_id": "pr-123-description-v2",
        "outcome": "applied",
        "preference_refs": ["loopx-local:note:a", "loopx-local:note:b"],
        "artifact_ref": "https://github.com/example/repo/pull/123",
    }
    api = host_client("demo", "author").post(
        "/api/v1/semantic-preferences/receipts/", body, format="json"
    )
    assert api.status_code == 200, api.content
    cli = _cli_bytes(
        "receipt",
        "--surface",
        body["surface"],
        "--application-id",
        body["application_id"],
        "--outcome",
        body["outcome"],
        "--preference-ref",
        body["preference_refs"][0],
        "--preference-ref",
        body["preference_refs"][1],
        "--artifact-ref",
        body["artifact_ref"],
    )
    assert cli == api.content


#: Modules where a document literal may stand: the rendering layer and the provider
#: contract. ``extensions/loopx_openviking.py`` is a stdlib-only provider program run by
#: a bare ``python3`` (it cannot import the project's contract module, which needs orjson).
ALLOWED = re.compile(
    r"^preferences/(documents/.*|recall/protocol\.py|extensions/loopx_openviking\.py)$"
)


def test_no_schema_version_literal_outside_documents_and_contract_modules():
    offenders = [
        str(path.relative_to(ROOT))
        for path in sorted((ROOT / "preferences").rglob("*.py"))
        if "migrations" not in path.parts
        and not ALLOWED.match(str(path.relative_to(ROOT)))
        and '"schema_version":' in path.read_text(encoding="utf-8")
    ]
    assert offenders == []
