"""Reward Memory's part of a Goal export (``loopx_site.core.export``).

A Goal's corpora are those whose agent allowlist names one of its Agents
(``"goal_id/agent_id"``). With them go their standing policies, candidates and reviews,
every record (any lifecycle state, with its lineage: review, checkpoint, successor,
transitions, added evidence, closures), the authority checkpoints of the corpora's
projects and of their records, the role bindings held by the Goal's host tokens, and the
Goal's experiment bindings. Receipts, ingest events and the provider-delete outbox are
runtime history of this instance and are not carried (docs/export.md).
"""

from django.db.models import Q

from loopx_site.core.export import Ref, Section
from loopx_site.core.models import Agent, Goal, HostToken
from reward_memory.models import (
    AuthorityCheckpoint,
    Candidate,
    Corpus,
    CorpusRoleBinding,
    ExperimentBinding,
    LineageClosure,
    MemoryRecord,
    RecordEvidence,
    RecordTransition,
    Review,
    StandingPolicy,
)


def corpus_ids(goal_id: str) -> list[str]:
    """The corpora whose allowlist names an Agent of ``goal_id``."""
    prefix = f"{goal_id}/"
    rows = Corpus.objects.values_list("corpus_id", "agent_allowlist")
    return sorted(cid for cid, allow in rows if any(str(a).startswith(prefix) for a in allow or []))


def _checkpoints(goal_id: str):
    ids = corpus_ids(goal_id)
    projects = Corpus.objects.filter(corpus_id__in=ids).values_list("project", flat=True)
    used = MemoryRecord.objects.filter(corpus__corpus_id__in=ids).values("authority_checkpoint")
    return AuthorityCheckpoint.objects.filter(Q(project__in=list(projects)) | Q(pk__in=used))


def _in_corpora(model, goal_id: str, path: str = "corpus__corpus_id"):
    return lambda: model.objects.filter(**{f"{path}__in": corpus_ids(goal_id)})


def _definitions(g: str) -> list[Section]:
    """The corpora, their checkpoints, policies, candidates and reviews."""
    corpus = Ref(Corpus, ("corpus_id",))
    return [
        Section("corpus", Corpus, _in_corpora(Corpus, g, "corpus_id"), ("corpus_id",)),
        Section(
            "authority_checkpoint", AuthorityCheckpoint, lambda: _checkpoints(g), ("checkpoint_id",)
        ),
        Section(
            "standing_policy",
            StandingPolicy,
            _in_corpora(StandingPolicy, g),
            ("corpus", "policy_digest"),
            refs={"corpus": corpus},
        ),
        Section(
            "candidate",
            Candidate,
            _in_corpora(Candidate, g),
            ("corpus", "candidate_ref"),
            refs={"corpus": corpus},
        ),
        Section(
            "review",
            Review,
            _in_corpora(Review, g),
            ("review_id",),
            refs={
                "corpus": corpus,
                "candidate": Ref(Candidate, ("corpus__corpus_id", "candidate_ref")),
            },
        ),
    ]


def _records(g: str) -> list[Section]:
    """The records with their lineage, and the Goal's bindings."""
    corpus = Ref(Corpus, ("corpus_id",))
    record = Ref(MemoryRecord, ("record_ref",))
    review = Ref(Review, ("review_id",))
    return [
        Section(
            "record",
            MemoryRecord,
            _in_corpora(MemoryRecord, g),
            ("record_ref",),
            refs={
                "corpus": corpus,
                "review": review,
                "superseded_by": record,
                "authority_checkpoint": Ref(AuthorityCheckpoint, ("checkpoint_id",)),
            },
        ),
        Section(
            "record_transition",
            RecordTransition,
            _in_corpora(RecordTransition, g, "record__corpus__corpus_id"),
            ("record", "seq"),
            refs={"record": record},
        ),
        Section(
            "record_evidence",
            RecordEvidence,
            _in_corpora(RecordEvidence, g, "record__corpus__corpus_id"),
            ("record", "candidate_ref"),
            refs={"record": record, "review": review},
        ),
        Section(
            "lineage_closure",
            LineageClosure,
            _in_corpora(LineageClosure, g),
            ("corpus", "candidate_ref", "closed_at"),
            refs={"corpus": corpus},
        ),
        Section(
            "role_binding",
            CorpusRoleBinding,
            lambda: _in_corpora(CorpusRoleBinding, g)().filter(host_token__goal__goal_id=g),
            ("corpus", "role", "host_token", "granted_at"),
            refs={"corpus": corpus, "host_token": Ref(HostToken, ("key_digest",))},
        ),
        Section(
            "experiment_binding",
            ExperimentBinding,
            lambda: ExperimentBinding.objects.filter(goal__goal_id=g),
            ("goal", "agent"),
            refs={
                "goal": Ref(Goal, ("goal_id",)),
                "agent": Ref(Agent, ("goal__goal_id", "agent_id")),
            },
        ),
    ]


def sections(goal) -> list[Section]:
    return [*_definitions(goal.goal_id), *_records(goal.goal_id)]
