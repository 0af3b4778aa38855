"""One document, one encoding: the CLI's stdout and the API's body are the same bytes
(issue 22), and no turn_recall module but ``documents``/``contracts`` builds a
document (no ``"schema_version":`` literal elsewhere)."""

import json
import re
from pathlib import Path

from tests.helpers import run_cli
from tests.turn_recall.conftest import packet, remember_guidance

ROOT = Path(__file__).resolve().parents[2] / "turn_recall"


def test_quota_should_run_is_the_same_bytes_on_the_cli_and_the_api(db, todo, host_client):
    cli = run_cli("quota", "should-run", "--goal-id", "demo", "--agent-id", "author")
    api = host_client("demo", "author").get("/api/v1/goals/demo/agents/author/quota/should-run/")
    assert (cli.code, api.status_code) == (0, 200)
    assert cli.stdout.rstrip("\n").encode("utf-8") == api.content
    assert json.loads(api.content)["schema_version"] == "loopx_quota_decision_v0"


def test_agent_turn_recall_is_the_same_bytes_on_the_cli_and_the_api(
    db, todo, turn_corpus, host_client
):
    remember_guidance("Run the flaky test three times before calling it fixed.")
    doc = json.dumps(packet())
    argv = ["agent_turn_recall", "--goal-id", "demo", "--agent-id", "author",
            "--turn-instance-id", "turn-1", "--quota-decision-json", "-"]  # fmt: skip
    cli = run_cli(*argv, stdin=doc)  # preview: no write, so the API sees the same state
    body = {"turn_instance_id": "turn-1", "quota_decision": json.loads(doc)}
    api = host_client("demo", "author").post("/api/v1/turn-recall/", body, format="json")
    assert (cli.code, api.status_code) == (0, 200)
    assert cli.stdout.rstrip("\n").encode("utf-8") == api.content
    assert json.loads(api.content)["status"] == "preview"


def test_no_module_but_documents_and_contracts_writes_a_schema_version_literal():
    literal = re.compile(r"""["']schema_version["']\s*:""")
    offenders = [
        str(path.relative_to(ROOT))
        for path in ROOT.rglob("*.py")
        if path.name not in ("documents.py", "contracts.py")
        and "migrations" not in path.parts
        and literal.search(path.read_text(encoding="utf-8"))
    ]
    assert offenders == []
