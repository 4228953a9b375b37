"""Manifests in the HTTP API for upstream services (mounted in portal/api.py)."""

from django.http import HttpResponse
from django.shortcuts import get_object_or_404
from ninja import Router

from audit.models import Manifest
from core.api import RowId
from extraction.models import Job

router = Router(tags=["manifests"])
BYTES = {
    "description": "The canonical manifest bytes. Headers: X-Manifest-SHA256 (their sha256), "
    "X-Manifest-Signature (HMAC-SHA256), X-Manifest-Key-Id.",
    "content": {"application/json": {"schema": {"type": "object"}}},
}
ERROR = {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorOut"}}}}
RESPONSES = {
    200: BYTES,
    400: {"description": "The id is not a number.", **ERROR},
    401: {"description": "No valid service-account token.", **ERROR},
    404: {"description": "No such manifest (yet), or not one of this account's.", **ERROR},
    429: {"description": "Too many requests for this service account.", **ERROR},
}


def manifest_response(manifest: Manifest) -> HttpResponse:
    response = HttpResponse(manifest.body.encode("ascii"), content_type="application/json")
    response["X-Manifest-SHA256"], response["X-Manifest-Signature"] = manifest.sha256, manifest.signature
    response["X-Manifest-Key-Id"] = manifest.key_id
    return response


@router.get("/manifests/{manifest_id}", summary="A manifest's canonical bytes", openapi_extra={"responses": RESPONSES})
def get_manifest(request, manifest_id: RowId):
    return manifest_response(get_object_or_404(visible_to(request.auth), pk=manifest_id))


@router.get(
    "/jobs/{job_id}/manifest", summary="The manifest of a completed job", openapi_extra={"responses": RESPONSES}
)
def get_job_manifest(request, job_id: RowId):
    return manifest_response(get_object_or_404(visible_to(request.auth), job_id=job_id))


def visible_to(account):
    """Manifests of the jobs this account may read; another account's answer 404, like a missing one."""
    return Manifest.objects.filter(job__in=Job.objects.visible_to(account))
