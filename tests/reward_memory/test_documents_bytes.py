"""One recall-path document, the same bytes on the CLI and the API.

The command writes ``loopx_site.core.encoding.dumps(document)`` to stdout and the API's
renderer writes the same bytes as the body: a host switching between ``manage.py`` and
HTTP parses the identical document.
"""

import json

from loopx_site.core.encoding import dumps
from reward_memory import contracts
from reward_memory.models import RecallReceipt
from tests.helpers import run_cli
from tests.reward_memory import factories as f


def _cli_bytes(result) -> bytes:
    assert result.code == 0, result.stderr
    return result.stdout.rstrip("\n").encode("utf-8")


def _api(client, path, body):
    return client.post(
        f"/api/v1/reward-memory/{path}", data=json.dumps(body), content_type="application/json"
    )


def test_recall_preview_is_the_same_bytes_on_the_cli_and_the_api(db, tmp_path, corpus, host_client):
    request = f.recall_request(corpus, queries=["PR description effect — naïve"])
    path = tmp_path / "recall.json"
    path.write_text(json.dumps(request), encoding="utf-8")
    cli = run_cli("reward_memory", "recall", "--input", str(path))
    api = _api(host_client("demo", "author"), "recall/", request)
    assert api.status_code == 200
    assert json.loads(api.content)["public_packet"]["status"] == "preview"
    assert _cli_bytes(cli) == api.content
    assert not RecallReceipt.objects.exists()  # previews write nothing on either side


def test_guard_blocked_recall_is_the_same_bytes_on_the_cli_and_the_api(
    db, tmp_path, corpus, host_client
):
    request = f.recall_request(corpus, conflicts=["conflict:open"])
    path = tmp_path / "recall.json"
    path.write_text(json.dumps(request), encoding="utf-8")
    cli = run_cli("reward_memory", "recall", "--input", str(path), "--execute")
    api = _api(host_client("demo", "author"), "recall/", {**request, "execute": True})
    document = json.loads(api.content)
    assert document["guard"]["reasons"] == [{"code": "unresolved_conflict", "field": "conflicts"}]
    assert _cli_bytes(cli) == api.content == dumps(document).encode("utf-8")


def test_architecture_cli_bytes_are_the_core_encoding_of_the_contract(db):
    cli = run_cli("reward_memory", "architecture")
    assert _cli_bytes(cli) == dumps(contracts.architecture()).encode("utf-8")
