"""The verification run's page: every figure on it is one polled state (static/portal/live.js)."""

from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.http import JsonResponse
from django.shortcuts import get_object_or_404, redirect
from django.urls import path, reverse
from django.utils.html import format_html

from audit.admin.exports import ExportableList
from audit.ledger import activity_records
from audit.models import VerificationRun
from audit.verification import queued_runs, verify
from core import display
from core.admin_base import ReadOnlyAdmin
from core.admin_filters import DateRangeFilter
from extraction.search import NamedSearch, case_label_filter


@admin.register(VerificationRun)
class VerificationRunAdmin(NamedSearch, ExportableList, ReadOnlyAdmin):
    """A run's page: every figure on it (title included) is one element of the same polled state, so the
    page never says "queued, 0 findings" beside a finished run's result (static/portal/live.js)."""

    list_display = ("id", "status", "scope", "progress", "findings_link", "started_by", "created_at", "finished_at")
    list_filter = ("status", case_label_filter("scope_bundle"), ("created_at", DateRangeFilter))
    list_select_related = ("scope_bundle",)
    export_fields = (
        "id",
        "status",
        "started_by",
        "scope_bundle__original_filename",
        "scope_bundle__correlation_id",
        "scope_from",
        "scope_to",
        "manifests_total",
        "manifests_done",
        "assets_total",
        "assets_done",
        "bytes_done",
        "findings_count",
        "error",
        "created_at",
        "started_at",
        "finished_at",
    )
    # A run of one bundle is found by the bundle's names; a run of everything by who started it.
    bundle_paths, also_containing = ("scope_bundle",), ("started_by",)
    search_fields = ("scope_bundle__original_filename", "scope_bundle__case_label", "started_by")
    readonly_fields = (
        "live_status",
        "scope",
        "progress",
        "findings_link",
        "checked",
        "started_by",
        "live_error",
        "created_at",
        "live_started_at",
        "live_finished_at",
    )
    fields = readonly_fields
    change_list_template = "admin/audit/verificationrun/change_list.html"
    change_form_template = "admin/audit/verificationrun/change_form.html"

    def get_urls(self):
        return [
            path("start/", self.admin_site.admin_view(self.start_view), name="audit_verificationrun_start"),
            path(
                "<int:run_id>/progress/",
                self.admin_site.admin_view(self.progress_view),
                name="audit_verificationrun_progress",
            ),
            *super().get_urls(),
        ]

    def start_view(self, request):
        """POST: start a whole-deployment run in the background and show its page."""
        if request.method != "POST" or not request.user.has_perm("audit.run_verification"):
            raise PermissionDenied
        run = verify.start_run(request.user.get_username())
        activity_records.record(request.user.get_username(), "verification_started", run, after={"scope": run.scope})
        queued_runs.queue_after_commit(run)
        return redirect(reverse("admin:audit_verificationrun_change", args=[run.pk]))

    def change_view(self, request, object_id, form_url="", extra_context=None):
        run = VerificationRun.objects.filter(pk=object_id).first()
        extra = {**(extra_context or {}), "run_state": progress_of(run)["text"] if run else {}}
        if request.user.has_perm("audit.export_evidence"):
            # The next step after a run: its evidence, exported from the manifests (an action there).
            extra["evidence_url"] = reverse("admin:audit_manifest_changelist")
        return super().change_view(request, object_id, form_url, extra)

    def progress_view(self, request, run_id):
        if not self.has_view_permission(request):
            raise PermissionDenied
        run = get_object_or_404(VerificationRun, pk=run_id)
        return JsonResponse(progress_of(run))

    @admin.display(description="status")
    def live_status(self, run):
        return live(run, "status")

    @admin.display(description="progress")
    def progress(self, run):
        return live(run, "progress")

    @admin.display(description="checked")
    def checked(self, run):
        return live(run, "checked")

    @admin.display(description="error")
    def live_error(self, run):
        return live(run, "error")

    @admin.display(description="started at")
    def live_started_at(self, run):
        return live(run, "started_at")

    @admin.display(description="finished at")
    def live_finished_at(self, run):
        return live(run, "finished_at")

    @admin.display(description="findings")
    def findings_link(self, run):
        url = reverse("admin:audit_finding_changelist") + f"?run__id__exact={run.pk}"
        return format_html('<a href="{}">{}</a>', url, live(run, "findings_text"))


FINAL_RUN = (VerificationRun.Status.PASSED, VerificationRun.Status.FAILED, VerificationRun.Status.ERROR)


def live(run: VerificationRun, name: str):
    """One figure of the run, marked for live.js to keep current (plain text where nothing is polled)."""
    return format_html('<span data-live="{}">{}</span>', name, progress_of(run)["text"][name])


def progress_of(run: VerificationRun) -> dict:
    done, total = run.assets_done, run.assets_total
    percent = round(100 * done / total) if total else (100 if run.finished_at else 0)
    progress = f"{done} of {total} assets ({percent}%), {run.manifests_done} of {run.manifests_total} manifests"
    text = {
        "title": str(run),
        "status": run.status,
        "progress": progress,
        "percent": str(percent),
        "findings": str(run.findings_count),
        "findings_text": f"{run.findings_count} finding(s)",
        "checked": display.size(run.bytes_done),
        "error": run.error or "–",
        "started_at": display.timestamp(run.started_at),
        "finished_at": display.timestamp(run.finished_at),
    }
    return {
        "status": run.status,
        "final": run.status in FINAL_RUN,
        "assets_done": done,
        "assets_total": total,
        "percent": percent,
        "manifests_done": run.manifests_done,
        "findings": run.findings_count,
        "progress": progress,
        "text": text,
    }
