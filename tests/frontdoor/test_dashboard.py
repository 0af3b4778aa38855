"""The operator dashboard: per Goal panels, one query each, read-only, no private text."""

import pytest

from hooks.models import HookDispatch
from loopx_site.core import dashboard_selectors
from preferences.models import PreferenceOperation, PreferenceSubject
from reward_memory import dashboard as reward_memory_dashboard
from reward_memory.models import MemoryRecord


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
    # six panels + session, user, admin context; the experiments panel: one read of the
    # Goal's bindings, one route read per binding
    # the provider deletes panel: one read of the outbox (its corpora only when it holds
    # rows); and the review to-do: six counts (the fifth, the candidates awaiting the
    # signed-in operator), and one review read per operator edit
    from reward_memory.models import ExperimentBinding, OperatorControl

    edits = OperatorControl.objects.filter(action="edit").count()
    budget = 6 + 3 + 1 + ExperimentBinding.objects.count() + 1 + 6 + 2 * edits
    with django_assert_max_num_queries(budget):
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


@pytest.fixture
def moved(demo):
    """The README's state move: the Goal points to a new state_ref and the author's
    subjects are migrated into the new (live) scope."""
    from loopx_site.core import services as core_services
    from preferences import services as preference_services

    core_services.register_goal(
        goal_id="demo",
        agent_ids=["author", "reviewer"],
        state_ref="goals/demo/state-v2.json",
        execute=True,
    )
    preference_services.migrate_scope(
        goal_id="demo", agent_id="author", operation_id="move-1", execute=True
    )


def test_after_a_state_move_the_live_scope_is_marked_and_earlier_ones_fold(moved, operator):
    (goal,) = dashboard_selectors.dashboard()["goals"]
    assert [(s["agent_ref"], s["state_ref"]) for s in goal["scopes"]] == [
        ("author", "goals/demo/state-v2.json")
    ]
    assert [s["agent_ref"] for s in goal["earlier_scopes"]] == ["author"]
    assert goal["earlier_scopes"][0]["state_ref"] != "goals/demo/state-v2.json"
    html = operator.get("/admin/dashboard/").content.decode()
    assert "earlier scopes (1)" in html
    assert html.count('class="lx-badge">live<') == 1


def test_scope_and_subject_lists_mark_and_filter_the_live_scope(moved, operator):
    live = operator.get("/admin/preferences/preferencescope/?live=yes").content.decode()
    earlier = operator.get("/admin/preferences/preferencescope/?live=no").content.decode()
    assert "goals/demo/state-v2.json" in live
    assert "goals/demo/state-v2.json" not in earlier
    subjects = PreferenceSubject.objects.filter(scope__goal_ref="demo", scope__agent_ref="author")
    live_rows = operator.get("/admin/preferences/preferencesubject/?live=yes").context["cl"]
    earlier_rows = operator.get("/admin/preferences/preferencesubject/?live=no").context["cl"]
    live_keys = {s.key for s in live_rows.result_list}
    earlier_scopes = {s.scope.state_ref for s in earlier_rows.result_list}
    assert live_keys == {s.key for s in subjects if s.scope.state_ref.endswith("state-v2.json")}
    assert "goals/demo/state-v2.json" not in earlier_scopes
    assert all(s.is_live for s in live_rows.result_list)
    assert not any(s.is_live for s in earlier_rows.result_list)


def test_the_dashboard_explains_each_health_state(demo, operator):
    html = operator.get("/admin/dashboard/").content.decode()
    assert 'id="health-legend"' in html
    for state in reward_memory_dashboard.HEALTH_STATES:
        assert f"<dt>{state.replace('_', ' ')}</dt>" in html
    assert "<dt>not probed</dt>" in html
    assert "One query per panel" not in html


def test_probe_now_runs_the_read_only_preflight_and_reports_it(demo, operator):
    from reward_memory.models import Corpus

    corpus = Corpus.objects.get(corpus_id="loopx-demo-pr-description")
    html = operator.get("/admin/dashboard/").content.decode()
    probe = f"/admin/reward_memory/corpus/{corpus.pk}/probe/"
    assert f'action="{probe}"' in html
    before = (MemoryRecord.objects.count(), PreferenceOperation.objects.count())
    assert operator.get(probe).status_code == 405  # a probe is a POST from the button
    done = operator.post(probe, follow=True)
    assert done.status_code == 200
    text = done.content.decode()
    assert "loopx-demo-pr-description probed: corpus present: yes; index present: yes" in text
    assert (MemoryRecord.objects.count(), PreferenceOperation.objects.count()) == before


def test_probe_needs_view_permission_on_corpora(demo, client, django_user_model):
    from reward_memory.models import Corpus

    user = django_user_model.objects.create_user("viewer", password="pw", is_staff=True)
    client.force_login(user)
    corpus = Corpus.objects.get(corpus_id="loopx-demo-pr-description")
    assert client.post(f"/admin/reward_memory/corpus/{corpus.pk}/probe/").status_code == 403


def test_the_experiments_panel_shows_each_agents_binding_route_and_automation(demo, operator):
    html = operator.get("/admin/dashboard/").content.decode()
    assert 'id="experiments-demo"' in html
    panel = html.split('id="experiments-demo"', 1)[1].split("</table>", 1)[0]
    assert "<td>author</td>" in panel
    assert "<td>enabled</td>" in panel
    assert "<td>available</td>" in panel
    assert "on (" in panel  # automation with its provenance
