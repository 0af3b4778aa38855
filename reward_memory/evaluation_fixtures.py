"""Fixtures of the Stage 4 evaluation (``reward_memory.evaluation``): neutral identities,
documents and a sandbox in which the real services run against a provider double.

Nothing here is evaluator policy: it only builds inputs. The sandbox runs inside a
database transaction that is always rolled back, and installs a fresh provider double
as provider ``double``, so the evaluation leaves no row and no provider document behind.
"""

import contextlib
import copy
import datetime as dt
from collections.abc import Iterator

from django.contrib.auth import get_user_model
from django.db import transaction

from loopx_site.core import clock
from loopx_site.core.models import Agent, Goal
from reward_memory import principals, providers
from reward_memory.providers.double import ProviderDouble

GOAL = "eval-goal"
AGENT = "eval-agent"
PROJECT = "eval-project"
OTHER_PROJECT = "eval-other-project"
SURFACE = "eval_module.summary"
POLICY_SURFACE = "eval_module.patch_planning"
OWNER = "user:eval-owner"
REVIEWER = "user:eval-reviewer"
RETIRER = "user:eval-retirer"
AUTHORITY = "repo:eval-project/maintainers"
ACTOR = "user:eval-maintainer"
OTHER_ACTOR = "user:eval-other-maintainer"
CHECKPOINT = "eval-checkpoint"
ROLE_CHECKPOINT = "eval-maintainer-role"
SCOPES = ["eval_module.request_reproduction"]
ADVICE_CORPUS = "eval-advice"
POLICY_CORPUS = "eval-policy"
MAX_AGE_DAYS = 30


class _Rollback(Exception):
    pass


@contextlib.contextmanager
def sandbox() -> Iterator[ProviderDouble]:
    """A rolled-back transaction with a fresh provider double (``double``)."""
    double = ProviderDouble()
    try:
        with transaction.atomic(), providers.use("double", double):
            yield double
            raise _Rollback
    except _Rollback:
        pass


def identities() -> None:
    now = clock.now()
    goal, _ = Goal.objects.get_or_create(
        goal_id=GOAL, defaults={"created_at": now, "updated_at": now}
    )
    Agent.objects.get_or_create(goal=goal, agent_id=AGENT, defaults={"created_at": now})
    for name in ("eval-owner", "eval-reviewer", "eval-retirer"):
        user, _ = get_user_model().objects.get_or_create(username=name, defaults={"is_staff": True})
        principals.grant_operator_permissions(user)


def corpus(corpus_id: str, *, memory_class: str, surface: str) -> dict:
    return {
        "schema_version": "reward_memory_corpus_v0",
        "corpus_id": corpus_id,
        "memory_class": memory_class,
        "owner": OWNER,
        "reviewer": REVIEWER,
        "authority_source": AUTHORITY,
        "maintenance": {"retirement_authority": RETIRER},
        "project": PROJECT,
        "surfaces": [surface],
        "freshness": {"max_source_age_days": MAX_AGE_DAYS, "require_current_revision": True},
        "privacy": {"visibility": "project", "retention_class": "standard"},
        "provider_binding": {"provider_id": "double", "scope_ref": f"double:{corpus_id}"},
        "agent_allowlist": [{"goal_id": GOAL, "agent_id": AGENT}],
    }


def standing_policy(corpus_id: str, *, memory_class: str, surface: str, scopes=()) -> dict:
    return {
        "schema_version": "reward_memory_standing_policy_v0",
        "corpus_id": corpus_id,
        "owner": OWNER,
        "reviewer": REVIEWER,
        "authority_source": AUTHORITY,
        "project": PROJECT,
        "surface": surface,
        "memory_class": memory_class,
        "allowed_source_kinds": ["maintainer_feedback"],
        "verified_actor_roles": ["maintainer", "core_contributor"],
        "action_scopes": list(scopes),
    }


def observed(days_ago: int = 1) -> str:
    return clock.iso(clock.now() - dt.timedelta(days=days_ago))


def event(event_id: str, summary: str, *, days_ago: int = 1) -> dict:
    """A compact scoped-feedback event for the advice corpus."""
    return {
        "schema_version": "scoped_feedback_reward_memory_event_v0",
        "event_id": event_id,
        "corpus_id": ADVICE_CORPUS,
        "target_class": "soft_preference",
        "content_summary": summary,
        "reasoning_summary": "Two maintainers asked for the same change.",
        "source": {
            "kind": "maintainer_feedback",
            "actor": ACTOR,
            "actor_role": "maintainer",
            "evidence_ref": f"feedback:eval-project/{event_id}",
            "observed_at": observed(days_ago),
        },
        "scope": {"workspace": "eval", "project": PROJECT, "surface": SURFACE},
        "confidence": {"level": "medium", "basis": "two consistent comments"},
        "requested_action_scopes": [],
        "conflicts": [],
    }


def policy_candidate(*, actor: str = ACTOR, scopes=None) -> dict:
    """A hard_policy candidate naming the evaluation checkpoint."""
    return {
        "schema_version": "reward_memory_candidate_v0",
        "target_class": "hard_policy",
        "content_summary": "Request a reproduction test before patching a storage contract.",
        "reasoning_summary": "A verified core contributor corrected two storage patches.",
        "source": {
            "kind": "maintainer_feedback",
            "actor": actor,
            "actor_role": "core_contributor",
            "evidence_ref": "feedback:eval-project/policy-1",
            "observed_at": observed(),
        },
        "scope": {"workspace": "eval", "project": PROJECT, "surface": POLICY_SURFACE},
        "confidence": {"level": "high", "basis": "explicit core-contributor correction"},
        "requested_action_scopes": list(SCOPES if scopes is None else scopes),
        "authority_checkpoint": {"checkpoint_ref": CHECKPOINT},
        "conflicts": [],
    }


def recall_request(corpus_row, query: str, **overrides) -> dict:
    request = {
        "schema_version": "reward_memory_recall_request_v0",
        "goal_id": GOAL,
        "agent_id": AGENT,
        "corpus_id": corpus_row.corpus_id,
        "project": corpus_row.project,
        "surface": SURFACE,
        "mode": "function_boundary",
        "queries": [query],
        "limit": 4,
        "read_authority": {
            "checkpoint_ref": f"allowlist:{GOAL}/{AGENT}",
            "verified": True,
            "corpus_id": corpus_row.corpus_id,
            "project": corpus_row.project,
            "surface": SURFACE,
            "scope": "read",
        },
        "freshness": {
            "observed_at": clock.iso(clock.now()),
            "corpus_revision": corpus_row.revision,
        },
        "conflicts": [],
        "provider_binding_ref": corpus_row.provider_binding_ref,
    }
    for key, value in overrides.items():
        if isinstance(value, dict):
            request[key] = {**request[key], **value}
        else:
            request[key] = copy.deepcopy(value)
    return request


def pr_3237_case() -> dict:
    """The named Issue Fix regression (OpenViking PR #3237) from the route fixtures."""
    from reward_memory import routing

    return routing.CASES["pr-3237"]
