"""Demo data: the demo author's explicit preferences.

Create-only (``loopx_site.core.demo_kit``): the two preferences are written only while
the demo Agent has no preference journal in any scope. Once it has one — the demo's own,
an operator's retire or correction, or a scope the Goal moved to (``migrate-scope``) —
the journal is kept: no revision moves, no retired preference comes back."""

from django.conf import settings

from loopx_site.core.demo_kit import Ledger
from preferences import services
from preferences.models import PreferenceScope

GOAL_ID, AGENT_ID = "demo", "author"


def _has_journal() -> bool:
    return PreferenceScope.objects.filter(
        runtime_id=settings.LOOPX_RUNTIME_ID,
        goal_ref=GOAL_ID,
        agent_ref=AGENT_ID,
        revision__isnull=False,
    ).exists()


# The demo author's two preferences, remembered in this order (one revision each).
PREFERENCES = (
    {
        "key": "review.collaboration",
        "statement": "Ask the designated reviewer before merging.",
        "source_quote": "Use the designated reviewer for my changes.",
    },
    {
        "key": "pr.description.language",
        "statement": "Write PR descriptions as short English sections.",
        "source_quote": "Keep PR descriptions short, in English.",
    },
)


def _write() -> None:
    revision = services.read(goal_id=GOAL_ID, agent_id=AGENT_ID)["revision"]
    for number, preference in enumerate(PREFERENCES, start=1):
        written = services.remember(
            goal_id=GOAL_ID,
            agent_id=AGENT_ID,
            **preference,
            source_ref=f"owner-message-{number}",
            expected_revision=revision,
            operation_id=f"demo-preference-{number}",
            execute=True,
        )
        revision = written["state"]["revision"]


def load(*, log) -> dict:
    ledger = Ledger()
    ledger.ensure(f"preferences {GOAL_ID}/{AGENT_ID}", exists=_has_journal, create=_write)
    view = services.read(goal_id=GOAL_ID, agent_id=AGENT_ID)
    log(f"preferences: demo/author at revision {view['revision']} ({ledger.status})")
    return ledger.document(revision=view["revision"], subjects=len(view["items"]))
