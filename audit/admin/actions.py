"""Manifest changelist actions: the selected manifests as an evidence package download."""

import tempfile

from django.contrib import admin
from django.http import FileResponse
from django.utils.text import slugify

from audit.export.package import build_evidence
from audit.ledger import activity_records
from audit.models import Manifest
from core import stores
from extraction.models import Bundle

from .export_warning import findings_to_confirm


def evidence_download(queryset, user, include_assets: bool, case=None) -> FileResponse:
    """Build into an anonymous temp file (gone once the response closes it) and stream it."""
    stores.temp_root().mkdir(parents=True, exist_ok=True, mode=0o700)
    package = tempfile.TemporaryFile(dir=stores.temp_root())
    scope = {"case": case} if case is not None else {"manifests": queryset}
    try:
        summary = build_evidence(package, include_assets=include_assets, exported_by=user.get_username(), **scope)
    except BaseException:
        package.close()
        raise
    package.seek(0)
    first, last = summary["scope_sequences"]
    activity_records.record(
        user.get_username(),
        "evidence_exported",
        case or queryset.order_by("sequence").first(),
        after={"manifests": [first, last], "with_assets": include_assets},
    )
    label = package_label(queryset, case)
    name = (
        f"pagetrail-evidence-{label + '-' if label else ''}{first:06d}-{last:06d}"
        f"{'-with-assets' if include_assets else ''}.zip"
    )
    response = FileResponse(package, as_attachment=True, filename=name, content_type="application/zip")
    response["X-Content-Type-Options"] = "nosniff"
    response["Cache-Control"] = "private, no-store"
    return response


def package_label(queryset, case) -> str:
    """What the package is about, for its file name: the case, or the one bundle's case label or file name
    (sanitised to letters, digits and hyphens: it goes into a header and onto someone's disk)."""
    if case is not None:
        return slugify(case.name)[:60]
    bundles = list(Bundle.objects.filter(jobs__manifest__in=queryset).distinct()[:2])
    if len(bundles) != 1:
        return ""
    bundle = bundles[0]
    return slugify(bundle.case_label or bundle.original_filename.removesuffix(".pdf"))[:60]


@admin.action(description="Export evidence package (manifests, log proofs, results)", permissions=["export_evidence"])
def export_evidence_action(modeladmin, request, queryset):
    asked = findings_to_confirm(modeladmin, request, queryset, "export_evidence_action")
    return asked or evidence_download(queryset, request.user, include_assets=False)


@admin.action(description="Export evidence package with assets", permissions=["export_evidence"])
def export_evidence_with_assets_action(modeladmin, request, queryset):
    asked = findings_to_confirm(modeladmin, request, queryset, "export_evidence_with_assets_action")
    return asked or evidence_download(queryset, request.user, include_assets=True)


@admin.action(
    description="Export the selected case as its own evidence package (with its assets)",
    permissions=["export_evidence"],
)
def export_case_evidence_action(modeladmin, request, queryset):
    if queryset.count() != 1:
        modeladmin.message_user(request, "Select exactly one case to export.", level="error")
        return None
    case = queryset.get()
    manifests = Manifest.objects.filter(pk=case.case_map.manifest_id)
    asked = findings_to_confirm(modeladmin, request, queryset, "export_case_evidence_action", manifests)
    return asked or evidence_download(None, request.user, include_assets=True, case=case)
