"""Edge answers that must never be a traceback or an HTML page on the API.

* ``EdgeErrorsMiddleware``: a database outage inside a view (``OperationalError`` /
  ``InterfaceError``) becomes 503 — the error envelope under ``/api/``, a small HTML page
  elsewhere (the admin) — and an ``/api/…`` path that no route matches answers the JSON
  404 envelope instead of Django's page (also with ``DEBUG`` on). An ``/api/…`` path
  without its trailing slash is served as the route with the slash (never a 301 to an
  HTML page that a client would follow without its POST body).
* ``handler400`` / ``handler404`` / ``handler500`` (wired in ``loopx_site.urls``) do the same
  for failures outside a view: an oversized body (413), unknown paths, and a database
  outage met by a middleware.
* A hand-typed admin filter the list cannot apply (an unknown field, a malformed value,
  or a lookup the admin forbids) is a 400 page naming the parameters, with a link to the
  unfiltered list and one warning line in the log — not Django's "database error" page
  or an ERROR with a traceback.
* Django's own log line for an oversized body keeps no traceback
  (``loopx_site.core.logging.NoTraceback`` in ``LOGGING``).
"""

import logging
import sys

from django.contrib.admin.exceptions import DisallowedModelAdminLookup
from django.contrib.admin.views.main import ERROR_FLAG
from django.core.exceptions import RequestDataTooBig
from django.db import InterfaceError, OperationalError
from django.http import HttpResponse, JsonResponse
from django.urls import is_valid_path
from django.utils.html import escape
from django.views import defaults

from loopx_site.core.errors import DomainError

logger = logging.getLogger("loopx.edge")

API_PREFIX = "/api/"
ADMIN_PREFIX = "/admin/"
DATABASE_DOWN = (OperationalError, InterfaceError)

_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title></head>
<body><h1>{title}</h1><p>{message}</p></body></html>
"""


def is_api(request) -> bool:
    return request.path.startswith(API_PREFIX)


def _envelope_response(err: DomainError, **headers) -> JsonResponse:
    response = JsonResponse(err.envelope(), status=err.http_status)
    for name, value in headers.items():
        response[name.replace("_", "-")] = value
    return response


def database_unavailable(request) -> HttpResponse:
    logger.warning("database unavailable while serving a request")
    message = "The database is unavailable; nothing was written. Try again shortly."
    if is_api(request):
        err = DomainError("database_unavailable", message)
        return _envelope_response(err, Retry_After="5")
    page = _PAGE.format(title="Service unavailable (503)", message=message)
    response = HttpResponse(page, status=503, content_type="text/html; charset=utf-8")
    response["Retry-After"] = "5"
    return response


def payload_too_large(request) -> HttpResponse:
    logger.warning("request body over DATA_UPLOAD_MAX_MEMORY_SIZE refused")
    message = "The request body is too large."
    if is_api(request):
        return _envelope_response(DomainError("payload_too_large", message))
    page = _PAGE.format(title="Payload too large (413)", message=message)
    return HttpResponse(page, status=413, content_type="text/html; charset=utf-8")


def bad_admin_filter(request) -> HttpResponse:
    names = sorted(k for k in request.GET if k != ERROR_FLAG)
    logger.warning("admin list filter refused: %s", ", ".join(names) or "(none)")
    listed = ", ".join(f"<code>{escape(n)}</code>" for n in names) or "the query"
    message = (
        f"This list cannot be filtered by {listed}. "
        f'<a href="{escape(request.path)}">Show the whole list</a> and use the filters beside it.'
    )
    page = _PAGE.format(title="Bad filter (400)", message=message)
    return HttpResponse(page, status=400, content_type="text/html; charset=utf-8")


def _is_admin_filter_refusal(request, response) -> bool:
    """Django's changelist answers an unusable lookup with a redirect to ``?e=1``."""
    return (
        request.path.startswith(ADMIN_PREFIX)
        and response.status_code == 302
        and response.get("Location", "") == f"{request.path}?{ERROR_FLAG}=1"
    )


def api_not_found() -> JsonResponse:
    return _envelope_response(DomainError("route_not_found"))


def _serve_without_slash(request) -> None:
    """An ``/api/…`` path written without its trailing slash is served as the route it
    names (both forms answer alike): no 301 to an HTML page, no POST body lost."""
    path = request.path_info
    if not is_api(request) or path.endswith("/"):
        return
    urlconf = getattr(request, "urlconf", None)
    if not is_valid_path(path, urlconf) and is_valid_path(f"{path}/", urlconf):
        request.path_info = f"{path}/"
        request.path = f"{request.path}/"


class EdgeErrorsMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        _serve_without_slash(request)
        response = self.get_response(request)
        if (
            response.status_code == 404
            and is_api(request)
            and not response.get("Content-Type", "").startswith("application/json")
        ):
            return api_not_found()
        if _is_admin_filter_refusal(request, response):
            return bad_admin_filter(request)
        return response

    def process_exception(self, request, exception):
        if isinstance(exception, DATABASE_DOWN):
            return database_unavailable(request)
        if isinstance(exception, RequestDataTooBig):
            return payload_too_large(request)
        if isinstance(exception, DisallowedModelAdminLookup):
            return bad_admin_filter(request)
        return None


def handler400(request, exception=None):
    if isinstance(exception, RequestDataTooBig):
        return payload_too_large(request)
    if is_api(request):
        return _envelope_response(DomainError("invalid_argument", "Bad request."))
    return defaults.bad_request(request, exception)


def handler404(request, exception=None):
    if is_api(request):
        return api_not_found()
    return defaults.page_not_found(request, exception)


def handler500(request):
    exc = sys.exc_info()[1]
    if isinstance(exc, DATABASE_DOWN):
        return database_unavailable(request)
    if is_api(request):
        err = DomainError("internal_error")
        return _envelope_response(err)
    return defaults.server_error(request)
