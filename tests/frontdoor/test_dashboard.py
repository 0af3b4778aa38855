"""The operator dashboard: per Goal panels, one query each, read-only, no private text."""

import io

import pytest
from django.core.management import call_command

from hooks.models import HookDispatch
from loopx_site.core import dashboard_selectors
from preferences.models import PreferenceOperation, PreferenceSubject
from reward_memory.models import MemoryRecord


@pytest.fixture
def demo(db):
    call_command("loopx_demo", stdout=io.StringIO())


@pytest.fixture
def operator(client, django_user_model):
    user = django_user_model.objects.create_superuser("op", password="pw-for-tests-only")
    client.force_login(user)
    return client


def test_the_selectors_read_one_query_per_panel(demo, django_assert_num_queries):
    with django_assert_num_queries(6):
        data = dashboard_selectors.dashboard()
    (goal,) = data["goals"]
    assert goal["goal_id"] == "demo"
    assert goal["agents"] == ["author", "reviewer"]
    assert [(s["agent_ref"], s["revision"]) for s in goal["scopes"]] == [("author", 2)]
    assert goal["scopes"][0]["last_change"] is not None
    assert {c["corpus_id"] for c in goal["corpora"]} == {
        "loopx-demo-pr-description",
        "loopx-demo-review-policy",  # the demo's hard policy (Reward Memory authority)
        "loopx-demo-turn-admission",
    }
    health = {c["corpus_id"]: c["health"] for c in data["corpora"]}
    assert health["loopx-demo-pr-description"]["corpus_present"] is True
    assert health["loopx-demo-pr-description"]["result_readback_verified"] is True
    assert health["loopx-demo-pr-description"]["index_present"] is None  # not probed here


def test_failures_are_counted_per_code_and_linked(demo, operator):
    dispatch = HookDispatch.objects.first()
    HookDispatch.objects.filter(pk=dispatch.pk).update(
        status="failed", failure_code="producer_timed_out"
    )
    (goal,) = dashboard_selectors.dashboard()["goals"]
    assert [(r["failure_code"], r["count"]) for r in goal["hook_failures"]] == [
        ("producer_timed_out", 1)
    ]
    page = operator.get("/admin/dashboard/")
    assert page.status_code == 200
    html = page.content.decode()
    link = "/admin/hooks/hookdispatch/?status__exact=failed&amp;failure_code=producer_timed_out"
    assert link in html
    changelist = operator.get(link.replace("&amp;", "&"))
    assert changelist.status_code == 200
    assert dispatch.dispatch_id in changelist.content.decode()


def test_page_is_read_only_bounded_and_shows_no_private_text(
    demo, operator, django_assert_max_num_queries
):
    with django_assert_max_num_queries(6 + 3):  # panels + session, user, admin context
        page = operator.get("/admin/dashboard/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "lx-ok" in html
    assert "lx-unknown" in html
    for subject in PreferenceSubject.objects.all():
        assert subject.statement not in html
    for op in PreferenceOperation.objects.all():
        assert op.source_quote not in html
    for record in MemoryRecord.objects.all():
        assert record.summary not in html
    assert operator.post("/admin/dashboard/").status_code == 405
    index = operator.get("/admin/")
    assert 'href="/admin/dashboard/"' in index.content.decode()


def test_every_link_on_the_page_opens(demo, operator):
    import re

    html = operator.get("/admin/dashboard/").content.decode()
    links = set(re.findall(r'href="(/admin/[^"]+)"', html))
    assert len(links) > 10
    for link in links:
        response = operator.get(link.replace("&amp;", "&"))
        assert response.status_code == 200, link
        assert "e=1" not in response.get("Location", ""), link  # no invalid-lookup redirect


def test_staff_without_view_permissions_is_refused(demo, client, django_user_model):
    user = django_user_model.objects.create_user("clerk", password="pw-for-tests-only")
    user.is_staff = True
    user.save()
    client.force_login(user)
    assert client.get("/admin/dashboard/").status_code == 403
