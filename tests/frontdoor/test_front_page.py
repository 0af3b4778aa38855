"""The front page at ``/`` and the admin's own words (verbose app labels)."""

import pytest


@pytest.mark.django_db
def test_front_page_explains_the_service_and_links_admin_dashboard_and_api_docs(client):
    response = client.get("/")
    assert response.status_code == 200
    body = response.content.decode()
    assert "LoopX Memory" in body
    for href in ('href="/admin/"', 'href="/admin/dashboard/"', 'href="/api/docs/"'):
        assert href in body
    for word in ("Goal", "Agent", "Turn"):
        assert f"<dt>{word}</dt>" in body


def test_admin_view_site_link_leads_to_the_front_page(admin_client):
    page = admin_client.get("/admin/").content.decode()
    assert 'href="/"' in page


def test_admin_index_shows_readable_app_names(admin_client):
    page = admin_client.get("/admin/").content.decode()
    labels = ("Reward Memory", "Agent preferences", "Post-writeback hooks", "Agent Turn Recall")
    for label in labels:
        assert label in page
    assert "Reward_Memory" not in page
    assert "REWARD_MEMORY" not in page


@pytest.mark.parametrize(
    "query",
    ["?no_such_field=1", "?created_at__gte=not-a-date"],
)
def test_a_bad_admin_filter_is_a_400_naming_it_with_one_warning(admin_client, caplog, query):
    response = admin_client.get(f"/admin/reward_memory/memoryrecord/{query}")
    assert response.status_code == 400
    name = query[1:].split("=", 1)[0]
    assert name in response.content.decode()
    assert 'href="/admin/reward_memory/memoryrecord/"' in response.content.decode()
    refusals = [r for r in caplog.records if "admin list filter refused" in r.getMessage()]
    assert len(refusals) == 1
    assert refusals[0].levelname == "WARNING"
    assert not [r for r in caplog.records if r.levelname == "ERROR"]


def test_a_forbidden_admin_lookup_is_a_400_not_an_error_with_a_traceback(admin_client, caplog):
    response = admin_client.get("/admin/auth/user/?password__startswith=a")
    assert response.status_code == 400
    assert not [r for r in caplog.records if r.levelname == "ERROR"]
    assert not [r for r in caplog.records if r.exc_info]


def test_admin_messages_keep_ids_as_written_under_one_heading(admin_client, goal, agent):
    from preferences import services
    from preferences.models import PreferenceSubject

    services.remember(
        goal_id="demo",
        agent_id="author",
        key="pr.description.language",
        statement="Write PR descriptions in English.",
        source_ref="issue:1",
        source_quote="please use English",
        expected_revision="none",
        operation_id="op-front-1",
        execute=True,
    )
    subject = PreferenceSubject.objects.get(key="pr.description.language")
    url = "/admin/preferences/preferencesubject/"
    form = admin_client.post(url, {"action": "retire_selected", "_selected_action": [subject.pk]})
    assert form.content.decode().count("<h1>") == 1  # one "Retire preferences" heading
    done = admin_client.post(
        url,
        {
            "action": "retire_selected",
            "_selected_action": [subject.pk],
            f"seen_revision_{subject.pk}": subject.revision,
            "source_ref": "issue:2",
            "source_quote": "no longer needed",
            "apply": "1",
        },
        follow=True,
    )
    page = done.content.decode()
    assert "pr.description.language: applied" in page
    assert "Pr.description.language" not in page


def test_goals_offer_no_delete_that_cannot_succeed(admin_client, goal):
    page = admin_client.get(f"/admin/core/goal/{goal.pk}/change/").content.decode()
    assert "deletelink" not in page
    assert admin_client.get(f"/admin/core/goal/{goal.pk}/delete/").status_code == 403
