"""Operator API access needs the explicit `core.operate_api` permission (or superuser).

Each case logs in for real (Django session, as the interactive docs do) and calls the
API over the test client's HTTP stack.
"""

import pytest
from django.contrib.auth.models import Permission
from rest_framework.test import APIClient

from loopx_site.core import services
from loopx_site.core.models import Goal

READ = "/api/v1/goals/other/agents/author/preferences/"


@pytest.fixture
def goals(db):
    services.register_goal(goal_id="demo", agent_ids=["author"])
    services.register_goal(goal_id="other", agent_ids=["author"])


def login(django_user_model, username, *, staff=True, superuser=False, perm=False, csrf=False):
    user = django_user_model.objects.create_user(
        username, password="pw-for-tests-only", is_staff=staff, is_superuser=superuser
    )
    if perm:
        user.user_permissions.add(
            Permission.objects.get(codename="operate_api", content_type__app_label="core")
        )
    client = APIClient(enforce_csrf_checks=csrf)
    assert client.login(username=username, password="pw-for-tests-only")
    return client


def test_staff_without_the_permission_is_refused_reads_and_writes(goals, django_user_model):
    client = login(django_user_model, "staff-only")
    for response in (
        client.get("/api/v1/goals/"),
        client.get(READ),
        client.post(
            "/api/v1/goals/", {"goal_id": "x", "agent_ids": ["a"], "execute": True}, format="json"
        ),
    ):
        assert response.status_code == 403
        assert response.json()["code"] == "scope_forbidden"
        assert "core.operate_api" in response.json()["error"]
    assert not Goal.objects.filter(goal_id="x").exists()


def test_staff_with_the_permission_operates_every_goal(goals, django_user_model):
    client = login(django_user_model, "operator", perm=True)
    assert client.get(READ).status_code == 200
    listed = client.get("/api/v1/goals/").json()["goals"]
    assert [g["goal_id"] for g in listed] == ["demo", "other"]
    response = client.post(
        "/api/v1/goals/", {"goal_id": "x", "agent_ids": ["a"], "execute": True}, format="json"
    )
    assert response.status_code == 201


def test_superuser_operates_without_an_explicit_permission(goals, django_user_model):
    client = login(django_user_model, "root-account", superuser=True)
    assert client.get(READ).status_code == 200
    assert client.get("/api/v1/goals/").status_code == 200


def test_the_permission_without_the_staff_flag_also_works(goals, django_user_model):
    client = login(django_user_model, "api-operator", staff=False, perm=True)
    assert client.get(READ).status_code == 200


def test_inactive_account_with_the_permission_is_refused(goals, django_user_model):
    client = login(django_user_model, "gone", perm=True)
    django_user_model.objects.filter(username="gone").update(is_active=False)
    assert client.get(READ).status_code in (401, 403)


def test_session_write_without_csrf_token_is_csrf_failed(goals, django_user_model):
    client = login(django_user_model, "operator", perm=True, csrf=True)
    response = client.post(
        "/api/v1/goals/", {"goal_id": "x", "agent_ids": ["a"], "execute": True}, format="json"
    )
    assert response.status_code == 403
    body = response.json()
    assert body["code"] == "csrf_failed"
    assert body["status"] == "forbidden"
    assert not Goal.objects.filter(goal_id="x").exists()
