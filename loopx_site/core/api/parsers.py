"""The one JSON body parser of the API: size-capped and depth-capped.

Built on ``loopx_site.core.files.loads_json`` (strict JSON, nesting bounded before the
decoder recurses), so a deeply nested body is ``invalid_json`` (400) and an oversized
one ``payload_too_large`` (413) — both the error envelope, never a traceback. A body
whose strings are not UTF-8 text (a ``\\ud800`` escape decodes to a lone surrogate) is
400 ``invalid_argument`` naming the field: the one text rule of the edge
(``files.require_utf8_document``), applied before any view or service sees the body.
"""

from django.conf import settings
from rest_framework import exceptions, status
from rest_framework.parsers import JSONParser

from loopx_site.core import files
from loopx_site.core.errors import DomainError

#: Deepest nesting of arrays/objects a request body may have.
MAX_BODY_DEPTH = 64


class PayloadTooLarge(exceptions.APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_code = "payload_too_large"
    default_detail = "The request body is too large."


def max_body_bytes() -> int:
    return settings.DATA_UPLOAD_MAX_MEMORY_SIZE or files.DEFAULT_MAX_BYTES


def _declared_length(parser_context) -> int | None:
    request = (parser_context or {}).get("request")
    meta = getattr(request, "META", {}) if request is not None else {}
    try:
        return int(meta.get("CONTENT_LENGTH") or 0)
    except (TypeError, ValueError):
        return None


class BoundedJSONParser(JSONParser):
    def parse(self, stream, media_type=None, parser_context=None):
        limit = max_body_bytes()
        declared = _declared_length(parser_context)
        if declared is not None and declared > limit:
            raise PayloadTooLarge(f"The request body exceeds {limit} bytes.")
        data = stream.read(limit + 1) if stream is not None else b""
        if len(data) > limit:
            raise PayloadTooLarge(f"The request body exceeds {limit} bytes.")
        encoding = (parser_context or {}).get("encoding") or settings.DEFAULT_CHARSET
        try:
            text = data.decode(encoding)
        except (LookupError, UnicodeDecodeError):
            raise exceptions.ParseError(f"The request body is not {encoding} text.") from None
        try:
            return files.loads_json(
                text,
                option="body",
                max_depth=MAX_BODY_DEPTH,
                code="invalid_json",
                require_object=False,
            )
        except DomainError as exc:
            if exc.code == "invalid_argument":  # the text rule: not UTF-8 text
                view = (parser_context or {}).get("view")
                where = exc.details.get("path") or None
                at = f" at {where}" if where else ""
                raise DomainError(
                    "invalid_argument",
                    f"The request body holds text that is not valid UTF-8 (a lone surrogate){at}.",
                    field=where,
                    area=getattr(view, "error_area", "loopx"),
                ) from None
            raise exceptions.ParseError(exc.message.replace("--body", "The request body")) from None
