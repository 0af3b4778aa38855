"""Issue 20 item 1, the second check: every service an admin action calls re-checks the
operator account itself — the model permission (``permission_required``) and the corpus
role (``not_authorized`` / ``owner_not_authorized``, naming who holds it) — whatever
adapter called it, and a refusal writes nothing."""

import pytest
from django.apps import apps
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission

from loopx_site.core import services as core_services
from loopx_site.core.models import HostToken
from reward_memory import principals, services
from reward_memory.documents import review as review_documents
from reward_memory.errors import RewardMemoryError
from reward_memory.models import CorpusRoleBinding, LineageClosure, MemoryRecord
from tests.reward_memory import factories as f


def snapshot() -> dict:
    return {
        model._meta.label_lower: list(model.objects.order_by("pk").values())
        for model in apps.get_models(include_auto_created=True)
        if model._meta.managed and model._meta.label_lower != "sessions.session"
    }


@pytest.fixture
def world(db, corpus):
    """An active record, a second one, a closed lineage and a role binding."""
    first = f.ingested(
        event=f.scoped_event("ev-1"), goal_id="demo", agent_id="author", execute=True
    )
    second = f.ingested(
        event=f.scoped_event("ev-2", content_summary="Lead with the effect, then risks."),
        goal_id="demo",
        agent_id="author",
        execute=True,
    )
    services.grant_checkpoint(
        checkpoint_id="ckpt-edit",
        project=f.PROJECT,
        actor=f.OWNER,
        role="corpus_owner",
        action_scopes=["reward_memory.edit.prefs"],
        operator=f.op(f.OWNER),
        execute=True,
    )
    services.grant_checkpoint(
        checkpoint_id="ckpt-retire",
        project=f.PROJECT,
        actor=f.RETIRER,
        role="retirement_authority",
        action_scopes=["reward_memory.retire.prefs"],
        operator=f.op(f.OWNER),
        execute=True,
    )
    review_documents.decision(
        services.review_candidate(
            candidate=f.candidate(content_summary="Something rejected."),
            decision="reject",
            corpus_id="prefs",
            principal=f.op(f.REVIEWER),
            execute=True,
        )
    )
    core_services.create_token(goal_id="demo", agent_id="author")
    token = HostToken.objects.get()
    binding = services.bind_role(
        corpus_id="prefs", role="reviewer", host_token=token, operator=f.op(f.OWNER)
    )
    return {
        "record": first["record_ref"],
        "other": second["record_ref"],
        "closure": LineageClosure.objects.get(),
        "binding": binding,
        "token": token,
    }


def _calls(world, who):
    p = f.op(who)
    record, other = world["record"], world["other"]
    return {
        "revoke_record": lambda: services.revoke_record(
            record_ref=record, principal=p, revocation_ref="r"
        ),
        "retire_record": lambda: services.retire_record(record_ref=record, principal=p),
        "supersede_record": lambda: services.supersede_record(
            record_ref=record, by_record_ref=other, principal=p
        ),
        "operator_edit": lambda: services.operator_control(
            record_ref=record,
            action="edit",
            control_ref="ckpt-edit",
            reasoning_summary="Narrower.",
            edited_content_summary="Lead with the effect.",
            principal=p,
        ),
        "operator_retire": lambda: services.operator_control(
            record_ref=record,
            action="retire",
            control_ref="ckpt-retire",
            reasoning_summary="Done.",
            principal=p,
        ),
        "grant_checkpoint": lambda: services.grant_checkpoint(
            checkpoint_id="ckpt-new",
            project=f.PROJECT,
            actor="user:maint-2",
            role="core_contributor",
            action_scopes=["issue_fix.request_reproduction"],
            operator=p,
            execute=True,
        ),
        "revoke_checkpoint": lambda: services.revoke_checkpoint(
            checkpoint_id=f.CHECKPOINT_ID, operator=p, execute=True
        ),
        "bind_role": lambda: services.bind_role(
            corpus_id="prefs", role="owner", host_token=world["token"], operator=p
        ),
        "unbind_role": lambda: services.unbind_role(binding=world["binding"], operator=p),
        "reopen_lineage": lambda: services.reopen_lineage(
            corpus_id="prefs",
            candidate_ref=world["closure"].candidate_ref,
            operator=p,
            execute=True,
        ),
        "retry_pending_ingest": lambda: services.retry_pending_ingests(
            goal_id="demo", agent_id="author", operator=p
        ),
    }


OPERATIONS = [
    "revoke_record",
    "retire_record",
    "supersede_record",
    "operator_edit",
    "operator_retire",
    "grant_checkpoint",
    "revoke_checkpoint",
    "bind_role",
    "unbind_role",
    "reopen_lineage",
    "retry_pending_ingest",
]


@pytest.mark.parametrize("operation", OPERATIONS)
def test_an_operator_account_without_the_permission_is_refused_and_nothing_written(
    world, operation
):
    """The corpus owner itself, stripped of its model permissions."""
    owner = get_user_model().objects.get(username="owner")
    owner.user_permissions.clear()
    before = snapshot()
    with pytest.raises(RewardMemoryError) as exc:
        _calls(world, f.OWNER)[operation]()
    assert exc.value.code == "permission_required"
    assert exc.value.http_status == 403
    needed = principals.PERMISSIONS[
        "operator_control" if operation.startswith("operator_") else operation
    ]
    assert exc.value.details == {"permission": needed, "account": f.OWNER}
    assert needed in exc.value.message
    assert snapshot() == before


@pytest.mark.parametrize("operation", OPERATIONS)
def test_the_same_call_with_the_permission_is_allowed(world, operation):
    """The control: with its permissions back, the owner account may do each one."""
    _calls(world, f.OWNER)[operation]()


@pytest.mark.parametrize(
    ("operation", "code", "holder"),
    [
        ("revoke_record", "not_authorized", f.OWNER),
        ("retire_record", "not_authorized", f.RETIRER),
        ("supersede_record", "owner_not_authorized", f.OWNER),
        ("operator_edit", "owner_not_authorized", f.OWNER),
        ("operator_retire", "not_authorized", f.RETIRER),
    ],
)
def test_a_permitted_account_that_is_not_the_corpus_role_is_refused_by_name(
    world, operation, code, holder
):
    """Holding the permission is not the corpus authority: a superuser who is not the
    owner / retirement authority is refused, and told which account holds it."""
    get_user_model().objects.create_superuser("root", password="pw-for-tests-only")
    before = snapshot()
    with pytest.raises(RewardMemoryError) as exc:
        _calls(world, "user:root")[operation]()
    assert exc.value.code == code
    assert exc.value.http_status == 403
    assert holder in exc.value.message
    assert holder in exc.value.details["authorized"]
    assert snapshot() == before
    assert MemoryRecord.objects.get(record_ref=world["record"]).lifecycle_state == "active"


def test_a_view_only_staff_account_is_refused_by_the_services(world):
    viewer = get_user_model().objects.create_user("viewer", is_staff=True)
    viewer.user_permissions.set(Permission.objects.filter(codename__startswith="view_"))
    before = snapshot()
    for operation, call in _calls(world, "user:viewer").items():
        with pytest.raises(RewardMemoryError) as exc:
            call()
        assert exc.value.code == "permission_required", operation
    assert snapshot() == before
    assert CorpusRoleBinding.objects.get().revoked_at is None
