"""What the MCP tools answer: the output schemas (the documents the CLI prints, open to
their full fields) and the rendering of a document or an error document as a tool
result — structured content plus a short text rendering."""

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


def _items(document: dict[str, Any]) -> list[str]:
    current = document.get("current")
    items = current.get("items") if isinstance(current, dict) else None
    if not isinstance(items, list):
        return []
    return [
        f"- {item.get('key')} [{item.get('state')}]: {item.get('statement') or ''}".rstrip()
        for item in items
        if isinstance(item, dict)
    ]


def result(document: dict[str, Any]) -> CallToolResult:
    """A tool's answer: the document as structured content, and a short text rendering
    (a summary line, then a preference view's items one per line)."""
    text = "\n".join([_summary(document), *_items(document)])
    return CallToolResult(
        content=[TextContent(type="text", text=text)], structured_content=document
    )


def error(err: DomainError) -> CallToolResult:
    """A refusal: an MCP tool error carrying our error document."""
    document = err.envelope()
    field = f" (field {document['field']})" if document.get("field") else ""
    text = f"error {document.get('code')}{field}: {document.get('error')}"
    return CallToolResult(
        content=[TextContent(type="text", text=text)],
        structured_content=document,
        is_error=True,
    )
