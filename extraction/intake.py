"""Validation of a submitted bundle from the bytes we control, before any job exists."""

import hashlib
import uuid
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

from extraction import pdf
from extraction.providers.local import configured_limits

from . import stores


@dataclass
class StagedUpload:
    """The received bytes in the private temp area, hashed while they were written."""

    path: Path
    size: int
    sha256: str  # empty when the upload was cut off at the size limit


@dataclass(frozen=True)
class Accepted:
    staged: StagedUpload
    inspection: pdf.Inspection


def stage(stream, limit: int | None = None) -> StagedUpload:
    """Copy `stream` into temp, hashing as it goes; stop reading as soon as it passes `limit`.

    On a refusal the partial file is already deleted; the Refusal carries the bytes seen.
    """
    limit = limit or settings.PAGETRAIL_MAX_UPLOAD_BYTES
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


class TooLarge(pdf.Refusal):
    def __init__(self, seen: int, limit: int):
        super().__init__("too_large", f"The file is larger than the {limit // (1024 * 1024)} MiB limit.")
        self.seen = seen


def validate(staged: StagedUpload) -> Accepted:
    """Raise `pdf.Refusal` unless the staged bytes are a PDF we are willing to extract from."""
    return Accepted(staged=staged, inspection=pdf.inspect_pdf(staged.path, configured_limits()))
