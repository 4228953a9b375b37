"""Attached PDFs as bundles of their own: with PAGETRAIL_SUBMIT_ATTACHED_PDFS, each PDF attached inside a newly
accepted input is written out by the PDF child, staged, and submitted like an upload (same submitter, account and
case label), linked to its parent bundle, so its images are extracted too; it is judged like any upload."""

import logging
import uuid
from pathlib import Path

from django.conf import settings
from django.utils import timezone

from core import stores
from core.limits import configured_limits
from extraction import pdf

from . import queue
from .submission import Submission

log = logging.getLogger(__name__)


def submit_attached_pdfs(bundle, input_path: Path, parent: Submission, at=None) -> list[Submission]:
    """A pending submission for each PDF attached inside `bundle` (whose bytes are at `input_path`); one that
    cannot be written out is logged and left: the parent stands accepted either way."""
    if not settings.PAGETRAIL_SUBMIT_ATTACHED_PDFS:
        return []
    submitted = []
    for attachment in (a for a in bundle.attachments if a["pdf"]):
        try:
            written = pdf.write_attachment(input_path, attachment["object"], stores.uploads_dir(), configured_limits())
        except (pdf.Refusal, pdf.SandboxError) as exc:
            log.warning("bundle %s: attached PDF %s not submitted: %s", bundle.pk, attachment["object"], exc)
            continue
        staged = written.rename(stores.uploads_dir() / f"{uuid.uuid4().hex}.part")  # the sweep's name for staged bytes
        submitted.append(_receive(staged, attachment, bundle, parent, at))
    return submitted


def _receive(staged: Path, attachment: dict, bundle, parent: Submission, at) -> Submission:
    submission = Submission.objects.create(
        staged_name=staged.name,
        queue=settings.PAGETRAIL_INTAKE_QUEUE,
        size=attachment["size"],
        sha256=attachment["sha256"],
        original_filename=Path(attachment["name"]).name[:255] or f"attached to {bundle.file_name}"[:255],
        submitted_by=parent.submitted_by,
        case_label=parent.case_label,  # the sender's own label, as the parent's job shows it to them
        account=parent.account,
        parent_bundle=bundle,
        created_at=at or timezone.now(),
        last_woken_at=at or timezone.now(),
    )
    queue.decide_after_commit(submission)
    log.info("bundle %s: attached PDF %s submitted as submission %s", bundle.pk, attachment["name"], submission.pk)
    return submission
