"""*Export CSV* and *Export JSON* on an admin list: the list's own rows, with its filters, search and order.

A list declares `export_fields` (columns, with `__` across its forward relations) and mixes in ExportableList.
The links on the list carry its query string; the export builds the same ChangeList from it, so it holds
exactly the rows the list would show on all its pages, and whatever narrows the list for this user narrows
the export too. Whoever may view the list may export it; nobody else.
"""

from django.contrib import admin
from django.contrib.admin.options import IncorrectLookupParameters
from django.core.exceptions import PermissionDenied
from django.http import HttpResponse
from django.urls import path, reverse
from django.utils import timezone

from audit.export import lists as list_export

EXPORT_TEMPLATE = "admin/audit/exportable_change_list.html"

# Stable codes of a refused export, with the sentence a person reads.
REFUSALS = {
    "export_unknown_format": "Lists export as csv or json only.",
    "export_bad_filter": "These filters or this search do not apply to this list: open the list, choose them "
    "again, and export from there.",
}


def refused(code: str) -> HttpResponse:
    return HttpResponse(f"{code}: {REFUSALS[code]}\n", status=400, content_type="text/plain; charset=utf-8")


class ExportableList(admin.ModelAdmin):
    """Mix in before the admin's own base; set `export_fields`."""

    export_fields: tuple[str, ...] = ()
    change_list_template = EXPORT_TEMPLATE

    def get_urls(self):
        meta = self.model._meta
        return [
            path(
                "export/<str:fmt>/",
                self.admin_site.admin_view(self.export_view),
                name=f"{meta.app_label}_{meta.model_name}_export",
            ),
            *super().get_urls(),
        ]

    def changelist_view(self, request, extra_context=None):
        query = request.GET.copy()
        query.pop("p", None)  # the export is every page of the list, not the one on screen
        name = f"admin:{self.model._meta.app_label}_{self.model._meta.model_name}_export"
        suffix = f"?{query.urlencode()}" if query else ""
        links = {fmt: reverse(name, args=[fmt]) + suffix for fmt in list_export.FORMATS}
        return super().changelist_view(request, {**(extra_context or {}), "export_links": links})

    def export_view(self, request, fmt: str):
        if not self.has_view_permission(request):
            raise PermissionDenied
        if fmt not in list_export.FORMATS:
            return refused("export_unknown_format")
        try:
            changelist = self.get_changelist_instance(request)
        except IncorrectLookupParameters:
            return refused("export_bad_filter")
        at = timezone.now()
        meta = self.model._meta
        list_export.record_export(
            request.user.get_username(),
            meta.label_lower,
            fmt,
            request.GET.urlencode(),
            changelist.result_count,
            at,
        )
        return list_export.response(changelist.queryset, self.export_fields, fmt, meta.model_name or "list", at)
