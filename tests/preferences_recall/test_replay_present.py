"""Semantic preference recall keeps no stored answer to replay: every run re-reads the
present through Reward Memory's readable-records selector, so a soft preference
retired (or revoked) since is never served again and leaves the mirrored index."""

import json

import pytest

from loopx_site.core.models import SearchDocument
from preferences.recall import local_provider
from reward_memory import services as rm
from tests.reward_memory import factories as rmf

SUMMARY = "Reviewer language preferences: keep the PR description structure plain."


@pytest.fixture
def soft_record(db, agent, monkeypatch):
    rmf.operator_accounts()
    rmf.role_binding("user:maint-1", "maintainer")  # the event's source holds its role
    rmf.register("prefs", agents=[("demo", "author")])
    receipt = rmf.ingested(
        event=rmf.scoped_event("ev-1", content_summary=SUMMARY),
        goal_id="demo",
        agent_id="author",
        execute=True,
    )
    assert receipt["status"] == "activated"
    monkeypatch.setenv("LOOPX_RECALL_GOAL_ID", "demo")
    monkeypatch.setenv("LOOPX_RECALL_AGENT_ID", "author")
    return receipt["record_ref"]


def _respond():
    return local_provider.recall_response(
        surface=rmf.SURFACE,
        query="PR description structure reviewer language",
        limit=5,
        context={},
        project=rmf.PROJECT,
    )


def _soft_index_rows():
    ns = local_provider.namespace(rmf.PROJECT)
    return SearchDocument.objects.filter(namespace=ns, ref__startswith="soft:").count()


@pytest.mark.parametrize("close", ["retire", "revoke"])
def test_semantic_recall_after_a_soft_preference_closes_never_serves_it_again(soft_record, close):
    first = _respond()
    assert [i["preference_ref"] for i in first["items"]] == [soft_record]
    assert _soft_index_rows() == 1
    if close == "retire":
        rm.retire_record(record_ref=soft_record, principal=rmf.op(rmf.RETIRER))
    else:
        rm.revoke_record(record_ref=soft_record, principal=rmf.op(rmf.OWNER), revocation_ref="r:1")

    again = _respond()

    assert again["items"] == []
    assert SUMMARY not in json.dumps(again)
    assert _soft_index_rows() == 0, "the mirrored copy leaves the index too"
