"""Operator admin pages: read-only rows, health column, lifecycle filters, retry action."""

import pytest
from django.urls import reverse

from reward_memory import services
from reward_memory.documents import review as review_documents
from reward_memory.models import (
    ApplicationReceipt,
    Candidate,
    Corpus,
    IngestEvent,
    MemoryRecord,
    PendingIngest,
    RecallReceipt,
    Review,
    StandingPolicy,
)
from tests.reward_memory import factories as f

MODELS = [
    Corpus,
    StandingPolicy,
    MemoryRecord,
    Candidate,
    Review,
    IngestEvent,
    PendingIngest,
    RecallReceipt,
    ApplicationReceipt,
]


@pytest.fixture
def populated(db, corpus):
    receipt = f.ingested(event=f.scoped_event(), goal_id="demo", agent_id="author", execute=True)
    review_documents.decision(
        services.review_candidate(
            candidate=f.candidate(content_summary="Another preference."),
            decision="accept",
            corpus_id="prefs",
            principal=f.op(f.REVIEWER),
            execute=True,
        )
    )
    recall = f.recalled(request=f.recall_request(corpus, queries=["PR effect"]), execute=True)
    f.applied(
        document={
            "schema_version": "reward_memory_application_v0",
            "recall_id": recall["recall_id"],
            "decision": "apply",
            "memory_refs": [receipt["record_ref"]],
            "reasoning_summary": "Fits.",
            "artifact_verification": {
                "artifact_ref": "pr:1",
                "artifact_digest": "sha256:" + "e" * 64,
                "verified": True,
            },
        },
        execute=True,
    )
    return receipt


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_changelists_render_and_rows_are_read_only(admin_client, populated, model):
    opts = model._meta
    response = admin_client.get(reverse(f"admin:{opts.app_label}_{opts.model_name}_changelist"))
    assert response.status_code == 200
    add = admin_client.get(reverse(f"admin:{opts.app_label}_{opts.model_name}_add"))
    assert add.status_code == 403
    row = model.objects.first()
    if row is not None:
        page = admin_client.get(
            reverse(f"admin:{opts.app_label}_{opts.model_name}_change", args=[row.pk])
        )
        assert page.status_code == 200
        assert b'name="_save"' not in page.content


def test_corpus_changelist_shows_the_separate_health_states(admin_client, populated):
    response = admin_client.get(reverse("admin:reward_memory_corpus_changelist"))
    body = response.content.decode()
    assert "corpus:yes index:yes query:yes readback:yes applied:yes" in body
    assert "local:prefs" not in body


def test_records_filter_by_lifecycle_state(admin_client, populated):
    services.retire_record(record_ref=populated["record_ref"], principal=f.op(f.RETIRER))
    url = reverse("admin:reward_memory_memoryrecord_changelist")
    active = admin_client.get(url, {"lifecycle_state__exact": "active"}).content.decode()
    retired = admin_client.get(url, {"lifecycle_state__exact": "retired"}).content.decode()
    assert populated["record_ref"] not in active
    assert populated["record_ref"] in retired


def test_retry_action_reconciles_pending_ingests(admin_client, double_corpus, double):
    double.available = False
    f.ingested(event=f.scoped_event(), goal_id="demo", agent_id="author", execute=True)
    double.available = True
    sidecar = PendingIngest.objects.get()
    response = admin_client.post(
        reverse("admin:reward_memory_pendingingest_changelist"),
        {"action": "retry", "_selected_action": [sidecar.pk]},
        follow=True,
    )
    assert response.status_code == 200
    assert "1 activated" in response.content.decode()
    assert MemoryRecord.objects.get().lifecycle_state == "active"
