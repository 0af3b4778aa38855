"""Parsing Stage 3 inputs (pure: no database, no provider).

``parse_recall`` reads our flat ``reward_memory_recall_request_v0`` into a
``RecallRequest`` (plus the shape reasons the guard reports); ``recall_id_for`` is its
identity; ``parse_application`` reads a ``reward_memory_application_v0``. The guards
that need the registry run in ``reward_memory.services.recalls``.
"""

import datetime as dt
import re
from dataclasses import dataclass, field
from typing import Any

from loopx_site.core.canonical import nfc, prefixed_id, text_digest_ref
from reward_memory import contracts as c
from reward_memory.domain import guards
from reward_memory.domain import validation as v
from reward_memory.domain.guards import Reason

RECALL_ID_RE = re.compile(r"^rmc_[0-9a-f]{64}$")
MEMORY_REF_RE = re.compile(r"^rmr_[0-9a-f]{64}$")
FRESHNESS_WINDOW = dt.timedelta(minutes=10)
MAX_LIMIT = 20
MAX_QUERY_CHARS = 500


@dataclass
class RecallRequest:
    goal_id: str
    agent_id: str
    corpus_id: str
    project: str
    surface: str
    mode: str
    queries: list[str]
    limit: int
    document: dict[str, Any]


def parse_recall(document: Any) -> tuple[RecallRequest, list[Reason]]:
    """The request's fields (a malformed one raises ``invalid_request``) and the shape
    reasons (unmodelled keys) the guard adds to its own."""
    v.schema(document, c.RECALL_REQUEST_SCHEMA)
    d = nfc(document)
    shape = [r for r in guards.scan(d, c.RECALL_SHAPE) if not (r.field or "").startswith("queries")]
    goal_id = v.identifier(d.get("goal_id"), "goal_id")
    agent_id = v.identifier(d.get("agent_id"), "agent_id")
    corpus_id = v.identifier(d.get("corpus_id"), "corpus_id")
    project = v.project(d.get("project"), "project")
    surface = v.surface(d.get("surface"), "surface")
    mode = v.choice(d.get("mode"), "mode", c.RECALL_MODES)
    queries = v.string_list(
        d.get("queries"),
        "queries",
        lambda q, f: v.text(q, f, max_length=MAX_QUERY_CHARS),
        max_items=16,
        required=True,
    )
    limit = v.integer(d.get("limit", 4), "limit", minimum=1, maximum=MAX_LIMIT)
    request = RecallRequest(goal_id, agent_id, corpus_id, project, surface, mode, queries, limit, d)
    return request, shape


def recall_id_for(request: RecallRequest) -> str:
    d = request.document
    return prefixed_id(
        "rmc_",
        {
            "goal_id": request.goal_id,
            "agent_id": request.agent_id,
            "corpus_id": request.corpus_id,
            "surface": request.surface,
            "mode": request.mode,
            "query_digests": [text_digest_ref(q) for q in request.queries],
            "limit": request.limit,
            "observed_at": (d.get("freshness") or {}).get("observed_at"),
            "request_id": d.get("request_id"),
        },
    )


@dataclass
class Application:
    """A parsed ``reward_memory_application_v0``; ``shape`` non-empty: refused as a
    whole (unsafe or unmodelled fields), nothing else was read."""

    recall_id: str
    decision: str
    shape: list[Reason]
    memory_refs: list[str] = field(default_factory=list)
    reasoning: str | None = None
    verification: dict[str, Any] = field(default_factory=dict)


def parse_recall_id(document: Any) -> str:
    v.schema(document, c.APPLICATION_SCHEMA)
    return v.pattern(nfc(document).get("recall_id"), "recall_id", RECALL_ID_RE, what="a recall id")


def parse_application(document: Any) -> Application:
    d = nfc(document)
    recall_id = parse_recall_id(document)
    decision = v.choice(d.get("decision"), "decision", c.APPLICATION_DECISIONS)
    shape = guards.scan(d, c.APPLICATION_SHAPE)
    if shape:
        return Application(recall_id, decision, shape)
    memory_refs = v.string_list(
        d.get("memory_refs"),
        "memory_refs",
        lambda x, f: v.pattern(x, f, MEMORY_REF_RE, what="a memory ref (rmr_<hex>)"),
        max_items=20,
    )
    reasoning = v.text(d.get("reasoning_summary"), "reasoning_summary", max_length=600)
    verification = v.obj(d.get("artifact_verification"), "artifact_verification")
    v.artifact_ref(verification.get("artifact_ref"), "artifact_verification.artifact_ref")
    v.digest(
        verification.get("artifact_digest"),
        "artifact_verification.artifact_digest",
        required=False,
    )
    v.boolean(verification.get("verified"), "artifact_verification.verified")
    return Application(recall_id, decision, shape, memory_refs, reasoning, verification)
