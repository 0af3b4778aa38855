"""How the preferences API documents one operation in the OpenAPI schema (the journal
views and the recall hook's views alike)."""

from drf_spectacular.utils import extend_schema


def operation_schema(operation_id: str, summary: str, responses, tags: list[str], **schema):
    """``extend_schema`` of one operation: its id, summary, responses and tags; ``schema``
    adds its ``request`` body or query ``parameters``."""
    return extend_schema(
        operation_id=operation_id, responses=responses, tags=tags, summary=summary, **schema
    )
