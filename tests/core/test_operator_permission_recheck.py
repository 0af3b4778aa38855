"""The operator-only services of every app re-check who runs them: the operator's shell
(``SHELL``), or a signed-in account holding the model permission — the same one the admin
action declares. The argument is required, so no adapter can leave it out."""

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission

from loopx_site.core import access, services
from loopx_site.core.access import HOST, OPERATOR, SHELL, Caller
from loopx_site.core.errors import DomainError
from loopx_site.core.models import HostToken


@pytest.fixture
def token(agent):
    return services.create_token(goal_id="demo", agent_id="author").token


def _account(username, *codenames):
    user = get_user_model().objects.create_user(username, is_staff=True)
    user.user_permissions.set(Permission.objects.filter(codename__in=codenames))
    return Caller(OPERATOR, username)


def test_an_account_without_the_permission_cannot_revoke_a_token(token):
    viewer = _account("viewer", "view_hosttoken")
    with pytest.raises(DomainError) as exc:
        services.revoke_token(token=token, operator=viewer)
    assert (exc.value.code, exc.value.http_status, exc.value.wire_status) == (
        "permission_required",
        403,
        "forbidden",
    )
    assert exc.value.details == {"permission": "core.change_hosttoken", "account": "user:viewer"}
    assert HostToken.objects.get().revoked_at is None


def test_the_shell_and_a_permitted_account_revoke(token, agent):
    services.revoke_token(token=token, operator=_account("keeper", "change_hosttoken"))
    assert HostToken.objects.get(pk=token.pk).revoked_at is not None
    other = services.create_token(goal_id="demo", agent_id="author").token
    services.revoke_token(token=other, operator=SHELL)
    assert HostToken.objects.get(pk=other.pk).revoked_at is not None


def test_an_inactive_or_non_staff_account_holds_nothing(token):
    user = get_user_model().objects.create_superuser("gone", password="pw-for-tests-only")
    user.is_active = False
    user.save()
    with pytest.raises(DomainError) as exc:
        services.revoke_token(token=token, operator=Caller(OPERATOR, "gone"))
    assert exc.value.code == "permission_required"
    assert HostToken.objects.get().revoked_at is None


def test_the_operator_must_be_named(token):
    with pytest.raises(TypeError):
        services.revoke_token(token=token)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        access.require_operator_permission("user:root", "core.change_hosttoken")
    with pytest.raises(TypeError):  # a host token's caller is no operator
        services.revoke_token(token=token, operator=Caller(HOST, "tok", goal_id="demo"))
    assert HostToken.objects.get().revoked_at is None


def test_hook_admission_and_extension_and_note_services_recheck_the_account(db):
    from hooks import services as hooks
    from preferences import services as prefs

    viewer = _account("viewer", "view_hookintent", "view_providerextension")
    calls = {
        "hooks.change_hookintent": lambda: hooks.admit_intents(
            executor="fake-scheduler", intent_ids=["pwi_x"], operator=viewer
        ),
        "hooks.change_hookintent ": lambda: hooks.reject_intents(
            executor="fake-scheduler", intent_ids=["pwi_x"], operator=viewer
        ),
        "preferences.change_providerextension": lambda: prefs.deactivate_extension(
            extension_id="alpha", operator=viewer, execute=True
        ),
        "preferences.change_providernote": lambda: prefs.retire_provider_note(
            project="loopx-demo", note_id="n1", operator=viewer
        ),
    }
    for permission, call in calls.items():
        with pytest.raises(DomainError) as exc:
            call()  # refused before any lookup: no row needs to exist
        assert exc.value.code == "permission_required"
        assert exc.value.details["permission"] == permission.strip()
