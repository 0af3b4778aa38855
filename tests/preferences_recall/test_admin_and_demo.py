import json

import pytest
from django.urls import reverse

from loopx_site.core import fulltext
from preferences import demo_recall, services
from preferences.models import ProviderExtension, ProviderNote, SemanticPreferenceConfig
from preferences.recall import local_provider
from tests.preferences_recall.conftest import SURFACE, legacy_config, manifest, provider

pytestmark = pytest.mark.django_db


def test_admin_changelists_load(admin_client, install):
    install(manifest("alpha", provider("valid")))
    services.save_provider_note(project="p", note_id="n1", summary="Use tables.")
    services.register_config(
        name="cfg", project="p", config=legacy_config(provider("valid")), execute=True
    )
    for model in ("providerextension", "providernote", "semanticpreferenceconfig"):
        response = admin_client.get(reverse(f"admin:preferences_{model}_changelist"))
        assert response.status_code == 200, model


def test_admin_adds_a_config_through_the_service_and_rejects_invalid_ones(admin_client):
    url = reverse("admin:preferences_semanticpreferenceconfig_add")
    config = legacy_config(provider("valid"))
    response = admin_client.post(
        url, {"name": "ops", "project": "p", "description": "", "config": json.dumps(config)}
    )
    assert response.status_code == 302
    row = SemanticPreferenceConfig.objects.get(name="ops")
    assert row.config_digest.startswith("sha256:")
    config["provider"]["extension_id"] = "x"
    bad = admin_client.post(
        url, {"name": "bad", "project": "p", "description": "", "config": json.dumps(config)}
    )
    assert bad.status_code == 200
    assert b"provider.argv" in bad.content
    assert not SemanticPreferenceConfig.objects.filter(name="bad").exists()


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
    install(manifest("alpha", provider("valid")), active=False)
    ext = ProviderExtension.objects.get()
    changelist = reverse("admin:preferences_providerextension_changelist")
    admin_client.post(changelist, {"action": "activate", "_selected_action": [ext.pk]})
    assert ProviderExtension.objects.get().active is True
    admin_client.post(changelist, {"action": "deactivate", "_selected_action": [ext.pk]})
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
    logs = []
    first = demo_recall.load(log=logs.append)
    second = demo_recall.load(log=logs.append)
    assert first == second
    assert ProviderExtension.objects.get(extension_id="loopx-local").active is True
    assert ProviderNote.objects.filter(project="loopx-demo").count() == len(demo_recall.NOTES)
    row = services.registered_config("demo")
    for surface in ("issue_fix.pr_description", "agent_workflow.turn_admission"):
        preview = services.recall(row, project=row.project, surface=surface)
        assert preview["status"] == "preview_ready"
        assert preview["provider"]["extension_id"] == "loopx-local"
    assert logs
