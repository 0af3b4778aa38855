"""The one caller resolver (``loopx_site.core.access``) and the 403 status word."""

import pytest

from loopx_site.core import access
from loopx_site.core.errors import DomainError

AGENT_TOKEN = access.Caller(access.HOST, "abc", goal_id="demo", agent_id="author", token_id=1)
GOAL_TOKEN = access.Caller(access.HOST, "def", goal_id="demo", token_id=2)
SHELL = access.SHELL


def test_an_agent_token_acts_for_its_own_agent_and_reads_as_it():
    acting = AGENT_TOKEN.acting_for()
    assert (acting.goal_id, acting.agent_id, acting.own_agent) == ("demo", "author", True)
    assert acting.viewer == ("demo", "author")


def test_a_goal_wide_token_naming_an_agent_acts_for_it_but_reads_as_the_goal():
    acting = GOAL_TOKEN.acting_for("demo", "author")
    assert (acting.goal_id, acting.agent_id, acting.own_agent) == ("demo", "author", False)
    assert acting.viewer == ("demo", None)  # never the Agent's private corpora


def test_an_operator_names_both_and_reads_everything():
    acting = SHELL.acting_for("demo", "author")
    assert (acting.viewer, acting.own_agent) == (None, True)
    with pytest.raises(DomainError) as exc:
        SHELL.acting_for("demo")
    assert (exc.value.code, exc.value.field) == ("invalid_argument", "agent_id")


@pytest.mark.parametrize(
    ("caller", "goal_id", "agent_id", "code"),
    [
        (AGENT_TOKEN, "demo", "reviewer", "scope_forbidden"),
        (AGENT_TOKEN, "other", None, "scope_forbidden"),
        (GOAL_TOKEN, "other", "author", "scope_forbidden"),
        (GOAL_TOKEN, None, None, "invalid_argument"),
        (GOAL_TOKEN, "demo", 7, "invalid_argument"),
    ],
)
def test_outside_the_token_scope_is_refused(caller, goal_id, agent_id, code):
    with pytest.raises(DomainError) as exc:
        caller.acting_for(goal_id, agent_id)
    assert exc.value.code == code
    expected = "forbidden" if code == "scope_forbidden" else "invalid_request"
    assert exc.value.envelope()["status"] == expected


def test_every_403_says_forbidden_whatever_its_code():
    import reward_memory.errors  # noqa: F401  (declares reviewer_not_authorized)

    refused = DomainError("reviewer_not_authorized", "no")
    assert (refused.http_status, refused.envelope()["status"]) == (403, "forbidden")
    assert DomainError("config_invalid", "no").envelope()["status"] == "invalid_request"


def test_an_unseen_object_raises_the_absent_error():
    def absent():
        return DomainError("resource_not_found", "No such thing.")

    with pytest.raises(DomainError) as hidden:
        access.visible_or_not_found(object(), lambda _: False, absent)
    with pytest.raises(DomainError) as missing:
        access.visible_or_not_found(None, lambda _: True, absent)
    assert hidden.value.envelope() == missing.value.envelope()
    assert access.visible_or_not_found(1, lambda _: True, absent) == 1


def test_event_scope_acts_for_the_agent_or_for_a_goal_level_preview():
    from loopx_site.core.access import HOST, Caller

    goal_wide = Caller(HOST, "t1", goal_id="demo")
    assert goal_wide.event_scope("demo", None, goal_level=True) == ("demo", None, ("demo", None))
    assert goal_wide.event_scope(None, None, goal_level=False) == (None, None, ("demo", None))
    own = Caller(HOST, "t2", goal_id="demo", agent_id="author")
    assert own.event_scope("demo", None, goal_level=False) == (
        "demo",
        "author",
        ("demo", "author"),
    )
    with pytest.raises(DomainError) as refused:
        goal_wide.event_scope("other", None, goal_level=True)
    assert refused.value.code == "scope_forbidden"


def test_host_caller_resolves_a_token_secret_without_a_request(agent):
    from loopx_site.core import services

    issued = services.create_token(goal_id="demo", agent_id="author")
    caller = access.host_caller(issued.secret)
    assert (caller.kind, caller.goal_id, caller.agent_id) == (access.HOST, "demo", "author")
    assert caller.token_id == issued.token.pk
    with pytest.raises(DomainError) as unknown:
        access.host_caller("not-a-token")
    assert (unknown.value.code, unknown.value.http_status) == ("not_authenticated", 401)


def test_acting_for_answers_the_same_caller_type_narrowed_to_the_named_agent():
    acting = GOAL_TOKEN.acting_for("demo", "author")
    assert isinstance(acting, access.Caller)
    assert (acting.kind, acting.name, acting.token_id) == (access.HOST, "def", 2)
    # it acts for the Agent it named but keeps the Goal-wide credential's reach
    assert acting.viewer == ("demo", None)
    acting.require_goal_wide()
    assert not acting.may_touch("demo", "reviewer")
    with pytest.raises(DomainError) as other:
        acting.acting_for("demo", "reviewer")
    assert other.value.code == "scope_forbidden"
    operator = SHELL.acting_for("demo", "author")
    assert (operator.goal_id, operator.agent_id, operator.viewer) == ("demo", "author", None)
    assert (operator.is_operator, operator.own_agent, operator.from_shell) == (True, True, True)
