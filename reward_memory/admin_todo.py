"""Reward Memory's rows of the admin's "Waits for a human" (``contributions.REVIEW_TODO``):
the review to-do counted by ``reward_memory.metrics.review_todo_counts`` (the same counts
``/metrics`` exposes), each linking the filtered list where the operator acts, then what
of it waits for the signed-in operator ("awaiting me")."""

from urllib.parse import urlencode

from django.urls import reverse

from loopx_site.core import access
from reward_memory import contracts as c
from reward_memory import selectors
from reward_memory.metrics import review_todo_counts
from reward_memory.models import PendingIngest


def _list(model: str, **params) -> str:
    url = reverse(f"admin:reward_memory_{model}_changelist")
    return f"{url}?{urlencode(params)}" if params else url


def review_todo(request) -> list[dict]:
    counts = review_todo_counts()
    pending = PendingIngest.objects.filter(resolved_at__isnull=True).count()
    return [
        {
            "label": "Candidates from hosts and ingest awaiting the reviewer",
            "count": counts["candidate"],
            "url": _list("candidate", decision="awaiting"),
        },
        {
            "label": "Replacements awaiting the reviewer (review queue)",
            "count": counts["operator_edit"],
            "url": _list("reviewqueueitem", state="awaiting_review"),
        },
        {
            "label": "Accepted candidates awaiting the owner's apply",
            "count": counts["awaiting_apply"],
            "url": _list("review", effective_decision__exact="accept", applied_at__isnull="True"),
        },
        {
            "label": "Reflections awaiting evidence validation",
            "count": counts["reflection_validation"],
            "url": _list("reflectioncandidate", state=c.REFLECTION_AWAITING),
        },
        {
            "label": "Candidates awaiting me (my decision as reviewer, my apply as owner)",
            "count": _mine(request),
            "url": _list("candidate", decision="mine"),
        },
        {
            "label": "Pending ingests (provider commit unresolved)",
            "count": pending,
            "url": _list("pendingingest", resolved_at__isnull="True"),
        },
    ]


def _mine(request) -> int:
    """Host and ingest candidates whose next step is the signed-in operator's."""
    return selectors.candidates_awaiting(access.signed_in(request).actor_ref).count()
