"""The lists' "verified" column and "has open findings" filter, for manifests and for jobs: both read the one
query of audit/verification/state.py, annotated on the page's queryset (no query per row)."""

from django.contrib import admin
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.html import format_html

from audit.verification import state as verification_state
from audit.verification.state import OF_BUNDLES, OF_CASES, OF_JOBS, OF_MANIFESTS

LINK_PERMISSIONS = ("audit.view_verificationrun", "audit.view_finding")


class OpenFindingsFilter(admin.SimpleListFilter):
    """Whether the latest verification of the row's manifest left findings open."""

    title, parameter_name = "verification", "findings"
    paths = OF_MANIFESTS

    def lookups(self, request, model_admin):
        return [("open", "has open findings"), ("none", "no open findings")]

    def queryset(self, request, queryset):
        if self.value() not in ("open", "none"):
            return queryset
        return verification_state.having_open_findings(queryset, self.paths, has=self.value() == "open")


class JobOpenFindingsFilter(OpenFindingsFilter):
    paths = OF_JOBS


class CaseOpenFindingsFilter(OpenFindingsFilter):
    paths = OF_CASES


class BundleOpenFindingsFilter(OpenFindingsFilter):
    paths = OF_BUNDLES


class VerifiedColumn:
    """Mixed into a list admin: `verified` (linked to the run, or to the open findings) for those who may open
    them, `verified_plain` for everyone else; the queryset carries the annotations. On the row's own page,
    `verification` (a read-only field) is the latest verification of its manifest, with the findings."""

    verification_paths = OF_MANIFESTS

    def manifest_of(self, row):
        return row

    def get_object(self, request, object_id, from_field=None):
        found = super().get_object(request, object_id, from_field)  # type: ignore[misc]
        if found is not None:
            found.seen_by = request.user  # who the page's links are for (verification below)
        return found

    @admin.display(description="latest verification")
    def verification(self, row):
        state = verification_state.of_manifest(self.manifest_of(row), getattr(row, "seen_by", None))
        return render_to_string("audit/includes/verification.html", {"verification": state})

    def get_queryset(self, request):
        return verification_state.with_verification(super().get_queryset(request), self.verification_paths)  # type: ignore[misc]

    def get_list_display(self, request):
        return self.verified_column(request, super().get_list_display(request))  # type: ignore[misc]

    @staticmethod
    def verified_column(request, shown) -> list:
        """The column linked only for those who may open the run and its findings."""
        if request.user.has_perms(LINK_PERMISSIONS):
            return list(shown)
        return [("verified_plain" if name == "verified" else name) for name in shown]

    @admin.display(description="verified", ordering="verified_at")
    def verified(self, row):
        text = self.verified_plain(row)
        if row.verified_run is None:
            return text
        url = (
            verification_state.findings_url(row.verified_run, row.verified_manifest)
            if row.run_findings
            else reverse("admin:audit_verificationrun_change", args=[row.verified_run])
        )
        return format_html('<a href="{}" title="verification run {}">{}</a>', url, row.verified_run, text)

    @admin.display(description="verified", ordering="verified_at")
    def verified_plain(self, row):
        return verification_state.verdict(row.verified_run, row.verified_status, row.run_findings, row.open_findings)
