"""Fixtures of the Stage 4 evaluation (``reward_memory.evaluation``): neutral identities,
documents and a sandbox in which the real services run against a provider double.

Nothing here is evaluator policy: it only builds inputs. The sandbox runs inside a
database transaction that is always rolled back, and installs a fresh provider double
as provider ``double``, so the evaluation leaves no row and no provider document behind.
"""

import contextlib
import copy
import datetime as dt
import json
from collections.abc import Iterator
from pathlib import Path

from django.contrib.auth import get_user_model
from django.db import transaction

from loopx_site.core import clock
from loopx_site.core.models import Agent, Goal
from reward_memory import contracts as c
from reward_memory import principals, providers, routing
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
_TEMPLATES = json.loads(
    (Path(__file__).resolve().parent / "fixtures" / "evaluation_documents.json").read_text()
)


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


def _template(name: str) -> dict:
    """A fresh copy of one input document of ``fixtures/evaluation_documents.json``
    (``null`` fields are filled in by the builder below)."""
    return copy.deepcopy(_TEMPLATES[name])


def corpus(corpus_id: str, *, memory_class: str, surface: str) -> dict:
    document = _template("corpus")
    document.update(
        corpus_id=corpus_id,
        memory_class=memory_class,
        surfaces=[surface],
        provider_binding={"provider_id": "double", "scope_ref": f"double:{corpus_id}"},
    )
    return document


def standing_policy(corpus_id: str, *, memory_class: str, surface: str, scopes=()) -> dict:
    document = _template("standing_policy")
    document.update(
        corpus_id=corpus_id, surface=surface, memory_class=memory_class, action_scopes=list(scopes)
    )
    return document


def observed(days_ago: int = 1) -> str:
    return clock.iso(clock.now() - dt.timedelta(days=days_ago))


def event(event_id: str, summary: str, *, days_ago: int = 1) -> dict:
    """A compact scoped-feedback event for the advice corpus."""
    document = _template("event")
    document.update(event_id=event_id, content_summary=summary)
    document["source"].update(
        evidence_ref=f"feedback:eval-project/{event_id}", observed_at=observed(days_ago)
    )
    return document


def policy_candidate(*, actor: str = ACTOR, scopes=None) -> dict:
    """A hard_policy candidate naming the evaluation checkpoint."""
    document = _template("policy_candidate")
    document["source"].update(actor=actor, observed_at=observed())
    document["requested_action_scopes"] = list(SCOPES if scopes is None else scopes)
    return document


def recall_request(corpus_row, query: str, **overrides) -> dict:
    request = c.recall_request(
        goal_id=GOAL,
        agent_id=AGENT,
        corpus_id=corpus_row.corpus_id,
        project=corpus_row.project,
        surface=SURFACE,
        mode=c.FUNCTION_BOUNDARY,
        queries=[query],
        limit=4,
        read_authority={
            "checkpoint_ref": f"allowlist:{GOAL}/{AGENT}",
            "verified": True,
            "corpus_id": corpus_row.corpus_id,
            "project": corpus_row.project,
            "surface": SURFACE,
        },
        observed_at=clock.iso(clock.now()),
        corpus_revision=corpus_row.revision,
        conflicts=[],
        provider_binding_ref=corpus_row.provider_binding_ref,
    )
    for key, value in overrides.items():
        if isinstance(value, dict):
            request[key] = {**request[key], **value}
        else:
            request[key] = copy.deepcopy(value)
    return request


def pr_3237_case() -> dict:
    """The named Issue Fix regression (OpenViking PR #3237) from the route fixtures."""
    return routing.CASES["pr-3237"]
