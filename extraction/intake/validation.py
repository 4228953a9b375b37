"""What intake judges from the bytes we control, before any job exists: the size limit, whether they are a PDF
we are willing to extract from, and what the intake policy makes of what was found in them."""

from dataclasses import dataclass
from pathlib import Path

from core.limits import configured_limits
from extraction import pdf

from . import policy


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
    verdict: policy.Verdict


class TooLarge(pdf.Refusal):
    def __init__(self, seen: int, limit: int):
        super().__init__("too_large", f"The file is larger than the {limit // (1024 * 1024)} MiB limit.")
        self.seen = seen


def validate(staged: StagedUpload, at=None) -> Accepted:
    """Raise `pdf.Refusal` unless the staged bytes are a PDF we are willing to extract from, under the intake
    policy in force (its findings judged here, outside the PDF child)."""
    inspection = pdf.inspect_pdf(staged.path, configured_limits())
    return Accepted(staged=staged, inspection=inspection, verdict=policy.judge(inspection, policy.in_force(at)))
