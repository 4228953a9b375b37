"""The web tier's part of intake: stream an upload into private temp while hashing it, record it as a pending
Submission queued for the intake worker, and sweep staged bytes no submission owns."""

import hashlib
import os
import time
import uuid

from django.conf import settings
from django.utils import timezone

from core import stores

from . import decision, queue
from .submission import Submission
from .validation import StagedUpload, TooLarge


def display_name(filename: str) -> str:
    """A client's filename for display only: never a path."""
    return os.path.basename(filename or "")[:255]


def stage(stream, *, filename: str, submitted_by: str, at=None) -> StagedUpload:
    """Copy `stream` into temp, hashing as it goes; stop reading as soon as it passes the size limit.

    Raises TooLarge once its Rejection is recorded; the partial file is already deleted."""
    try:
        return _copy(stream, settings.PAGETRAIL_MAX_UPLOAD_BYTES)
    except TooLarge as refusal:
        raise refuse_cut_off(filename, refusal.seen, submitted_by, at) from None


def refuse_cut_off(filename: str, seen: int, submitted_by: str, at=None) -> TooLarge:
    """An upload over the size limit (cut off by the HTTP layer, or here while staging): recorded, and returned
    for the caller to answer with."""
    return decision.refuse_too_large(display_name(filename), seen, submitted_by, at)


def refuse_not_staged(filename: str, size: int, submitted_by: str, at=None) -> None:
    """An upload this host's temp area could not take (the caller answers 507): recorded and alerted."""
    decision.refuse_not_staged(display_name(filename), size, submitted_by, at)


def _copy(stream, limit: int) -> StagedUpload:
    path = stores.uploads_dir() / f"{uuid.uuid4().hex}.part"
    digest, size = hashlib.sha256(), 0
    try:
        with open(path, "wb") as out:
            while chunk := stream.read(stores.CHUNK):
                size += len(chunk)
                if size > limit:
                    raise TooLarge(size, limit)
                digest.update(chunk)
                out.write(chunk)
    except BaseException:
        path.unlink(missing_ok=True)
        raise
    return StagedUpload(path=path, size=size, sha256=digest.hexdigest())


def receive(
    staged: StagedUpload,
    *,
    filename: str,
    submitted_by: str,
    case_label: str = "",
    account=None,
    queued: bool = True,
    at=None,
) -> Submission:
    """Record the staged bytes as a pending submission and queue its decision once the transaction commits
    (unless the caller decides it itself: `queued=False`).

    An empty upload is refused here (nothing to validate), with its Rejection, like every refusal."""
    submission = Submission.objects.create(
        staged_name=staged.path.name,
        queue=settings.PAGETRAIL_INTAKE_QUEUE,
        size=staged.size,
        sha256=staged.sha256,
        original_filename=display_name(filename),
        submitted_by=submitted_by[:150],
        case_label=case_label,
        account=account,
        created_at=at or timezone.now(),
        last_woken_at=at or timezone.now(),
    )
    if staged.size == 0:
        decision.refuse(submission, "empty", "The file is empty.", at=at)
    elif queued:
        queue.decide_after_commit(submission)
    return submission


def submit_bundle(stream, *, filename: str, submitted_by: str, case_label: str = "", at=None) -> decision.IntakeResult:
    """Stage, then decide in this process (`submit_bundle --here`, tests): the web tier never calls this."""
    try:
        staged = stage(stream, filename=filename, submitted_by=submitted_by, at=at)
    except TooLarge as refusal:
        return decision.IntakeResult.refused(display_name(filename), refusal)
    submission = receive(
        staged, filename=filename, submitted_by=submitted_by, case_label=case_label, queued=False, at=at
    )
    return decision.result_of(decision.decide_here(submission, at))


def sweep_staged(now: float | None = None) -> int:
    """Remove staged uploads that no pending submission owns and nobody wrote to for the grace period
    (a request that died mid-body, or a file whose submission was decided but not deleted)."""
    cutoff = (now or time.time()) - settings.PAGETRAIL_STAGED_GRACE_SECONDS
    owned = set(Submission.objects.filter(state=Submission.State.PENDING).values_list("staged_name", flat=True))
    removed = 0
    for part in stores.uploads_dir().glob("*.part"):
        try:
            stale = part.name not in owned and part.stat().st_mtime < cutoff
        except FileNotFoundError:
            continue
        if stale:
            part.unlink(missing_ok=True)
            removed += 1
    return removed
