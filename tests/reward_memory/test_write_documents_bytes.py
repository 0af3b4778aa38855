"""The write path's documents are built once (``reward_memory.documents``) and encoded once
(``loopx_site.core.encoding.dumps``): the CLI's stdout and the API's body are the same
bytes for the same operation."""

import json

from reward_memory.models import MemoryRecord
from tests.helpers import run_cli
from tests.reward_memory import factories as f

BASE = "/api/v1/reward-memory"


def _stdout_bytes(result) -> bytes:
    assert result.code == 0, result.stdout
    return result.stdout.rstrip("\n").encode("utf-8")


def test_the_corpus_list_is_the_same_bytes_on_the_cli_and_the_api(corpus, operator_client):
    cli = run_cli("reward_memory", "corpora", "--format", "json")
    api = operator_client.get(f"{BASE}/corpora/")
    assert api.status_code == 200
    assert json.loads(api.content)["schema_version"] == "reward_memory_corpus_list_v0"
    assert json.loads(api.content)["corpora"], "the list under test is not empty"
    assert _stdout_bytes(cli) == api.content


def test_a_record_revoke_preview_is_the_same_bytes_on_the_cli_and_the_api(corpus, account_client):
    record_ref = f.ingested(
        event=f.scoped_event("ev-1"), goal_id="demo", agent_id="author", execute=True
    )["record_ref"]
    cli = run_cli(
        "reward_memory", "revoke-record", "--record-ref", record_ref,
        "--revocation-ref", "revocation:1", "--actor", f.OWNER, "--format", "json",
    )  # fmt: skip
    api = account_client("owner").post(
        f"{BASE}/records/{record_ref}/revoke/",
        data=json.dumps({"revocation_ref": "revocation:1"}),
        content_type="application/json",
    )
    assert api.status_code == 200
    document = json.loads(api.content)
    assert (document["schema_version"], document["executed"]) == (
        "reward_memory_record_operation_v0",
        False,
    )
    assert _stdout_bytes(cli) == api.content
    assert MemoryRecord.objects.get(record_ref=record_ref).lifecycle_state == "active"


WRITE_PATH = [
    "services/reflection.py",
    "services/experiments.py",
    "services/review.py",
    "services/review_queue.py",
    "services/ingest.py",
    "services/authority.py",
    "services/lineage.py",
    "services/corpora.py",
    "services/operator_control.py",
    "services/runtime_hooks.py",
    "services/activation.py",
    "services/records.py",
    "demo.py",
    "admin.py",
    "api/views.py",
    "management/commands/reward_memory.py",
]


def test_the_write_path_assembles_no_document_outside_reward_memory_documents():
    import pathlib
    import re

    root = pathlib.Path(__file__).resolve().parents[2] / "reward_memory"
    literal = re.compile(r"""["']schema_version["']\s*:""")
    offenders = [
        f"{name}:{number}"
        for name in WRITE_PATH
        for number, line in enumerate((root / name).read_text().splitlines(), 1)
        if literal.search(line)
    ]
    assert offenders == []
