"""Permission-checked downloads of stored inputs."""

from django.contrib.admin.views.decorators import staff_member_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404
from django.urls import reverse

from core import stores

from .models import Bundle
from .signals import alert
from .visibility import bundles as visible_bundles

CHANGED = (
    "The stored input no longer matches its correlation id (sha256 {correlation_id}), so it is not served: "
    "the evidence names other bytes. An alert was raised; run a verification."
)


@staff_member_required
def download_input(request, bundle_id: int):
    if not request.user.has_perm("extraction.download_input"):  # not implied by seeing the bundle
        raise PermissionDenied
    bundle = get_object_or_404(visible_bundles(request.user), pk=bundle_id)
    if bundle.input_deleted_at:
        raise Http404("The input was deleted under its retention policy.")
    # Hashed before it is served (a second read): bytes sent under the correlation id's name must be those bytes.
    if stores.sha256_of(stores.inputs(), bundle.input_name) != bundle.correlation_id:
        # The link goes to the bundle, which everyone told about the alert may open (not all may download).
        alert.send(
            Bundle,
            kind="input_changed",
            key=f"input-changed-{bundle.pk}",
            link=reverse("admin:extraction_bundle_change", args=[bundle.pk]),
            message=f"The stored input of {bundle.file_name} (bundle {bundle.correlation_id[:16]}) no longer matches "
            "its hash.",
        )
        return HttpResponse(
            CHANGED.format(correlation_id=bundle.correlation_id), status=409, content_type="text/plain; charset=utf-8"
        )
    return stores.attachment(stores.inputs(), bundle.input_name, f"{bundle.correlation_id}.pdf", "application/pdf")
