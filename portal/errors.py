"""The 403 page in the admin's style (with its navigation), for the admin and the portal's own views."""

from django.contrib import admin
from django.http import HttpResponseForbidden
from django.template.loader import render_to_string


def forbidden(request, exception=None):
    context = {**admin.site.each_context(request), "title": "You may not open this page"}
    return HttpResponseForbidden(render_to_string("403.html", context, request=request))
