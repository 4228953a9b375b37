"""The job page: extraction's JobAdmin, with the story that links a job to its evidence (audit.review.job_page).

Built here because the story reads audit's models (audit may import extraction, never the reverse); registered
by the project (portal/admin.py), which is where admin pages that need both apps are registered.
"""

from django.core.exceptions import PermissionDenied
from django.http import JsonResponse
from django.shortcuts import get_object_or_404
from django.urls import path, reverse

from audit.admin.exports import ExportableList
from audit.models import Manifest
from audit.review import job_page
from audit.verification.state import OF_JOBS
from extraction.admin import JobAdmin

from .verified import JobOpenFindingsFilter, VerifiedColumn


class JobStoryAdmin(VerifiedColumn, ExportableList, JobAdmin):
    change_form_template = "audit/job_page/change_form.html"
    verification_paths = OF_JOBS
    export_fields = (
        "id",
        "status",
        "bundle__original_filename",
        "bundle__case_label",
        "bundle__page_count",
        "bundle__correlation_id",
        "provider",
        "provider_job_id",
        "extractor",
        "extractor_version",
        "generation",
        "enqueued_at",
        "picked_up_at",
        "submitted_at",
        "provider_finished_at",
        "manifest_durable_at",
        "deadline",
        "error_code",
        "error_message",
    )

    inlines = []  # the page's timeline lists every attempt once; the inline listed them a second time

    def manifest_of(self, job):
        return Manifest.objects.filter(job=job).first()

    def get_list_display(self, request):
        return self.verified_column(request, [*JobAdmin.get_list_display(self, request), "verified"])

    def get_list_filter(self, request):
        return [*super().get_list_filter(request), JobOpenFindingsFilter]

    def get_urls(self):
        return [
            path("<int:job_id>/state/", self.admin_site.admin_view(self.state_view), name="extraction_job_state"),
            *super().get_urls(),
        ]

    def change_view(self, request, object_id, form_url="", extra_context=None):
        job = self.get_queryset(request).select_related("bundle").filter(pk=object_id).first()
        story = {}
        if job and self.has_view_permission(request, job):
            story = {
                "job_state": job_page.state(job, request.user),
                "job_state_url": reverse("admin:extraction_job_state", args=[job.pk]),
            }
        return super().change_view(request, object_id, form_url, {**(extra_context or {}), **story})

    def state_view(self, request, job_id):
        """The small JSON the job page polls until the job is completed, failed or cancelled."""
        job = get_object_or_404(self.get_queryset(request).select_related("bundle"), pk=job_id)
        if not self.has_view_permission(request, job):
            raise PermissionDenied
        return JsonResponse(job_page.state(job, request.user))
