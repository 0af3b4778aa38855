import json

import pytest
from django.urls import reverse

from loopx_site.engines import fulltext
from preferences import demo_recall, services
from preferences.models import ProviderExtension, ProviderNote, SemanticPreferenceConfig
from preferences.recall import local_provider
from tests.factories import GoalFactory
from tests.preferences_recall.conftest import (
    SURFACE,
    bound_config,
    legacy_config,
    manifest,
    provider,
)

pytestmark = pytest.mark.django_db


def test_admin_changelists_load(admin_client, install):
    install(manifest("alpha", provider("valid")))
    services.save_provider_note(project="p", note_id="n1", summary="Use tables.")
    services.register_config(name="cfg", project="p", config=bound_config("alpha"), execute=True)
    for model in ("providerextension", "providernote", "semanticpreferenceconfig"):
        response = admin_client.get(reverse(f"admin:preferences_{model}_changelist"))
        assert response.status_code == 200, model


def test_admin_adds_a_config_through_the_service_and_rejects_invalid_ones(admin_client, install):
    install(manifest("alpha", provider("valid")))
    owner, other = GoalFactory(goal_id="owner"), GoalFactory(goal_id="other")
    url = reverse("admin:preferences_semanticpreferenceconfig_add")
    response = admin_client.post(
        url,
        {
            "name": "ops",
            "goal": owner.pk,
            "shared_with": [other.pk],
            "project": "p",
            "description": "",
            "config": json.dumps(bound_config("alpha")),
        },
    )
    assert response.status_code == 302
    row = SemanticPreferenceConfig.objects.get(name="ops")
    assert row.config_digest.startswith("sha256:")
    assert row.goal == owner
    assert list(row.shared_with.values_list("goal_id", flat=True)) == ["other"]
    bad = admin_client.post(
        url,
        {
            "name": "bad",
            "project": "p",
            "description": "",
            "config": json.dumps(legacy_config(provider("valid"))),
        },
    )
    assert bad.status_code == 200
    assert b"provider.argv" in bad.content
    assert not SemanticPreferenceConfig.objects.filter(name="bad").exists()
    unbound = admin_client.post(
        url,
        {
            "name": "unbound",
            "project": "p",
            "description": "",
            "config": json.dumps(bound_config("not-installed")),
        },
    )
    assert unbound.status_code == 200
    assert b"provider.extension_id" in unbound.content
    assert not SemanticPreferenceConfig.objects.filter(name="unbound").exists()


@pytest.mark.parametrize(
    "provider_extra",
    [
        {"argv": ["/bin/sh", "-c", "cat /proc/$PPID/environ"]},
        {"args": ["--pythonpath", "/tmp/evil", "--settings", "evil"]},
        {"extension_state_file": "/tmp/state.json"},
        {"probe_argv": ["/bin/sh", "-c", "id"]},
        {"timeout_seconds": 120},
    ],
)
def test_the_admin_form_refuses_every_executable_provider_field(admin_client, provider_extra):
    config = bound_config("alpha")
    config["provider"].update(provider_extra)
    response = admin_client.post(
        reverse("admin:preferences_semanticpreferenceconfig_add"),
        {"name": "evil", "project": "p", "description": "", "config": json.dumps(config)},
    )
    assert response.status_code == 200
    assert b"config_invalid" in response.content
    assert not SemanticPreferenceConfig.objects.filter(name="evil").exists()


def test_admin_note_save_indexes_and_delete_unindexes(admin_client):
    url = reverse("admin:preferences_providernote_add")
    response = admin_client.post(
        url,
        {
            "project": "p",
            "note_id": "n1",
            "summary": "Use tables for comparisons.",
            "body": "",
            "surfaces": json.dumps([SURFACE]),
            "context": "{}",
            "active": "on",
        },
    )
    assert response.status_code == 302
    assert [h.ref for h in fulltext.search(local_provider.namespace("p"), "tables")] == ["note:n1"]
    note = ProviderNote.objects.get()
    delete = reverse("admin:preferences_providernote_delete", args=[note.pk])
    assert admin_client.post(delete, {"post": "yes"}).status_code == 302
    assert fulltext.count(local_provider.namespace("p")) == 0


def test_admin_note_form_rejects_bad_surfaces(admin_client):
    response = admin_client.post(
        reverse("admin:preferences_providernote_add"),
        {
            "project": "p",
            "note_id": "n1",
            "summary": "x",
            "body": "",
            "surfaces": json.dumps(["nodot"]),
            "context": "{}",
        },
    )
    assert response.status_code == 200
    assert ProviderNote.objects.count() == 0


def test_admin_actions_go_through_services(admin_client, install):
    install(manifest("alpha", provider("valid")))
    ext = ProviderExtension.objects.get()
    changelist = reverse("admin:preferences_providerextension_changelist")
    admin_client.post(changelist, {"action": "deactivate", "_selected_action": [ext.pk]})
    assert ProviderExtension.objects.get().active is False
    # Enabling is an operator's shell step, not an admin action.
    admin_client.post(changelist, {"action": "activate", "_selected_action": [ext.pk]})
    assert ProviderExtension.objects.get().active is False

    services.save_provider_note(project="p", note_id="n1", summary="Use tables.")
    note = ProviderNote.objects.get()
    admin_client.post(
        reverse("admin:preferences_providernote_changelist"),
        {"action": "retire", "_selected_action": [note.pk]},
    )
    assert ProviderNote.objects.get().active is False
    assert fulltext.count(local_provider.namespace("p")) == 0


def test_extensions_cannot_be_added_or_deleted_in_admin(admin_client, install):
    install(manifest("alpha", provider("valid")))
    assert admin_client.get(reverse("admin:preferences_providerextension_add")).status_code == 403
    pk = ProviderExtension.objects.get().pk
    delete = reverse("admin:preferences_providerextension_delete", args=[pk])
    assert admin_client.get(delete).status_code == 403


def test_demo_loader_is_idempotent_and_ready_to_recall():
    GoalFactory(goal_id="demo")
    logs = []
    first = demo_recall.load(log=logs.append)
    second = demo_recall.load(log=logs.append)
    assert {**first, "status": "kept", "objects": second["objects"]} == second
    assert set(first["objects"].values()) == {"created"}
    assert set(second["objects"].values()) == {"kept"}
    assert ProviderExtension.objects.get(extension_id="loopx-local").active is True
    assert ProviderNote.objects.filter(project="loopx-demo").count() == len(demo_recall.NOTES)
    row = services.registered_config("demo")
    assert (row.goal.goal_id, row.shared_with.count()) == ("demo", 0)
    for surface in ("issue_fix.pr_description", "agent_workflow.turn_admission"):
        preview = services.recall(row, project=row.project, surface=surface)
        assert preview["status"] == "preview_ready"
        assert preview["provider"]["extension_id"] == "loopx-local"
    assert logs
