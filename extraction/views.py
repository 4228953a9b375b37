"""Permission-checked downloads of stored inputs."""

from django.contrib.admin.views.decorators import staff_member_required
from django.core.exceptions import PermissionDenied
from django.http import Http404
from django.shortcuts import get_object_or_404

from . import stores
from .models import Bundle


@staff_member_required
def download_input(request, bundle_id: int):
    if not request.user.has_perm("extraction.view_bundle"):
        raise PermissionDenied
    bundle = get_object_or_404(Bundle, pk=bundle_id)
    if bundle.input_deleted_at:
        raise Http404("The input was deleted under its retention policy.")
    return stores.attachment(stores.inputs(), bundle.input_name, f"{bundle.correlation_id}.pdf", "application/pdf")
