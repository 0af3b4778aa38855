"""Deletes that arrive (issue 33): retiring a record held by OpenViking deletes it at the
server through the outbox, with the record's own identity binding, retried with backoff
until the server's search no longer returns it — against the stateful fake server."""

import datetime as dt
import json

import pytest

import loopx_site.openviking_http as ov
from loopx_site.core import clock
from loopx_site.core import services as core
from reward_memory import providers, selectors, services
from reward_memory.models import MemoryRecord, ProviderDeletion
from reward_memory.services import provider_deletions
from tests.helpers import run_cli
from tests.openviking.fake_server import FakeOpenViking
from tests.reward_memory import factories as f

SUMMARY = "Lead PR descriptions with the user-visible effect."


@pytest.fixture
def server(settings):
    fake = FakeOpenViking(user_id="u1")
    settings.OPENVIKING_BASE_URL = fake.base_url
    settings.OPENVIKING_API_KEY = "test-key"
    settings.OPENVIKING_USER_ID = "u1"
    yield fake
    fake.close()


@pytest.fixture
def activated(db, server):
    """A private corpus on OpenViking allowlisting demo/author under its own peer, the
    Goal configured (canary at the server), one ingest activated there."""
    core.register_goal(goal_id="demo", agent_ids=["author"], execute=True)
    peer = providers.get("openviking").actor_peer_for("demo", "author")
    scope = f"{ov.peer_memory_root('u1', peer)}/reward_memory/prefs"
    f.register(
        "prefs",
        provider_id="openviking",
        scope_ref=scope,
        agents=[("demo", "author")],
        visibility="private",
        route=False,
    )
    corpus = selectors.get_corpus("prefs")
    f.write_config("experiments/ov.json", f.experiment_config([corpus]))
    configured = services.configure_goal(
        goal_id="demo", agent_id="author", config_path="experiments/ov.json", execute=True
    )
    assert configured.status not in ("unavailable", "canary_readback_failed"), configured
    receipt = f.ingested(event=f.scoped_event(), goal_id="demo", agent_id="author", execute=True)
    assert receipt["status"] == "activated", json.dumps(receipt)
    record = MemoryRecord.objects.get(record_ref=receipt["record_ref"])
    assert server.finds(SUMMARY, scope, peer) == [record.provider_resource_ref]
    return {"record": record, "scope": scope, "peer": peer}


def _retire(record_ref):
    return run_cli(
        "reward_memory", "retire-record", "--record-ref", record_ref,
        "--actor", f.RETIRER, "--execute", "--format", "json",
    )  # fmt: skip


def test_retire_sends_the_delete_with_the_records_peer_and_the_server_forgets_it(activated, server):
    """The issue's reproduction: on main no DELETE reached the server (the retire binding
    had no peer, refused as ``forbidden``) and its search still returned the memory."""
    record = activated["record"]
    done = _retire(record.record_ref)
    assert done.code == 0, done.stdout
    deletes = server.deletes()
    assert [d["peer"] for d in deletes] == [activated["peer"]]
    assert server.finds(SUMMARY, activated["scope"], activated["peer"]) == []
    row = ProviderDeletion.objects.get(record=record)
    assert (row.state, row.attempts, row.failure_kind) == ("confirmed", 1, "")
    assert done.json["provider_deletion"]["state"] == "confirmed"


def test_a_failed_delete_stays_pending_and_the_worker_retries_it_with_backoff(activated, server):
    record = activated["record"]
    server.fail_deletes = 3  # the first attempt (1 + 2 transport retries) fails
    assert _retire(record.record_ref).code == 0
    row = ProviderDeletion.objects.get(record=record)
    assert (row.state, row.attempts, row.failure_kind) == ("pending", 1, "unavailable")
    assert server.finds(SUMMARY, activated["scope"], activated["peer"]) != []
    # not due yet: the sweep leaves it alone
    assert provider_deletions.sweep()["due"] == 0
    later = clock.now() + provider_deletions.backoff(1) + dt.timedelta(seconds=1)
    assert provider_deletions.sweep(now=later)["confirmed"] == 1
    row.refresh_from_db()
    assert (row.state, row.attempts, row.failure_kind) == ("confirmed", 2, "")
    assert server.finds(SUMMARY, activated["scope"], activated["peer"]) == []


def test_a_delete_the_server_never_confirms_ends_failed_with_a_bounded_reason(
    activated, server, monkeypatch
):
    record = activated["record"]
    server.fail_deletes = 10_000
    monkeypatch.setattr(provider_deletions, "MAX_ATTEMPTS", 3)
    _retire(record.record_ref)
    when = clock.now()
    for _ in range(3):
        when += provider_deletions.BACKOFF_MAX_SECONDS * dt.timedelta(seconds=1)
        provider_deletions.sweep(now=when)
    row = ProviderDeletion.objects.get(record=record)
    assert (row.state, row.attempts, row.failure_kind) == ("failed", 3, "unavailable")
    server.fail_deletes = 0
    assert (
        provider_deletions.retry(record_ref=record.record_ref, operator=f.op(f.OWNER)).state
        == "pending"
    )
    assert provider_deletions.sweep()["confirmed"] == 1


def test_revoke_deletes_at_the_server_too(activated, server):
    record = activated["record"]
    services.revoke_record(
        record_ref=record.record_ref, principal=f.op(f.OWNER), revocation_ref="rev-1"
    )
    assert len(server.deletes()) == 1
    assert ProviderDeletion.objects.get(record=record).state == "confirmed"


def test_backoff_doubles_and_is_capped():
    waits = [provider_deletions.backoff(n).total_seconds() for n in (1, 2, 3, 30)]
    assert waits == [30, 60, 120, provider_deletions.BACKOFF_MAX_SECONDS]


def test_the_admin_and_the_dashboard_show_the_provider_delete(activated, server, admin_client):
    from django.urls import reverse

    record = activated["record"]
    server.fail_deletes = 3
    _retire(record.record_ref)
    page = admin_client.get(reverse("admin:reward_memory_memoryrecord_changelist"))
    assert "pending (1 attempts, unavailable)" in page.content.decode()
    outbox = admin_client.get(reverse("admin:reward_memory_providerdeletion_changelist"))
    assert record.record_ref in outbox.content.decode()
    dashboard = admin_client.get(reverse("loopx-dashboard"))
    assert "Provider deletes" in dashboard.content.decode()


def test_a_close_inside_a_longer_transaction_is_attempted_at_its_commit(
    activated, server, django_capture_on_commit_callbacks
):
    """E.g. a record superseded on another's activation: no service calls
    ``attempt_record`` after it, so the outbox row's first attempt runs at the commit."""
    from django.db import transaction

    from reward_memory.services import records

    record = activated["record"]
    with django_capture_on_commit_callbacks(execute=True), transaction.atomic():
        records._transition(record, "retired", "retired", actor="system:test", now=clock.now())
        assert ProviderDeletion.objects.get(record=record).attempts == 0
    assert ProviderDeletion.objects.get(record=record).state == "confirmed"
    assert [d["peer"] for d in server.deletes()] == [activated["peer"]]


def test_the_cli_and_the_api_read_a_records_provider_delete_later(activated, server, host_client):
    record = activated["record"]
    server.fail_deletes = 3
    _retire(record.record_ref)
    shown = run_cli(
        "reward_memory", "provider-deletion", "--record-ref", record.record_ref,
        "--format", "json",
    )  # fmt: skip
    assert shown.code == 0, shown.stdout
    assert shown.json["provider_deletion"]["failure_kind"] == "unavailable"
    provider_deletions.sweep(now=clock.now() + provider_deletions.backoff(1))
    response = host_client("demo", "author").get(
        f"/api/v1/reward-memory/records/{record.record_ref}/provider-deletion/"
    )
    assert response.status_code == 200, response.json()
    assert response.json()["provider_deletion"]["state"] == "confirmed"
    assert response.json()["record"]["lifecycle_state"] == "retired"


def test_an_erasure_verifies_the_delete_by_searching_for_the_records_own_text(
    activated, server, django_capture_on_commit_callbacks
):
    """The erasure scrubs the record's summary before its commit; the first attempt's
    readback used to search for that emptied text, found nothing, and confirmed a delete
    the server never made. A server that answers ok and keeps the file stays pending."""
    from loopx_site.core import erasure

    record = activated["record"]
    server.ignore_deletes = True
    with django_capture_on_commit_callbacks(execute=True):
        erasure.erase(goal_id="demo", execute=True)
    row = ProviderDeletion.objects.get(record=record)
    assert (row.state, row.failure_kind) == ("pending", "still_found")
    assert server.finds(SUMMARY, activated["scope"], activated["peer"]) != []
    record.refresh_from_db()
    assert record.summary == ""  # nothing left to search with: a retry reads back exactly
    later = clock.now() + provider_deletions.backoff(row.attempts) + dt.timedelta(seconds=1)
    assert provider_deletions.sweep(now=later)["confirmed"] == 0
    server.ignore_deletes = False
    later += provider_deletions.BACKOFF_MAX_SECONDS * dt.timedelta(seconds=1)
    assert provider_deletions.sweep(now=later)["confirmed"] == 1
    assert server.finds(SUMMARY, activated["scope"], activated["peer"]) == []
