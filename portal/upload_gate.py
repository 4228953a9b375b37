"""Who may send a body to a route that takes a file, decided from the request's headers before a byte of the body is
read: otherwise the server spools a stranger's 100 MiB into the temp area before the view turns them away.

- the admin's *Upload a PDF bundle*: a signed-in staff user who may add bundles, else the admin's own answers (302 to
  its login, 403). An `X-CSRFToken` header is checked against the CSRF cookie here, by Django's own check, so a wrong
  one is a 403 with the body unread. Without the header (the admin's own form: its token is a field of the body)
  Django checks the form's token once the body is read, which only a signed-in uploader's request reaches.
- the API's `POST /api/v1/bundles`: a valid service-account token, else 401 `unauthenticated`.

The admin's body is then read here, so a full temp area is a 507 page rather than a 500 from inside Django's CSRF
check (the API answers its own 507). See docs/web-server.md.
"""

from django.conf import settings
from django.contrib import admin
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import QueryDict
from django.middleware.csrf import CsrfViewMiddleware
from django.urls import reverse
from django.utils.datastructures import MultiValueDict

from core import stores
from extraction.admin import NOT_STORED
from extraction.models import Bundle
from extraction.uploads import discard_part_written
from portal.api import TokenAuth, unauthenticated
from portal.bodies import file_route, refusal, refused_for_space


class UploadGateMiddleware:
    """Refuses an upload from anyone who may not upload, and a wrong CSRF header, before the body is read.

    Sits after the bounded-body check and before anything that reads the body (CsrfViewMiddleware reads it in
    `process_view`, which runs after every middleware's `__call__`)."""

    def __init__(self, get_response):
        self.get_response = get_response
        self.csrf = CsrfViewMiddleware(get_response)

    def __call__(self, request):
        where = file_route(request.path_info) if request.method == "POST" else ""
        if where == "api" and TokenAuth()(request) is None:
            return unauthenticated(request, None)
        if where == "admin" and (refused := self.admin_refusal(request)):
            return refused
        if where:
            stores.request_files_dir()  # Django spools file parts here: recreated if someone cleaned it away
        if where == "admin" and (refused := read_body(request)):
            return refused
        return self.get_response(request)

    def admin_refusal(self, request):
        if not admin.site.has_permission(request):  # not signed in, inactive, not staff: as the admin answers
            return redirect_to_login(request.get_full_path(), reverse("admin:login"))
        if not admin.site.get_model_admin(Bundle).has_add_permission(request):
            raise PermissionDenied
        if settings.CSRF_HEADER_NAME in request.META:
            return self.csrf_from_headers(request)
        return None

    def csrf_from_headers(self, request):
        """Django's own CSRF check (Origin, cookie, header) with the body's form fields left out: they are unread.
        Passing marks the request checked, so Django's middleware does not read the body for the form's token."""
        request._post, request._files = QueryDict(), MultiValueDict()
        try:
            # No view is resolved yet: Django's check asks the view only whether it is csrf_exempt, None never is.
            return self.csrf.process_view(request, None, (), {})  # type: ignore[arg-type]
        finally:
            del request._post, request._files


def read_body(request):
    """Parse the upload now: a temp area that cannot take it is a 507 page, and its part-written file is removed."""
    try:
        request.FILES  # noqa: B018  (reading it parses the body)
    except OSError:
        discard_part_written(request)
        refused_for_space(request)
        return refusal(request, 507, "storage_unavailable", NOT_STORED, upload=True)
    return None
