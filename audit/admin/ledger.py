"""The ledger's page for Compliance staff: its signed checkpoints, their RFC 3161 timestamps, the inclusion proof of
any manifest, and how to check them all outside the portal (docs/transparency-log.md)."""

import json

from cryptography import x509
from django.conf import settings
from django.contrib import admin
from django.http import HttpResponse
from django.shortcuts import get_object_or_404
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join

from audit.ledger import proofs, witnessing
from audit.models import LogCheckpoint, Manifest
from audit.verifier import timestamps
from core import display
from core.admin_base import ReadOnlyAdmin

# Each line is checked by hand or by a machine the operator does not control (docs/transparency-log.md).
OUTSIDE = (
    "# the newest signed note; a newer head must extend an older one\n"
    "curl -s {base}/api/v1/log/checkpoint\n"
    "curl -s '{base}/api/v1/log/consistency?first=N&second=M'\n"
    "# a witness keeps the heads it saw, with keys obtained out of band (/signing-keys.json)\n"
    "python manage.py witness {base} --state witness.json --public-keys signing-keys.json --origin {origin}\n"
    "# an evidence package: every signature and proof inside, offline\n"
    "python3 verify_evidence.pyz package.zip --public-keys signing-keys.json"
)


@admin.register(LogCheckpoint)
class LogCheckpointAdmin(ReadOnlyAdmin):
    """Signed heads of the ledger, newest first; each holds every leaf before its size."""

    list_display = ("tree_size", "root", "created_at", "timestamped")
    readonly_fields = (
        "tree_size",
        "root_hash",
        "created_at",
        "timestamp",
        "cosigned_by",
        "note_shown",
        "storage_name",
        "prove",
    )
    fields = readonly_fields
    search_fields = ("=tree_size", "^root_hash")
    search_help_text = "A tree size, or the start of a root hash (hex)."

    def get_urls(self):
        proof = self.admin_site.admin_view(self.inclusion_proof)
        return [
            path("<int:checkpoint_id>/inclusion/", proof, name="audit_logcheckpoint_inclusion"),
            *super().get_urls(),
        ]

    @admin.display(description="root hash")
    def root(self, checkpoint):
        return display.short_id(checkpoint.root_hash)

    @admin.display(description="RFC 3161 timestamp", boolean=True)
    def timestamped(self, checkpoint):
        return bool(checkpoint.timestamp_token)

    @admin.display(description="RFC 3161 timestamp")
    def timestamp(self, checkpoint):
        return timestamp_said(checkpoint)

    @admin.display(description="witness cosignatures")
    def cosigned_by(self, checkpoint):
        rows = [(c.witness, c.key_id, display.timestamp(c.signed_at)) for c in checkpoint.cosignatures.all()]
        if not rows:
            return "none yet (the witnesses of PAGETRAIL_WITNESSES are asked after each new checkpoint)"
        return format_html_join("", "<div>{} (key {}), at {}</div>", rows)

    @admin.display(description="signed note, with the cosignatures")
    def note_shown(self, checkpoint):
        return format_html('<pre id="checkpoint-note">{}</pre>', witnessing.cosigned_note(checkpoint))

    @admin.display(description="inclusion proof of a manifest")
    def prove(self, checkpoint):
        return format_html(
            '<form method="get" action="{}" id="prove-manifest">Manifest sequence '
            '<input type="number" name="sequence" min="0" required aria-label="manifest sequence"> '
            '<button type="submit">Download its proof (JSON)</button></form>'
            '<p>How to check the log outside the portal:</p><pre id="check-outside">{}</pre>',
            reverse("admin:audit_logcheckpoint_inclusion", args=[checkpoint.pk]),
            OUTSIDE.format(base=settings.PAGETRAIL_BASE_URL.rstrip("/"), origin=settings.PAGETRAIL_LOG_ORIGIN),
        )

    def inclusion_proof(self, request, checkpoint_id: int):
        """The same JSON as the API's inclusion proof, for a person who may read the manifest and this log."""
        if not (self.has_view_permission(request) and request.user.has_perm("audit.view_manifest")):
            return _refused(403, "forbidden", "Reading a proof needs the view permissions of manifests and the log.")
        checkpoint = get_object_or_404(LogCheckpoint, pk=checkpoint_id)
        sequence = request.GET.get("sequence", "")
        manifest = Manifest.objects.filter(sequence=int(sequence)).first() if sequence.isdigit() else None
        leaf = getattr(manifest, "log_leaf", None)
        if manifest is None or leaf is None:
            return _refused(404, "not_found", f"No manifest with sequence {sequence[:20]!r} is in the ledger.")
        proof = proofs.inclusion(leaf, checkpoint)
        if proof is None:
            return _refused(409, "not_checkpointed", f"The checkpoint at {checkpoint.tree_size} leaves precedes it.")
        response = HttpResponse(json.dumps({"manifest": manifest.pk, **proof}, indent=2), "application/json")
        name = f"inclusion-proof-manifest-{manifest.sequence:06d}-in-{checkpoint.tree_size}.json"
        response["Content-Disposition"] = f'attachment; filename="{name}"'
        return response


def _refused(status: int, code: str, message: str) -> HttpResponse:
    return HttpResponse(json.dumps({"error": {"code": code, "message": message}}), "application/json", status=status)


def timestamp_said(checkpoint: LogCheckpoint) -> str:
    """What a person reads of a checkpoint's RFC 3161 token: its time once checked against the TSA's certificate."""
    token = bytes(checkpoint.timestamp_token)
    if not token:
        return "none (no TSA configured, or it did not answer when this was signed)"
    if not settings.PAGETRAIL_TSA_CERTIFICATE:
        return f"a token of {len(token)} bytes; set PAGETRAIL_TSA_CERTIFICATE to check it and show its time"
    with open(settings.PAGETRAIL_TSA_CERTIFICATE, "rb") as fh:
        certificate = x509.load_pem_x509_certificate(fh.read())
    try:
        at = timestamps.check(token, checkpoint.note.encode(), certificate)
    except timestamps.TimestampError as exc:
        return f"does not count: {exc}"
    return f"{display.timestamp(at)}, checked against the TSA's certificate"
