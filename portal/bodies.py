"""Bounded request bodies, on every route: a body larger than its route takes is refused from its Content-Length,
before a byte of it is read, and no web server here reads what the application left unread into memory.

Only the two upload routes take a file (up to PAGETRAIL_MAX_UPLOAD_BYTES plus FRAMING_ALLOWANCE for the multipart
boundaries, part headers and form fields); every other route takes at most PAGETRAIL_MAX_FORM_BYTES. A body
without a Content-Length (chunked) is refused with 411: Django reads nothing of such a body anyway.
See docs/web-server.md.
"""

from django.conf import settings
from django.contrib import admin
from django.core.handlers.wsgi import LimitedStream
from django.shortcuts import render
from django.urls import Resolver404, resolve

from extraction.accounts import ServiceAccount
from extraction.intake import staging
from extraction.intake.validation import TooLarge
from portal.errors import api_error, is_api

FILE_ROUTES = {"api:submit": "api", "admin:extraction_bundle_add": "admin"}
FRAMING_ALLOWANCE = 64 * 1024
# What runserver may still read of an unread body to keep the connection open; beyond it, it closes.
DRAIN_ALLOWANCE = 64 * 1024


def declared_length(meta) -> int:
    try:
        return max(int(meta.get("CONTENT_LENGTH") or 0), 0)
    except ValueError:
        return 0  # as Django reads it: nothing


class BoundedBodyMiddleware:
    """Refuses a body over its route's limit from its headers alone (413, or 411 without a length).

    Sits after the authentication middleware (none before it reads the body), so that a refused upload of a
    known service account or user is recorded as a Rejection `too_large`, as one cut off while streaming is.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.META.get("HTTP_TRANSFER_ENCODING"):
            return refusal(
                request, 411, "length_required", "Send the body with a Content-Length; a chunked body is not accepted."
            )
        declared = declared_length(request.META)
        if declared <= settings.PAGETRAIL_MAX_FORM_BYTES:
            return self.get_response(request)
        upload = file_route(request.path_info)
        if upload and declared <= settings.PAGETRAIL_MAX_UPLOAD_BYTES + FRAMING_ALLOWANCE:
            return self.get_response(request)
        if upload:
            return refused_upload(request, upload, declared)
        limit = settings.PAGETRAIL_MAX_FORM_BYTES
        return refusal(
            request,
            413,
            "too_large",
            f"This request's body declares {declared} bytes; this address takes no file and at most {limit} bytes.",
        )


def file_route(path: str) -> str:
    """'api' or 'admin' for the routes that take a file, else ''."""
    try:
        return FILE_ROUTES.get(resolve(path).view_name, "")
    except Resolver404:
        return ""


def refused_upload(request, where: str, declared: int):
    """413 `too_large`; recorded as a Rejection (its size the declared length) when the sender may upload."""
    if who := uploader(request, where):
        refused = staging.refuse_cut_off("", declared, submitted_by=who)
        return refusal(request, 413, refused.code, refused.message, upload=True)
    refused = TooLarge(declared, settings.PAGETRAIL_MAX_UPLOAD_BYTES)
    return refusal(request, 413, refused.code, refused.message, upload=True)


def refused_for_space(request) -> None:
    """A 507 on a route that takes a file (the temp area full or read-only): recorded and alerted when the sender
    may upload (`extraction/intake/decision.py` `refuse_not_staged`), its size the declared length."""
    if (where := file_route(request.path)) and (who := uploader(request, where)):
        staging.refuse_not_staged("", int(request.META.get("CONTENT_LENGTH") or 0), submitted_by=who)


def uploader(request, where: str) -> str:
    """Who sent the upload, when they may upload at all: the Rejection names them."""
    if where == "api":
        scheme, _, token = request.headers.get("Authorization", "").partition(" ")
        account = ServiceAccount.for_token(token.strip()) if scheme.lower() == "bearer" and token else None
        return f"api:{account.name}" if account else ""
    user = request.user
    return user.get_username() if user.has_perm("extraction.submit_bundle") else ""


def refusal(request, status: int, code: str, message: str, upload: bool = False):
    """JSON under /api/, the admin's style elsewhere; the server then closes the connection (see LeaveUnreadBodies)."""
    if is_api(request):
        return api_error(status, code, message)
    context = {
        **admin.site.each_context(request),
        "title": "Not accepted",
        "code": code,
        "message": message,
        "upload": upload,
    }
    return render(request, "refused_body.html", context, status=status)


class LeaveUnreadBodies:
    """WSGI wrapper for runserver: Django's ServerHandler reads whatever the application left unread of a body
    in one `read()` to keep the connection alive, so a refused 2 GiB body would cost 2 GiB of memory. Here it
    closes the connection instead (an unknown response length makes it close), reading nothing more.

    gunicorn needs none of this: it closes a sync worker's connection after each request, draining at most
    64 KiB first. Its input is not a LimitedStream, and passes through untouched.
    """

    def __init__(self, application):
        self.application = application

    def __call__(self, environ, start_response):
        server_input = environ.get("wsgi.input")
        if not isinstance(server_input, LimitedStream):
            return self.application(environ, start_response)
        counted = environ["wsgi.input"] = CountingReader(server_input)

        def closing_start_response(status, headers, exc_info=None):
            unread = declared_length(environ) - counted.consumed
            if unread > DRAIN_ALLOWANCE or environ.get("HTTP_TRANSFER_ENCODING"):
                server_input.limit = 0
                headers = [(name, value) for name, value in headers if name.lower() != "content-length"]
            return start_response(status, headers, exc_info)

        return self.application(environ, closing_start_response)


class CountingReader:
    """The server's input as Django reads it, counting the bytes it took."""

    def __init__(self, stream):
        self.stream, self.consumed = stream, 0

    def read(self, size=-1, /):
        data = self.stream.read(size)
        self.consumed += len(data)
        return data

    def readline(self, size=-1, /):
        line = self.stream.readline(size)
        self.consumed += len(line)
        return line
