"""What the MCP tools answer: the output schemas (the documents the CLI prints, open to
their full fields) and the rendering of a document or an error document as a tool
result — structured content plus a short text line for the model."""

import json
from typing import Any

from mcp_types import CallToolResult, TextContent
from pydantic import BaseModel, ConfigDict, Field

from loopx_site.core.errors import DomainError


class Document(BaseModel):
    """A LoopX document: ``schema_version`` names it; every other field is the
    document's own (see docs/mcp.md and the API schema at /api/schema/)."""

    model_config = ConfigDict(extra="allow")
    schema_version: str


class PreferenceDocument(Document):
    """``semantic_preference_agent_v1`` (``read``/``preview``/``applied``/``replayed``/
    ``history``), with ``current`` = ``agent_preferences_v1``."""

    ok: bool
    status: str
    goal_id: str
    agent_id: str
    current: dict[str, Any]


class RecallDocument(Document):
    """``reward_memory_recall_result_v0`` (ours) or ``reward_memory_recall_v0`` (a LoopX
    packet's answer): guard decisions, summaries and the public packet."""


class IngestDocument(Document):
    """The ingest receipt: the candidate's disposition (planned unless ``execute``)."""


class ApplicationDocument(Document):
    """``reward_memory_application_receipt_v0``."""


class TurnDocument(Document):
    """``agent_turn_recall_v0``: guidance for this turn (private advisory context)."""


class ErrorDocument(BaseModel):
    """The error document: ``error`` one line, LoopX's ``status``, our ``code``,
    ``field`` and ``details``."""

    model_config = ConfigDict(extra="allow")
    ok: bool = Field(False)
    status: str
    error: str
    code: str | None = None
    field: str | None = None


def _summary(document: dict[str, Any]) -> str:
    parts = [str(document.get("schema_version", "document"))]
    for key in ("status", "decision", "disposition", "revision", "recall_id", "code", "field"):
        value = document.get(key)
        if isinstance(value, str | int) and not isinstance(value, bool):
            parts.append(f"{key}={value}")
    return " ".join(parts)


def result(document: dict[str, Any]) -> CallToolResult:
    """A tool's answer: the document as structured content, a summary line and the
    document's JSON as text (for clients that read text only)."""
    text = _summary(document) + "\n" + json.dumps(document, ensure_ascii=False, sort_keys=True)
    return CallToolResult(
        content=[TextContent(type="text", text=text)], structured_content=document
    )


def error(err: DomainError) -> CallToolResult:
    """A refusal: an MCP tool error carrying our error document."""
    document = err.envelope()
    text = f"error {document.get('code')}: {document.get('error')}\n" + json.dumps(
        document, ensure_ascii=False, sort_keys=True
    )
    return CallToolResult(
        content=[TextContent(type="text", text=text)],
        structured_content=document,
        is_error=True,
    )
