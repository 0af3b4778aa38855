"""Registry writes in the admin: model permissions decide, the service writes."""

import pytest
from django.contrib.auth.models import Permission

from loopx_site.core import services
from loopx_site.core.models import Agent, Goal


@pytest.fixture
def goal_at_s1(db):
    return services.register_goal(goal_id="demo", agent_ids=["author"], state_ref="s1").goal


def change_form(goal, **fields):
    data = {
        "state_ref": goal.state_ref,
        "instance_id": goal.instance_id,
        "add_agents": "",
        "agents-TOTAL_FORMS": "1",
        "agents-INITIAL_FORMS": "1",
        "agents-MIN_NUM_FORMS": "0",
        "agents-MAX_NUM_FORMS": "1000",
        "agents-0-id": str(goal.agents.get().pk),
        "agents-0-goal": str(goal.pk),
    }
    data.update(fields)
    return data


def test_operator_changes_state_ref_and_adds_agents_through_the_service(admin_client, goal_at_s1):
    response = admin_client.post(
        f"/admin/core/goal/{goal_at_s1.pk}/change/",
        change_form(goal_at_s1, state_ref="s2", add_agents="reviewer, tester"),
        follow=True,
    )
    assert response.status_code == 200
    goal_at_s1.refresh_from_db()
    assert goal_at_s1.state_ref == "s2"
    assert sorted(goal_at_s1.agents.values_list("agent_id", flat=True)) == [
        "author",
        "reviewer",
        "tester",
    ]
    assert "migrate-scope" in response.content.decode()  # the warning is shown


def test_operator_registers_a_new_goal_with_agents(admin_client, db):
    response = admin_client.post(
        "/admin/core/goal/add/",
        {
            "goal_id": "fresh",
            "state_ref": "",
            "instance_id": "",
            "add_agents": "a b",
            "agents-TOTAL_FORMS": "0",
            "agents-INITIAL_FORMS": "0",
            "agents-MIN_NUM_FORMS": "0",
            "agents-MAX_NUM_FORMS": "1000",
        },
    )
    assert response.status_code == 302
    assert sorted(
        Agent.objects.filter(goal__goal_id="fresh").values_list("agent_id", flat=True)
    ) == [
        "a",
        "b",
    ]


def test_bad_agent_id_is_a_form_error_and_nothing_is_written(admin_client, goal_at_s1):
    response = admin_client.post(
        f"/admin/core/goal/{goal_at_s1.pk}/change/",
        change_form(goal_at_s1, add_agents="ok, bad/id"),
    )
    assert response.status_code == 200  # the form again, with the error
    assert "add_agents" in response.context["adminform"].form.errors
    assert list(goal_at_s1.agents.values_list("agent_id", flat=True)) == ["author"]


def test_staff_without_change_permission_cannot_edit_the_registry(
    client, django_user_model, goal_at_s1
):
    user = django_user_model.objects.create_user(
        "viewer", password="pw-for-tests-only", is_staff=True
    )
    user.user_permissions.add(Permission.objects.get(codename="view_goal"))
    client.login(username="viewer", password="pw-for-tests-only")
    response = client.post(
        f"/admin/core/goal/{goal_at_s1.pk}/change/", change_form(goal_at_s1, state_ref="x")
    )
    assert response.status_code == 403
    assert Goal.objects.get(pk=goal_at_s1.pk).state_ref == "s1"
