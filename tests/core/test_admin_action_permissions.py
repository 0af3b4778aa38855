"""Issue 20 item 1: every admin action of every app is permission-checked twice.

The walk is over ``admin.site._registry`` (nothing hard-coded): every action declares
``allowed_permissions``; a staff account holding only *view* permissions on every model
is refused every action, add form and change form, and nothing in the database changes.
Reward Memory's actions are also refused when called directly (as if a declaration had
been forgotten), because the service re-checks the signed-in account.
"""

import io

import pytest
from django.apps import apps
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.core.management import call_command
from django.test import RequestFactory
from django.urls import reverse

from loopx_site.core import background, clock
from loopx_site.core import services as core_services
from loopx_site.core.models import Agent, Goal, HostToken
from reward_memory import principals
from reward_memory import services as rm
from reward_memory.models import (
    ApplicationReceipt,
    Corpus,
    IngestEvent,
    MemoryRecord,
    OperatorControl,
    PendingIngest,
    ProviderDeletion,
    RecallReceipt,
    ReflectionCandidate,
)

SKIPPED_TABLES = {"sessions.session"}  # the test client's own session rows


def registry():
    admin.autodiscover()  # the URLconf does this; make the walk independent of it
    return sorted(admin.site._registry.items(), key=lambda item: item[0]._meta.label)


def snapshot() -> dict:
    """Every row of every managed table (auto-created m2m tables included)."""
    tables = {}
    for model in apps.get_models(include_auto_created=True):
        if not model._meta.managed or model._meta.label_lower in SKIPPED_TABLES:
            continue
        tables[model._meta.label_lower] = list(model.objects.order_by("pk").values())
    return tables


def assert_unchanged(before: dict, what: str) -> None:
    after = snapshot()
    changed = [name for name in before if before[name] != after[name]]
    assert not changed, f"{what} changed {changed}"


def _fill_gaps() -> None:
    """A row of each model the demo leaves empty, so every action has a real target."""
    now = clock.now()
    goal = Goal.objects.get(goal_id="demo")
    author = Agent.objects.get(goal=goal, agent_id="author")
    operator = principals.operator_account("user:operator", field="actor")
    Group.objects.get_or_create(name="readers")
    background.record_run("loopx.walk", dict)  # a background task's journal row
    if not HostToken.objects.exists():
        core_services.create_token(goal_id="demo", agent_id="author")
    corpus = Corpus.objects.get(corpus_id="loopx-demo-turn-admission")
    rm.bind_role(
        corpus_id=corpus.corpus_id,
        role="reviewer",
        host_token=HostToken.objects.first(),
        operator=operator,
    )
    from reward_memory.services.lineage import close_lineage

    close_lineage(
        corpus=corpus,
        candidate=None,
        candidate_ref="cand_walk_closed",
        reason="reject",
        actor=operator.actor_ref,
        now=now,
    )
    event = IngestEvent.objects.filter(goal=goal, agent=author).first()
    PendingIngest.objects.get_or_create(
        event=event,
        defaults={
            "goal": goal,
            "agent": author,
            "reason": "provider_unavailable",
            "created_at": now,
            "last_attempt_at": now,
        },
    )
    recall = RecallReceipt.objects.first()  # the turn recall demo's
    ApplicationReceipt.objects.get_or_create(
        application_receipt_id="rma_walk",
        defaults={
            "recall": recall,
            "corpus": recall.corpus,
            "decision": "ignore",
            "status": "not_applied",
            "receipt": {},
            "created_at": now,
        },
    )
    record = MemoryRecord.objects.filter(corpus=corpus).first()
    ProviderDeletion.objects.get_or_create(  # a failed provider delete (its retry action)
        record=record,
        defaults={
            "provider_id": record.provider_id,
            "reason": "retired",
            "state": "failed",
            "attempts": 24,
            "failure_kind": "unavailable",
            "next_attempt_at": now,
            "created_at": now,
            "updated_at": now,
        },
    )
    OperatorControl.objects.get_or_create(
        control_id="rmoc_walk",
        defaults={
            "record": record,
            "corpus": corpus,
            "action": "retire",
            "control_ref": "demo-operator-control",
            "operator": operator.actor_ref,
            "document": {},
            "created_at": now,
        },
    )
    ReflectionCandidate.objects.get_or_create(
        agent=author,
        reflection_digest="sha256:" + "0" * 64,
        defaults={
            "goal": goal,
            "turn_instance_id": "turn-walk",
            "surface": "agent_workflow.turn_admission",
            "reflection": {},
            "status": "awaiting_evidence_validation",
            "created_at": now,
            "updated_at": now,
        },
    )


@pytest.fixture
def rows(db):
    """The demo (as ``make run`` loads it) plus a row of every model it leaves empty."""
    call_command("loopx_demo", "--operator", "operator", stdout=io.StringIO())
    _fill_gaps()
    missing = [
        model._meta.label
        for model, _ in registry()
        if model._meta.managed and not model.objects.exists()
    ]
    assert not missing, f"no row to act on for {missing}: add one in _fill_gaps"


@pytest.fixture
def viewer(rows, client):
    """A staff account holding every *view* permission and nothing else."""
    user = get_user_model().objects.create_user("viewer", password="pw-for-tests-only")
    user.is_staff = True
    user.save()
    user.user_permissions.set(Permission.objects.filter(codename__startswith="view_"))
    client.force_login(user)
    return client, user


def _request(user, data=None):
    request = RequestFactory().post("/admin/", data or {})
    request.user = user
    return request


def test_every_admin_action_declares_the_permission_it_needs(db):
    undeclared = [
        f"{model._meta.label}.{name}"
        for model, model_admin in registry()
        for _func, name, _desc in model_admin._get_base_actions()
        if not getattr(_func, "allowed_permissions", None)
    ]
    assert not undeclared, f"actions without permissions=[...]: {undeclared}"
    assert len(registry()) > 20  # the walk saw every app's admin


def test_a_view_only_account_is_refused_every_admin_action_and_nothing_changes(viewer):
    client, user = viewer
    superuser = get_user_model().objects.get(username="operator")
    walked = []
    for model, model_admin in registry():
        opts = model._meta
        url = reverse(f"admin:{opts.app_label}_{opts.model_name}_changelist")
        row = model.objects.order_by("pk").first() if opts.managed else None
        offered = model_admin.get_actions(_request(user))
        for _func, name, _desc in model_admin._get_base_actions():
            assert name not in offered, f"{opts.label}.{name} is offered to a view-only account"
            if opts.managed and name != "delete_selected":  # the app's own actions are
                # real: the superuser is offered them (read-only admins offer no delete)
                assert name in model_admin.get_actions(_request(superuser)), (opts.label, name)
            before = snapshot()
            selected = [row.pk] if row is not None else ["1"]
            for extra in ({}, {"index": "0"}):  # the confirmation and the direct variant
                response = client.post(
                    url,
                    {
                        "action": name,
                        "_selected_action": selected,
                        "post": "yes",  # delete_selected's confirmation
                        "control_ref": "demo-operator-control",
                        "reasoning_summary": "walk",
                        "edited_content_summary": "walk",
                        "apply": "1",
                        **extra,
                    },
                )
                assert response.status_code in (200, 302, 403), (opts.label, name)
            assert_unchanged(before, f"{opts.label}.{name} by a view-only account")
            walked.append(f"{opts.label}.{name}")
    assert "reward_memory.AuthorityCheckpoint.revoke" in walked
    assert "reward_memory.MemoryRecord.retire" in walked
    assert "hooks.HookIntent.admit_selected" in walked


def test_a_view_only_account_cannot_add_or_change_through_any_admin_form(viewer):
    client, _user = viewer
    before = snapshot()
    for model, _model_admin in registry():
        opts = model._meta
        add = client.post(reverse(f"admin:{opts.app_label}_{opts.model_name}_add"), {})
        assert add.status_code == 403, (opts.label, add.status_code)
        row = model.objects.order_by("pk").first() if opts.managed else None
        if row is not None:
            change_url = reverse(f"admin:{opts.app_label}_{opts.model_name}_change", args=[row.pk])
            assert client.post(change_url, {}).status_code == 403, opts.label
    assert_unchanged(before, "admin add/change forms posted by a view-only account")


def test_checkpoint_grant_and_role_binding_forms_need_the_add_permission(viewer):
    client, user = viewer
    token = HostToken.objects.first()
    corpus = Corpus.objects.get(corpus_id="loopx-demo-pr-description")
    grant = {
        "checkpoint_id": "walk-grant",
        "project": "loopx-demo",
        "actor": "user:walk",
        "role": "core_contributor",
        "action_scopes": "issue_fix.request_reproduction",
    }
    bind = {"corpus": corpus.pk, "role": "owner", "host_token": token.pk}
    checkpoint_url = reverse("admin:reward_memory_authoritycheckpoint_add")
    binding_url = reverse("admin:reward_memory_corpusrolebinding_add")
    before = snapshot()
    assert client.post(checkpoint_url, grant).status_code == 403
    assert client.post(binding_url, bind).status_code == 403
    assert_unchanged(before, "grant/bind forms posted by a view-only account")
    user.user_permissions.add(
        *Permission.objects.filter(
            codename__in=["add_authoritycheckpoint", "add_corpusrolebinding"]
        )
    )
    assert client.post(checkpoint_url, grant).status_code == 302
    assert client.post(binding_url, bind).status_code == 302
    from reward_memory.models import AuthorityCheckpoint, CorpusRoleBinding

    assert AuthorityCheckpoint.objects.get(checkpoint_id="walk-grant").verified_by == (
        "user:viewer"
    )
    assert CorpusRoleBinding.objects.filter(
        corpus=corpus, role="owner", granted_by="user:viewer"
    ).exists()


def _form_for(model) -> dict:
    """What an action's own confirmation form would post: preference retire/correct
    write only from their submitted form (the operator's source and the revision seen)."""
    if model._meta.label != "preferences.PreferenceSubject":
        return {}
    data = {"apply": "1", "source_ref": "walk", "source_quote": "walk", "statement": "walk"}
    for subject in model.objects.all():
        data[f"seen_revision_{subject.pk}"] = str(subject.revision)
    return data


def test_actions_called_directly_are_refused_by_their_services(viewer):
    """The second check: even an action whose declaration was forgotten (called here
    without Django's permission filter) reaches a service that refuses the account."""
    _client, user = viewer
    called = []
    for model, model_admin in registry():
        for func, name, _desc in model_admin._get_base_actions():
            if name == "delete_selected":  # Django's own, which checks delete itself
                continue
            messages = []
            model_admin.message_user = lambda request, text, level=None, _m=messages, **kw: (
                _m.append(str(text))
            )
            try:
                before = snapshot()
                request = _request(
                    user,
                    {
                        "control_ref": "demo-operator-control",
                        "reasoning_summary": "walk",
                        "edited_content_summary": "walk",
                        **_form_for(model),
                    },
                )
                func(model_admin, request, model.objects.order_by("pk"))
            finally:
                del model_admin.message_user
            assert_unchanged(before, f"{model._meta.label}.{name} called directly")
            assert any("permission_required" in m for m in messages), (name, messages)
            called.append(f"{model._meta.label}.{name}")
    assert {name.split(".", 1)[1] for name in called} == {
        "HostToken.revoke",
        "Goal.erase_memory",
        "HookIntent.admit_selected",
        "HookIntent.reject_selected",
        "HookDispatch.replay_selected",
        "Candidate.review_accept",
        "Candidate.review_reject",
        "Candidate.review_no_write",
        "Review.apply_selected",
        "ProviderExtension.deactivate",
        "ProviderNote.retire",
        "AuthorityCheckpoint.revoke",
        "CorpusRoleBinding.unbind",
        "LineageClosure.reopen",
        "PendingIngest.retry",
        "ProviderDeletion.retry",
        "PreferenceSubject.retire_selected",
        "PreferenceSubject.correct_selected",
        "PeriodicTask.enable_tasks",
        "PeriodicTask.disable_tasks",
        "ReflectionCandidate.record_validation_passed",
        "ReflectionCandidate.record_validation_failed",
        *(f"ReviewQueueItem.{a}" for a in ("accept", "edit", "reject", "no_write", "apply")),
        *(
            f"MemoryRecord.{a}"
            for a in ("revoke", "retire", "supersede", "operator_edit", "operator_retire")
        ),
    }
