"""Error pages: JSON with a stable code under /api/ (also for what Django refuses before an API view runs), and
the admin's style (with its navigation) for the admin and the portal's own views."""

from django.contrib import admin
from django.core.exceptions import (
    BadRequest,
    DisallowedHost,
    RequestDataTooBig,
    SuspiciousOperation,
    TooManyFieldsSent,
    TooManyFilesSent,
)
from django.http import HttpResponseForbidden, HttpResponseNotFound, JsonResponse
from django.template.loader import render_to_string
from django.views import defaults

# Most specific first: each is a SuspiciousOperation, which Django answers with a bare HTML 400 of its own.
REFUSALS = [
    (DisallowedHost, 400, "bad_host", "This server does not answer for the Host this request names."),
    (RequestDataTooBig, 413, "too_large", "The request's form fields are larger than this server accepts."),
    (TooManyFieldsSent, 400, "too_many_fields", "The request holds more form fields than this server accepts."),
    (TooManyFilesSent, 400, "too_many_files", "The request holds more files than this server accepts; send one."),
    (SuspiciousOperation, 400, "bad_request", "The request is malformed."),
    (BadRequest, 400, "bad_request", "The request is malformed."),
]
REFUSED = tuple(kind for kind, *_ in REFUSALS)


def api_error(status: int, code: str, message: str) -> JsonResponse:
    return JsonResponse({"error": {"code": code, "message": message}}, status=status)


def refused(exception) -> JsonResponse:
    """The JSON answer to what Django refuses as suspicious (never the exception's own text: it may echo input)."""
    status, code, message = next((s, c, m) for kind, s, c, m in REFUSALS if isinstance(exception, kind))
    return api_error(status, code, message)


def is_api(request) -> bool:
    return request.path_info.startswith("/api/")


def bad_request(request, exception=None):
    if is_api(request):
        return refused(exception if isinstance(exception, REFUSED) else BadRequest())
    return defaults.bad_request(request, exception)


def server_error(request):
    if is_api(request):
        return api_error(500, "internal_error", "Pagetrail failed to handle this request; it has been logged.")
    return defaults.server_error(request)


def forbidden(request, exception=None):
    if is_api(request):
        return api_error(403, "forbidden", "This service account may not do this.")
    context = {**admin.site.each_context(request), "title": "You may not open this page"}
    return HttpResponseForbidden(render_to_string("403.html", context, request=request))


def not_found(request, exception=None):
    """In the admin's style with its navigation (Django's own page is bare), saying nothing of what was asked."""
    if is_api(request):
        return api_error(404, "not_found", "There is nothing at this address.")
    context = {**admin.site.each_context(request), "title": "There is no such page"}
    return HttpResponseNotFound(render_to_string("404.html", context, request=request))
