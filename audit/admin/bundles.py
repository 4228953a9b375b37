"""The bundle page and list with the latest verification of the bundle's newest manifest (its latest
extraction): extraction's BundleAdmin with audit's column, filter and page part, registered by the project
(portal/admin.py), as the job page is."""

from audit.admin.verified import BundleOpenFindingsFilter, VerifiedColumn
from audit.models import Manifest
from audit.verification.state import OF_BUNDLES
from extraction.admin import BundleAdmin


class BundleVerifiedAdmin(VerifiedColumn, BundleAdmin):
    verification_paths = OF_BUNDLES

    def manifest_of(self, bundle):
        return Manifest.objects.filter(job__bundle=bundle).order_by("-sequence").first()

    def get_list_display(self, request):
        return self.verified_column(request, [*BundleAdmin.get_list_display(self, request), "verified"])

    def get_list_filter(self, request):
        return [*super().get_list_filter(request), BundleOpenFindingsFilter]

    def get_readonly_fields(self, request, obj=None):
        return [*super().get_readonly_fields(request, obj), "verification"]
