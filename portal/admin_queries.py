"""The admin's lists take their filters from the address. A few lookups fail inside the database or Django itself (a
malformed pattern, a range of one value) and would answer HTML 500; no list filters by them, so they are refused
before any list runs, with a page that says why (code `admin_lookup_refused`). So is a NUL character in any value
(`admin_query_nul`): PostgreSQL refuses it in every string it is given."""

from django.contrib import admin
from django.http import HttpResponseBadRequest
from django.template.loader import render_to_string
from django.urls import reverse

REFUSED_LOOKUPS = {"regex", "iregex", "range"}
NUL_REASON = "The address holds a NUL character, which no name, label or hash contains: remove it and try again."
REASON = (
    "This list cannot be filtered by a pattern or a range written into its address ({lookup}): "
    "use its search box and the filters beside it."
)


class AdminQueryMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if not request.path_info.startswith(reverse("admin:index")):
            return self.get_response(request)
        refused = [key for key in request.GET if key.rsplit("__", 1)[-1] in REFUSED_LOOKUPS]
        if refused:
            return bad_request(request, "admin_lookup_refused", REASON.format(lookup=refused[0][:60]))
        if any("\x00" in key or "\x00" in value for key, values in request.GET.lists() for value in values):
            return bad_request(request, "admin_query_nul", NUL_REASON)
        return self.get_response(request)


def bad_request(request, code: str, reason: str) -> HttpResponseBadRequest:
    context = {**admin.site.each_context(request), "title": "This address cannot be read", "code": code}
    return HttpResponseBadRequest(render_to_string("400.html", {**context, "reason": reason}, request=request))
