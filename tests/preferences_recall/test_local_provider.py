"""The built-in ``loopx-local`` provider: its notes corpus, ranking, doctor, and the
end-to-end path through real subprocesses against the test database."""

import json
from pathlib import Path

import pytest
from django.db import IntegrityError
from django.utils import timezone

from loopx_site.core.access import SHELL
from loopx_site.engines import fulltext
from preferences import services
from preferences.models import ProviderNote
from preferences.recall import local_provider, protocol
from preferences.recall.errors import SemanticPreferenceError
from tests.helpers import run_cli, run_manage
from tests.preferences_recall.conftest import SURFACE

SHIPPED = Path(__file__).resolve().parents[2] / "preferences" / "extensions" / "loopx-local.json"
PROJECT = "loopx-demo"
QUERY = "PR description structure and reviewer language preferences"

NOTES = [
    {
        "note_id": "pr-structure",
        "summary": "PR description structure: Why, What changed, How to verify.",
        "body": "description structure sections, reviewer language preferences",
    },
    {
        "note_id": "reviewer-language",
        "summary": "Reviewer language stays plain.",
        "surfaces": [SURFACE],
    },
    {"note_id": "db-migrations", "summary": "Squash database migrations before release."},
    {"note_id": "release-notes", "summary": "Release notes list breaking changes first."},
    {
        "note_id": "content-only",
        "summary": "Draft language preferences for PR description structure.",
        "surfaces": ["content_ops.draft_language"],
    },
    {
        "note_id": "repo-specific",
        "summary": "For owner/repo, PR description structure starts with the ticket.",
        "context": {"repository": "owner/repo"},
    },
]


@pytest.fixture
def no_soft_source(monkeypatch):
    monkeypatch.setattr(local_provider, "soft_preference_source", lambda: None)


@pytest.fixture
def notes(db):
    for note in NOTES:
        services.save_provider_note(project=PROJECT, **note)


def _respond(**overrides):
    request = {
        "surface": SURFACE,
        "query": QUERY,
        "limit": 5,
        "context": {},
        "project": PROJECT,
    }
    request.update(overrides)
    return local_provider.recall_response(**request)


def _refs(response):
    return [i["preference_ref"] for i in response["items"]]


# -- notes corpus ------------------------------------------------------------------------


@pytest.mark.django_db
def test_saving_a_note_indexes_it_and_saving_it_again_is_unchanged():
    first = services.save_provider_note(project=PROJECT, note_id="n1", summary="Use tables.")
    again = services.save_provider_note(project=PROJECT, note_id="n1", summary="Use tables.")
    assert (first["status"], again["status"]) == ("created", "unchanged")
    assert fulltext.count(local_provider.namespace(PROJECT)) == 1
    changed = services.save_provider_note(project=PROJECT, note_id="n1", summary="Use lists.")
    assert changed["status"] == "updated"
    hits = fulltext.search(local_provider.namespace(PROJECT), "lists", limit=5)
    assert [h.ref for h in hits] == ["note:n1"]


@pytest.mark.django_db
def test_retiring_and_deleting_a_note_removes_it_from_the_index():
    services.save_provider_note(project=PROJECT, note_id="n1", summary="Use tables.")
    assert (
        services.retire_provider_note(project=PROJECT, note_id="n1", operator=SHELL)["status"]
        == "retired"
    )
    assert (
        services.retire_provider_note(project=PROJECT, note_id="n1", operator=SHELL)["status"]
        == "unchanged"
    )
    assert fulltext.count(local_provider.namespace(PROJECT)) == 0
    assert ProviderNote.objects.get().active is False
    services.delete_provider_note(project=PROJECT, note_id="n1")
    assert ProviderNote.objects.count() == 0


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"note_id": "has space"}, "note_id"),
        ({"summary": ""}, "summary"),
        ({"surfaces": ["nodot"]}, "surfaces"),
        ({"context": {"Bad-Key": "x"}}, "context"),
    ],
)
def test_invalid_notes_are_rejected_and_nothing_is_written(overrides, field):
    args = {"project": PROJECT, "note_id": "n1", "summary": "s", **overrides}
    with pytest.raises(SemanticPreferenceError) as exc:
        services.save_provider_note(**args)
    assert exc.value.field == field
    assert ProviderNote.objects.count() == 0
    assert fulltext.count(local_provider.namespace(PROJECT)) == 0


@pytest.mark.django_db
def test_note_constraints_reject_duplicates_and_empty_summaries():
    now = timezone.now()
    ProviderNote.objects.create(
        project="p", note_id="n", summary="s", created_at=now, updated_at=now
    )
    with pytest.raises(IntegrityError):
        ProviderNote.objects.create(
            project="p", note_id="n", summary="s2", created_at=now, updated_at=now
        )


@pytest.mark.django_db
def test_note_present_check_constraint():
    now = timezone.now()
    with pytest.raises(IntegrityError):
        ProviderNote.objects.create(
            project="p", note_id="n", summary="", created_at=now, updated_at=now
        )


# -- ranking -----------------------------------------------------------------------------


@pytest.mark.django_db
def test_ranking_puts_the_best_text_match_first_and_skips_unrelated_notes(notes, no_soft_source):
    refs = _refs(_respond())
    assert refs[0] == "loopx-local:note:pr-structure"
    assert "loopx-local:note:reviewer-language" in refs
    assert "loopx-local:note:db-migrations" not in refs
    assert "loopx-local:note:release-notes" not in refs


@pytest.mark.django_db
def test_notes_for_other_surfaces_and_unmatched_context_are_not_recalled(notes, no_soft_source):
    refs = _refs(_respond())
    assert "loopx-local:note:content-only" not in refs
    assert "loopx-local:note:repo-specific" not in refs
    with_context = _refs(_respond(context={"repository": "owner/repo"}))
    assert "loopx-local:note:repo-specific" in with_context
    other_surface = _refs(_respond(surface="content_ops.draft_language"))
    assert "loopx-local:note:content-only" in other_surface
    assert "loopx-local:note:reviewer-language" not in other_surface


@pytest.mark.django_db
def test_the_limit_is_honoured(notes, no_soft_source):
    assert len(_respond(limit=1)["items"]) == 1
    assert len(_respond(limit=20)["items"]) <= 20


@pytest.mark.django_db
def test_a_note_targeting_the_surface_is_recalled_even_without_shared_words(no_soft_source):
    services.save_provider_note(
        project=PROJECT, note_id="targeted", summary="Zebra crossing.", surfaces=[SURFACE]
    )
    services.save_provider_note(project=PROJECT, note_id="general", summary="Zebra stripes.")
    assert _refs(_respond()) == ["loopx-local:note:targeted"]


@pytest.mark.django_db
def test_projects_do_not_share_a_corpus(notes, no_soft_source):
    assert _respond(project="another-project")["items"] == []


@pytest.mark.django_db
def test_the_response_is_a_valid_protocol_response_with_inventory(notes, no_soft_source):
    response = _respond()
    parsed = protocol.parse_response(json.dumps(response).encode(), limit=5)
    assert parsed.items == response["items"]
    assert [e["corpus_id"] for e in parsed.inventory] == [local_provider.NOTES_CORPUS_ID]


@pytest.mark.django_db
def test_reward_memory_soft_preferences_join_the_ranking_when_offered(notes, monkeypatch):
    documents = [
        {
            "ref": "rm:record-1",
            "summary": "Reviewer language preferences: PR description structure in English.",
            "surfaces": [SURFACE],
        },
        {"ref": "rm:record-2", "summary": "Unrelated deployment rule.", "surfaces": []},
    ]
    monkeypatch.setattr(
        local_provider, "soft_preference_source", lambda: lambda project, **_scope: list(documents)
    )
    response = _respond()
    assert "rm:record-1" in _refs(response)
    assert "rm:record-2" not in _refs(response)
    assert [e["corpus_id"] for e in response["corpus_inventory"]] == [
        local_provider.NOTES_CORPUS_ID,
        local_provider.SOFT_CORPUS_ID,
    ]
    documents.pop(0)  # the record is retired in Reward Memory
    assert "rm:record-1" not in _refs(_respond())


@pytest.mark.django_db
def test_provider_request_parsing_rejects_malformed_requests():
    good = protocol.encode_request(
        protocol.request_document(surface=SURFACE, query="q", limit=3, context={"a": "b"})
    )
    assert local_provider.parse_request(good, project=PROJECT)["limit"] == 3
    for bad in (b"", b"[]", b'{"schema_version": "x"}', good.replace(b'"limit":3', b'"limit":99')):
        with pytest.raises(SemanticPreferenceError):
            local_provider.parse_request(bad, project=PROJECT)
    with pytest.raises(SemanticPreferenceError):  # no verified project, no corpus
        local_provider.parse_request(good, project=None)


# -- doctor and reindex -------------------------------------------------------------------


@pytest.mark.django_db
def test_doctor_report_is_read_only_and_checks_the_index(notes, django_assert_num_queries):
    report = local_provider.doctor_report(project=PROJECT)
    assert report["healthy"] is True
    assert report["active_notes"] == report["indexed_notes"] == len(NOTES)
    fulltext.remove(local_provider.namespace(PROJECT), "note:pr-structure")
    assert local_provider.doctor_report(project=PROJECT)["healthy"] is False
    preview = services.reindex_project(project=PROJECT)
    assert preview["status"] == "preview"
    assert local_provider.doctor_report(project=PROJECT)["healthy"] is False
    services.reindex_project(project=PROJECT, execute=True)
    assert local_provider.doctor_report(project=PROJECT)["healthy"] is True


@pytest.mark.django_db
def test_provider_command_answers_a_request_on_stdin(notes, no_soft_source):
    request = protocol.encode_request(
        protocol.request_document(surface=SURFACE, query=QUERY, limit=2, context={})
    ).decode()
    result = run_cli("local_preference_provider", "recall", "--project", PROJECT, stdin=request)
    assert result.code == 0
    assert result.json["schema_version"] == "semantic_preference_provider_response_v0"
    assert len(result.json["items"]) == 2
    bad = run_cli("local_preference_provider", "recall", "--project", PROJECT, stdin="garbage")
    assert bad.code == 2


@pytest.mark.django_db
def test_provider_doctor_command_exits_2_when_unhealthy(notes):
    assert run_cli("local_preference_provider", "doctor", "--project", PROJECT).code == 0
    fulltext.remove(local_provider.namespace(PROJECT), "note:pr-structure")
    result = run_cli("local_preference_provider", "doctor", "--project", PROJECT)
    assert result.code == 2
    assert result.json["code"] == "provider_unhealthy"


# -- end to end through real subprocesses ---------------------------------------------------


def _local_config(write_json, **surface_extra):
    return write_json(
        "local.json",
        {
            "schema_version": "semantic_preference_hook_config_v0",
            "enabled": True,
            "provider": {"id": "loopx_local"},
            "surfaces": {SURFACE: {"query": QUERY, "limit": 3, **surface_extra}},
        },
    )


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_end_to_end_install_add_notes_recall_and_doctor(write_json):
    installed = run_manage(
        "semantic_preference", "extension", "install", "--manifest", str(SHIPPED), "--execute"
    )
    assert json.loads(installed.stdout)["status"] == "applied"
    assert json.loads(installed.stdout)["enabled"] is True
    for note in NOTES:
        services.save_provider_note(project=PROJECT, **note)
    config = str(_local_config(write_json))

    recalled = run_manage(
        "semantic_preference", "recall", "--project", PROJECT, "--config", config,
        "--surface", SURFACE, "--execute",
    )  # fmt: skip
    assert recalled.returncode == 0, recalled.stdout
    payload = json.loads(recalled.stdout)
    assert payload["status"] == "completed"
    assert payload["provider"]["extension_id"] == "loopx-local"
    assert payload["items"][0]["preference_ref"] == "loopx-local:note:pr-structure"
    assert len(payload["items"]) <= 3
    guidance = payload["maintenance_guidance"]
    assert local_provider.NOTES_CORPUS_ID in guidance["corpus_ids"]
    assert f"loopx-local:project:{PROJECT}" not in json.dumps(guidance)

    doctor = run_manage(
        "semantic_preference", "doctor", "--project", PROJECT, "--config", config, "--execute"
    )
    assert json.loads(doctor.stdout)["status"] == "ready"

    shortcut = run_manage(
        "recall", "--project", PROJECT, "--config", config, "--surface", SURFACE,
        "--context", "repository=owner/repo", "--execute",
    )  # fmt: skip
    refs = [i["preference_ref"] for i in json.loads(shortcut.stdout)["items"]]
    assert "loopx-local:note:repo-specific" in refs


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_in_process_recall_reaches_the_test_database_through_the_provider(write_json):
    services.install_extension(manifest_path=SHIPPED, execute=True)
    services.save_provider_note(
        project=PROJECT, note_id="only", summary="PR description structure first."
    )
    config = _local_config(write_json)
    result = services.recall(config, project=PROJECT, surface=SURFACE, execute=True)
    assert result["status"] == "completed"
    assert result["items"] == [
        {"preference_ref": "loopx-local:note:only", "summary": "PR description structure first."}
    ]
    assert services.doctor(config, project=PROJECT, execute=True)["status"] == "ready"
    receipt = services.application_receipt(
        surface=SURFACE,
        application_id="pr-1",
        outcome="applied",
        preference_refs=[i["preference_ref"] for i in result["items"]],
    )
    assert "loopx-local:note:only" not in json.dumps(receipt)


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_doctor_turns_unhealthy_when_the_index_drifts(write_json):
    services.install_extension(manifest_path=SHIPPED, execute=True)
    services.save_provider_note(project=PROJECT, note_id="only", summary="Something.")
    fulltext.remove(local_provider.namespace(PROJECT), "note:only")
    result = services.doctor(_local_config(write_json), project=PROJECT, execute=True)
    assert (result["status"], result["failure_kind"]) == (
        "provider_unavailable",
        "probe_nonzero_exit",
    )


@pytest.mark.django_db
def test_a_failing_soft_preference_source_is_left_out_and_makes_doctor_unhealthy(
    notes, monkeypatch
):
    from django.db import OperationalError

    def broken(project, **_scope):
        raise OperationalError("no such table")

    monkeypatch.setattr(local_provider, "soft_preference_source", lambda: broken)
    response = _respond()
    assert _refs(response)[0] == "loopx-local:note:pr-structure"
    assert [e["corpus_id"] for e in response["corpus_inventory"]] == [
        local_provider.NOTES_CORPUS_ID
    ]
    report = local_provider.doctor_report(project=PROJECT)
    assert (report["healthy"], report["soft_preference_source"]) == (False, "failing")
