"""Before an evidence export whose manifests have open verification findings: a page that lists them and asks
again, so no one hands over a package about evidence found wrong without knowing (the package says so too)."""

from django.contrib.admin import helpers
from django.template.response import TemplateResponse

from audit.export import sections

CONFIRMED = "export_with_findings"


def findings_to_confirm(modeladmin, request, queryset, action: str, manifests=None) -> TemplateResponse | None:
    """None when the export may go ahead: nothing is open, or the person has seen the list and confirmed.
    `queryset` is the selection (posted again on confirming); `manifests` what the package holds (the selection)."""
    if request.POST.get(CONFIRMED) == "yes":
        return None
    still_open = sections.open_findings(queryset if manifests is None else manifests)
    if not still_open:
        return None
    context = {
        **modeladmin.admin_site.each_context(request),
        "title": "Export evidence with open verification findings?",
        "back": request.get_full_path(),
        "opts": modeladmin.model._meta,
        "findings": still_open,
        "selected": list(queryset.values_list("pk", flat=True)),
        "action": action,
        "confirmed": CONFIRMED,
        "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
    }
    return TemplateResponse(request, "admin/audit/manifest/export_findings.html", context)
