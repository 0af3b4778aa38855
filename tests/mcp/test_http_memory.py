"""Reward Memory and Agent Turn Recall through ``/mcp/`` on ``make run``'s demo data: the
same guards, receipts and documents as the CLI, and each tool's refusal."""

import json

from loopx_site.core import clock
from reward_memory.models import MemoryRecord
from tests.helpers import ROOT, run_cli
from tests.mcp.conftest import drive, over_http


def _request() -> dict:
    request = json.loads((ROOT / "examples/request.json").read_text())
    request["freshness"]["observed_at"] = clock.now().strftime("%Y-%m-%dT%H:%M:%SZ")
    return request


def _application(recall_id: str) -> dict:
    text = (ROOT / "examples/application.json").read_text().replace("RECALL_ID", recall_id)
    return json.loads(text)


def _call(token, name, arguments):
    async def scenario():
        async with over_http(token) as client:
            return await client.call_tool(name, arguments)

    return drive(scenario)


def test_recall_then_the_application_receipt_as_the_api_records_them(demo):
    request = {k: v for k, v in _request().items() if k not in ("goal_id", "agent_id")}
    preview = _call(demo, "recall_memory", {"request": request})
    assert preview.is_error is False, preview.content[0].text
    recalled = _call(demo, "recall_memory", {"request": request, "execute": True})
    assert recalled.is_error is False, recalled.content[0].text
    document = recalled.structured_content
    assert document["schema_version"].startswith("reward_memory_recall")
    recall_id = document["recall_id"]
    receipt = _call(demo, "record_application", {"receipt": _application(recall_id)})
    assert receipt.is_error is False, receipt.content[0].text
    cli = run_cli("reward_memory", "application-receipt", "--input", "-",
                  stdin=json.dumps(_application(recall_id)))  # fmt: skip
    assert receipt.structured_content == cli.json


def test_recall_and_receipt_refusals_are_error_documents(demo):
    foreign = _call(demo, "recall_memory", {"request": {**_request(), "agent_id": "reviewer"}})
    assert foreign.is_error
    assert foreign.structured_content["code"] == "resource_not_found"
    unknown = _call(demo, "record_application", {"receipt": _application("rc_unknown")})
    assert unknown.is_error
    assert unknown.structured_content["ok"] is False
    assert "recall" in unknown.structured_content["code"]
    no_id = _call(demo, "record_application", {"receipt": {"decision": "apply"}})
    assert (no_id.structured_content["code"], no_id.structured_content["field"]) == (
        "invalid_argument",
        "recall_id",
    )


def test_propose_memory_plans_a_candidate_and_never_activates_it_by_itself(demo):
    event = json.loads((ROOT / "reward_memory/fixtures/scoped_feedback_event.json").read_text())
    event["event_id"] = "feedback-mcp-1"
    before = MemoryRecord.objects.count()
    planned = _call(demo, "propose_memory", {"event": event})
    assert planned.is_error is False, planned.content[0].text
    assert MemoryRecord.objects.count() == before  # a preview writes nothing
    bad = _call(demo, "propose_memory", {"event": {"schema_version": "nonsense"}})
    assert bad.is_error
    assert bad.structured_content["ok"] is False


def test_turn_guidance_from_the_quota_packet_is_the_cli_document(demo, frozen_clock):
    ids = ["--goal-id", "demo", "--agent-id", "author"]
    packet = run_cli("quota", "should-run", *ids, "--turn-instance-id", "turn-mcp-1").json
    arguments = {"turn_instance_id": "turn-mcp-1", "quota_decision": packet}
    guidance = _call(demo, "turn_guidance", arguments)
    assert guidance.is_error is False, guidance.content[0].text
    cli = run_cli("agent_turn_recall", *ids, "--turn-instance-id", "turn-mcp-1",
                  "--quota-decision-json", "-", stdin=json.dumps(packet))  # fmt: skip
    assert guidance.structured_content == cli.json
    mismatch = _call(demo, "turn_guidance", {**arguments, "turn_instance_id": "turn-mcp-9"})
    assert mismatch.is_error
    assert mismatch.structured_content["ok"] is False
