"""DRF exception handler: every API error is the same envelope the CLI prints."""

import logging
import math

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig
from django.http import Http404
from rest_framework import exceptions
from rest_framework.response import Response

from loopx_site.core.api.auth import CsrfFailed
from loopx_site.core.api.parsers import PayloadTooLarge
from loopx_site.core.errors import REGISTRY, DomainError, from_database_error, name_fields

logger = logging.getLogger("loopx.api")

#: The area of errors of the edge itself (authentication, token scope).
EDGE_AREA = "loopx"


def _first_field_error(detail, prefix: str = "") -> tuple[str | None, str]:
    """(dotted field, message) of the first error in a DRF ValidationError detail."""
    if isinstance(detail, dict):
        for key, value in detail.items():
            name = key if key != "non_field_errors" else None
            field, message = _first_field_error(value, f"{prefix}{name}." if name else prefix)
            return field or (prefix + name if name else None), message
    if isinstance(detail, list) and detail:
        for index, value in enumerate(detail):
            if value:
                if isinstance(value, dict | list):
                    return _first_field_error(value, f"{prefix}{index}.")
                return (prefix.rstrip(".") or None), str(value)
    return (prefix.rstrip(".") or None), str(detail)


def to_domain_error(exc: Exception, area: str) -> DomainError | None:
    if isinstance(exc, DomainError):
        return exc
    if isinstance(exc, exceptions.ValidationError):
        field, message = _first_field_error(exc.detail)
        return DomainError(
            "invalid_argument", message, field=field, area=area, details={"errors": exc.detail}
        )
    if isinstance(exc, exceptions.ParseError):
        return DomainError("invalid_json", str(exc.detail), area=area)
    if isinstance(exc, PayloadTooLarge | RequestDataTooBig):
        return DomainError(
            "payload_too_large",
            str(getattr(exc, "detail", "")) or "The request body is too large.",
            area=area,
        )
    # Authentication and the token's scope are the edge's (area ``loopx``: registry and
    # tokens), whichever app's route was asked: one 401/403 document everywhere.
    if isinstance(exc, exceptions.NotAuthenticated | exceptions.AuthenticationFailed):
        return DomainError("not_authenticated", str(exc.detail), area=EDGE_AREA)
    if isinstance(exc, CsrfFailed):
        return DomainError("csrf_failed", str(exc.detail), area=EDGE_AREA)
    if isinstance(exc, exceptions.PermissionDenied | DjangoPermissionDenied):
        message = getattr(exc, "detail", None) or "Outside this token's scope."
        return DomainError("scope_forbidden", str(message), area=EDGE_AREA)
    if isinstance(exc, exceptions.NotFound | Http404):
        return DomainError("resource_not_found", area=area)
    if isinstance(exc, exceptions.MethodNotAllowed):
        return DomainError("method_not_allowed", str(exc.detail), area=area)
    if isinstance(exc, exceptions.UnsupportedMediaType):
        return DomainError("unsupported_media_type", str(exc.detail), area=area)
    if isinstance(exc, exceptions.NotAcceptable):
        return DomainError("not_acceptable", str(exc.detail), area=area)
    if isinstance(exc, exceptions.Throttled):
        retry_after = math.ceil(exc.wait) if exc.wait is not None else None
        return DomainError(
            "throttled",
            "Too many requests for this credential; retry later.",
            area=area,
            details={"retry_after_seconds": retry_after} if retry_after is not None else {},
        )
    if isinstance(exc, exceptions.APIException):
        # Any other DRF exception: its code if declared, else by its status class.
        code = exc.default_code if exc.default_code in REGISTRY else "invalid_argument"
        if exc.status_code >= 500:
            code = "internal_error"
        return DomainError(code, str(exc.detail), area=area)
    return from_database_error(exc, area=area)


def _field_namer(request, field: str | None):
    """The API names a field as sent: backticks go from the names of this request's
    fields (body keys, query parameters, the error's own field); others stay."""
    names = {field} if field else set()
    data = getattr(request, "_full_data", None)
    if isinstance(data, dict):
        names |= set(data)
    query = getattr(request, "query_params", None)
    if query is not None:
        names |= set(query)
    names |= set((getattr(request, "parser_context", None) or {}).get("kwargs", {}))
    return lambda name: name if name in names else None


def exception_handler(exc, context):
    view = context.get("view")
    area = getattr(view, "error_area", "loopx")
    err = to_domain_error(exc, area)
    if err is None:
        return None
    # The message names the caller's input as the field they sent.
    err.message = name_fields(err.message, _field_namer(context.get("request"), err.field))
    headers = {}
    if err.http_status == 401:
        headers["WWW-Authenticate"] = 'Bearer realm="api"'
    if err.code == "throttled" and "retry_after_seconds" in err.details:
        headers["Retry-After"] = str(err.details["retry_after_seconds"])
    return Response(err.envelope(), status=err.http_status, headers=headers)
