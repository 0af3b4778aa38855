"""``goal erase``: every piece of a Goal's (or one Agent's) content leaves the database;
only hashed tombstones stay (docs/security.md, "Erasure")."""

import json

import pytest
from django.core.management import call_command
from django.db import connection
from django.urls import reverse

from hooks.models import HookDispatch, HookIntent, Todo
from loopx_site.core import demo_kit, erasure
from loopx_site.core import services as core_services
from loopx_site.core.errors import DomainError
from loopx_site.engines import fulltext
from preferences import selectors as preference_selectors
from preferences import services as preference_services
from reward_memory.models import (
    IngestEvent,
    LocalProviderDocument,
    MemoryRecord,
    RecallReceipt,
    ReflectionCandidate,
)
from reward_memory.providers.local import namespace
from reward_memory.services import provider_deletions
from turn_recall.models import TurnRecallReceipt

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.privacy_exempt("writes marker text on purpose and scans for it"),
]

MARKER = "zqxerasuremarker"
OTHER = "zqxothergoalmarker"
DEMO_STATEMENT = "Ask the designated reviewer before merging."


def _remember(goal_id, agent_id, *, key, statement, operation_id):
    revision = preference_services.read(goal_id=goal_id, agent_id=agent_id)["revision"]
    return preference_services.remember(
        goal_id=goal_id,
        agent_id=agent_id,
        key=key,
        statement=statement,
        source_ref="owner-message-marker",
        source_quote=f"Quote {statement}",
        expected_revision=revision,
        operation_id=operation_id,
        execute=True,
    )


def _mark_reward_memory(marker: str) -> None:
    """The marker in a record (its text, provider copy and postings), its candidate, an
    ingest event and a recall receipt of the demo Goal."""
    event = IngestEvent.objects.filter(
        record__provider_id="local", agent__agent_id="author"
    ).first()
    record = MemoryRecord.objects.get(pk=event.record_id)
    record.summary = f"{record.summary} {marker}"
    record.content = {**record.content, "note": marker}
    record.save(update_fields=["summary", "content"])
    binding = provider_deletions.binding_for(record)
    for doc in LocalProviderDocument.objects.filter(
        scope_key=binding.scope_key, resource_ref=record.provider_resource_ref
    ):
        doc.content = f"{doc.content} {marker}"
        doc.save(update_fields=["content"])
        fulltext.index(namespace(binding, doc.surface), doc.resource_ref, doc.content)
    event.event = {**event.event, "note": marker}
    event.save(update_fields=["event"])
    reflection = ReflectionCandidate.objects.get(goal=event.goal)
    reflection.reflection = {**reflection.reflection, "note": marker}
    reflection.save(update_fields=["reflection"])
    receipt = RecallReceipt.objects.filter(goal=event.goal).first()
    receipt.packet = {**receipt.packet, "note": marker}
    receipt.save(update_fields=["packet"])


def _mark_hooks_and_turn_recall(marker: str) -> None:
    """The marker in a Todo title, a hook dispatch result and intent payload, and a turn
    recall receipt's guidance of the demo Goal."""
    Todo.objects.filter(goal__goal_id="demo").update(title=f"Todo {marker}")
    HookDispatch.objects.filter(goal__goal_id="demo").update(result={"note": marker})
    HookIntent.objects.filter(goal__goal_id="demo").update(payload={"note": marker})
    TurnRecallReceipt.objects.filter(goal_id="demo").update(guidance=[{"note": marker}])


@pytest.fixture
def demo(db):
    """``make run``'s demo data, the marker in every app, and another Goal's content."""
    demo_kit.load_all(log=lambda _message: None)
    _remember(
        "demo", "author", key="erase.marker", statement=f"Say {MARKER}.", operation_id="op-marker"
    )
    _remember(
        "demo",
        "reviewer",
        key="erase.sibling",
        statement="Sibling text zqxsibling.",
        operation_id="op-sibling",
    )
    _mark_reward_memory(MARKER)
    _mark_hooks_and_turn_recall(MARKER)
    core_services.register_goal(goal_id="other", agent_ids=["solo"], execute=True)
    _remember(
        "other", "solo", key="erase.other", statement=f"Keep {OTHER}.", operation_id="op-other"
    )


def _text_of(value) -> bytes:
    if value is None:
        return b""
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    if isinstance(value, str):
        return value.encode()
    return json.dumps(value, default=str).encode()


def database_hits(needle: str) -> list[str]:
    """Every ``table.column`` of the whole database whose value holds ``needle`` (text,
    JSON and blobs read as bytes)."""
    hits = []
    with connection.cursor() as cursor:
        for table in connection.introspection.table_names(cursor):
            columns = [
                c.name for c in connection.introspection.get_table_description(cursor, table)
            ]
            quoted = ", ".join(connection.ops.quote_name(c) for c in columns)
            cursor.execute(f"SELECT {quoted} FROM {connection.ops.quote_name(table)}")
            for row in cursor.fetchall():
                hits += [
                    f"{table}.{column}"
                    for column, value in zip(columns, row, strict=True)
                    if needle.encode() in _text_of(value)
                ]
    return sorted(set(hits))


def _goal_record_texts(goal_id: str) -> list[str]:
    ingested = IngestEvent.objects.filter(goal__goal_id=goal_id).values("record_id")
    return [r.summary for r in MemoryRecord.objects.filter(pk__in=ingested)]


def test_the_scan_finds_the_marker_in_every_app_before_erasure(demo):
    tables = {hit.split(".")[0] for hit in database_hits(MARKER)}

    assert {
        "core_searchdocument",
        "hooks_hookintent",
        "preferences_preferenceoperation",
        "reward_memory_ingestevent",
        "reward_memory_localproviderdocument",
        "reward_memory_memoryrecord",
        "reward_memory_recallreceipt",
        "reward_memory_reflectioncandidate",
        "turn_recall_turnrecallreceipt",
    } <= tables
    assert database_hits(DEMO_STATEMENT)


def test_erasing_a_goal_leaves_none_of_its_text_anywhere_in_the_database(demo):
    record_texts = _goal_record_texts("demo")
    receipt = erasure.erase(goal_id="demo", execute=True)

    assert receipt["status"] == "erased"
    assert receipt["removed"]["preferences.PreferenceSubject"] == 4
    assert receipt["removed"]["reward_memory.MemoryRecord"] == len(record_texts) > 0
    assert database_hits(MARKER) == []
    assert database_hits(DEMO_STATEMENT) == []
    assert database_hits("zqxsibling") == []
    assert [text for text in record_texts if database_hits(text)] == []
    assert database_hits(OTHER) != []
    other = preference_services.read(goal_id="other", agent_id="solo")
    assert [item["key"] for item in other["items"]] == ["erase.other"]


def test_a_replayed_operation_id_after_erasure_never_writes_the_statement_again(demo):
    erasure.erase(goal_id="demo", execute=True)

    with pytest.raises(DomainError) as raised:
        _remember(
            "demo",
            "author",
            key="erase.marker",
            statement=f"Say {MARKER}.",
            operation_id="op-marker",
        )

    assert raised.value.code == "operation_conflict"
    assert database_hits(MARKER) == []
    assert preference_services.read(goal_id="demo", agent_id="author")["items"] == []


def test_erasure_keeps_the_journal_revision_so_no_revision_is_reused(demo):
    before = preference_services.read(goal_id="demo", agent_id="author")["revision"]
    erasure.erase(goal_id="demo", execute=True)

    written = _remember(
        "demo", "author", key="after.erase", statement="New.", operation_id="op-new"
    )

    assert int(written["state"]["revision"]) == int(before) + 1


def test_a_preview_writes_nothing_and_counts_what_execute_removes(demo):
    before = set(database_hits(MARKER))
    preview = erasure.erase(goal_id="demo")

    assert preview["status"] == "preview"
    assert set(database_hits(MARKER)) == before
    assert preview["removed"] == erasure.erase(goal_id="demo", execute=True)["removed"]


def test_erasing_one_agent_leaves_its_sibling_agents_content(demo):
    erasure.erase(goal_id="demo", agent_id="author", execute=True)

    assert database_hits(DEMO_STATEMENT) == []
    assert database_hits("zqxsibling") != []
    reviewer = preference_services.read(goal_id="demo", agent_id="reviewer")
    assert [item["key"] for item in reviewer["items"]] == ["erase.sibling"]


def test_erasing_an_unknown_goal_or_agent_answers_not_found(demo):
    for kwargs in ({"goal_id": "nope"}, {"goal_id": "demo", "agent_id": "nope"}):
        with pytest.raises(DomainError) as raised:
            erasure.erase(**kwargs, execute=True)
        assert raised.value.code == "resource_not_found"


def test_the_command_prints_the_erasure_receipt(demo, capsys):
    call_command("goal", "erase", "--goal-id", "demo", "--execute", "--format", "json")

    document = json.loads(capsys.readouterr().out)
    assert document["schema_version"] == "loopx_goal_erasure_v0"
    assert document["status"] == "erased"
    assert document["removed"]["reward_memory.LocalProviderDocument"] > 0
    assert document["total_rows"] == sum(document["removed"].values())
    assert MARKER not in json.dumps(document)
    assert database_hits(MARKER) == []


def test_the_command_previews_in_text_by_default(demo, capsys):
    call_command("goal", "erase", "--goal-id", "demo", "--format", "text")

    out = capsys.readouterr().out
    assert "status: preview" in out
    assert "preferences.PreferenceSubject: 4" in out
    assert database_hits(MARKER) != []


def test_every_app_with_goal_content_registers_a_lazy_eraser():
    from loopx_site.core import contributions

    erasers = dict(contributions.GOAL_CONTENT)
    assert list(erasers) == [
        "preferences.journal",
        "reward_memory.content",
        "hooks.payloads",
        "turn_recall.guidance",
    ]
    assert all(isinstance(fn, contributions.Lazy) for fn in erasers.values())


def test_the_admin_action_previews_then_erases_and_shows_the_receipt(demo, admin_client):
    from django.contrib.admin import helpers

    from loopx_site.core.models import Goal

    url = reverse("admin:core_goal_changelist")
    picked = {
        "action": "erase_memory",
        helpers.ACTION_CHECKBOX_NAME: [Goal.objects.get(goal_id="demo").pk],
    }

    preview = admin_client.post(url, picked)
    assert preview.status_code == 200
    assert b"Yes, erase" in preview.content
    assert database_hits(MARKER) != []

    done = admin_client.post(url, {**picked, "erase_confirmed": "yes"})
    assert done.status_code == 200
    assert b"preferences.PreferenceSubject" in done.content
    assert database_hits(MARKER) == []
    assert database_hits(OTHER) != []


def test_the_admin_action_needs_the_erase_permission(demo, client, django_user_model):
    from django.contrib.auth.models import Permission

    user = django_user_model.objects.create_user("viewer", password="pw", is_staff=True)
    user.user_permissions.add(Permission.objects.get(codename="view_goal"))
    client.force_login(user)

    page = client.get(reverse("admin:core_goal_changelist"))

    assert page.status_code == 200
    assert b"erase_memory" not in page.content
    user.user_permissions.add(Permission.objects.get(codename="erase_goal"))
    user = django_user_model.objects.get(pk=user.pk)
    client.force_login(user)
    assert b"erase_memory" in client.get(reverse("admin:core_goal_changelist")).content


def test_the_history_after_erasure_lists_tombstones_without_the_text(demo):
    erasure.erase(goal_id="demo", agent_id="author", execute=True)

    page = preference_selectors.history(goal_id="demo", agent_id="author")

    text = json.dumps(page)
    assert len(page["events"]) == 3
    assert DEMO_STATEMENT not in text
    assert MARKER not in text


def test_erased_records_are_closed_so_recall_never_returns_them(demo):
    ingested = IngestEvent.objects.filter(goal__goal_id="demo").values("record_id")
    erasure.erase(goal_id="demo", execute=True)

    states = set(
        MemoryRecord.objects.filter(pk__in=ingested).values_list("lifecycle_state", flat=True)
    )

    assert states
    assert states.isdisjoint({"active", "pending"})


def test_a_record_at_an_external_provider_gets_a_provider_delete_through_the_outbox(demo):
    from reward_memory.models import ProviderDeletion

    event = IngestEvent.objects.filter(goal__goal_id="demo", record__isnull=False).first()
    MemoryRecord.objects.filter(pk=event.record_id).update(provider_id="openviking")

    receipt = erasure.erase(goal_id="demo", execute=True)

    assert receipt["provider_deletes"] == {"pending": 1}
    deletion = ProviderDeletion.objects.get(record_id=event.record_id)
    assert deletion.provider_id == "openviking"
    assert deletion.state in {"pending", "failed"}


def test_the_admin_still_shows_the_erased_rows(demo, admin_client):
    from django.apps import apps

    erasure.erase(goal_id="demo", execute=True)

    for label in (
        "reward_memory.MemoryRecord",
        "reward_memory.IngestEvent",
        "reward_memory.RecallReceipt",
        "reward_memory.ReflectionCandidate",
        "preferences.PreferenceScope",
        "hooks.HookIntent",
        "hooks.Todo",
        "turn_recall.TurnRecallReceipt",
    ):
        model = apps.get_model(label)
        opts = model._meta
        assert (
            admin_client.get(
                reverse(f"admin:{opts.app_label}_{opts.model_name}_changelist")
            ).status_code
            == 200
        ), label
        row = model.objects.order_by("pk").first()
        change = reverse(f"admin:{opts.app_label}_{opts.model_name}_change", args=[row.pk])
        page = admin_client.get(change)
        assert page.status_code == 200, label
        assert MARKER.encode() not in page.content


def test_the_outbox_confirms_the_local_copies_of_erased_records_are_gone(demo, capsys):
    from reward_memory.models import ProviderDeletion

    ingested = list(
        IngestEvent.objects.filter(goal__goal_id="demo").values_list("record_id", flat=True)
    )
    erasure.erase(goal_id="demo", execute=True)

    provider_deletions.sweep()

    states = set(
        ProviderDeletion.objects.filter(record_id__in=ingested).values_list("state", flat=True)
    )
    assert states == {"confirmed"}
    record = MemoryRecord.objects.get(pk=ingested[0])
    call_command(
        "reward_memory", "provider-deletion", "--record-ref", record.record_ref, "--format", "json"
    )
    assert json.loads(capsys.readouterr().out)["provider_deletion"]["state"] == "confirmed"
