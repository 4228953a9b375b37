"""The one small interface every extraction provider implements."""

import json
from dataclasses import dataclass, field
from pathlib import Path

from extraction.pdf.protocol import to_json


class ProviderError(Exception):
    """A provider call failed. `permanent` says whether trying again could help."""

    def __init__(
        self,
        code: str,
        message: str,
        *,
        permanent: bool,
        http_status: int | None = None,
        retry_after_s: float | None = None,
    ):
        super().__init__(message)
        self.code, self.message, self.permanent = code, message, permanent
        self.http_status, self.retry_after_s = http_status, retry_after_s


@dataclass(frozen=True)
class Exchange:
    """What the provider's last HTTP exchange looked like, for the Attempt row."""

    http_status: int | None = None
    retry_after_s: float | None = None


@dataclass(frozen=True)
class ReportedImage:
    """One extracted image as the provider reports it, before we have stored it (stored, it is an Asset)."""

    key: str  # the provider's handle for fetch()
    sha256: str
    size: int
    content_type: str
    width: int
    height: int
    placements: tuple[tuple[int, int], ...]  # (page from 1, index on page from 0)
    # How the file was made from the PDF, when the provider says (see pdf.WrittenImage).
    colorspace: str = ""
    bits: int = 0
    method: str = ""
    stream_sha256: str = ""

    @property
    def first_placement(self) -> tuple[int, int]:
        return min(self.placements)


@dataclass(frozen=True)
class JobReport:
    """What the provider says about a job: `state` is running, completed, failed or cancelled."""

    state: str
    pages: int = 0
    assets: tuple[ReportedImage, ...] = ()
    warnings: tuple[str, ...] = ()
    error_code: str = ""
    error_message: str = ""
    meta: dict = field(default_factory=dict)


def save_report(work_dir: Path, report: JobReport) -> None:
    """Keep a final report in the job's temp dir (write, then rename: never half a report)."""
    tmp = work_dir / "report.json.tmp"
    tmp.write_text(to_json(report))
    tmp.rename(work_dir / "report.json")


def load_report(work_dir: Path) -> JobReport | None:
    path = work_dir / "report.json"
    if not path.exists():
        return None
    data = json.loads(path.read_text())
    assets = tuple(ReportedImage(**{**a, "placements": tuple(map(tuple, a["placements"]))}) for a in data.pop("assets"))
    return JobReport(**{**data, "assets": assets, "warnings": tuple(data["warnings"])})


class Provider:
    """Start a job, check it, fetch its assets.

    `start` must be idempotent for `job.idempotency_key`: calling it twice (a retry after a
    timeout, a redelivered task) returns the same provider job id and never a second job.
    `check` reports the provider's state; `fetch` puts one asset's bytes in a file under the
    job's private `work_dir` and returns its path (the caller verifies size and sha256).
    Errors are `ProviderError`s.
    """

    name = ""
    extractor = ""
    version = ""
    remote = False  # downloads are separate, recorded tries
    last = Exchange()

    def start(self, job) -> str:
        raise NotImplementedError

    def check(self, job, work_dir: Path) -> JobReport:
        raise NotImplementedError

    def kept_download(self, asset: ReportedImage, work_dir: Path) -> Path | None:
        """The file an earlier try of this job already fetched and verified, if any (remote providers)."""
        return None

    def fetch(self, job, asset: ReportedImage, work_dir: Path) -> Path:
        """A local file holding the asset, whose bytes were hashed as they were written (by the
        PDF child, or while downloading) and match asset.sha256; raise ProviderError otherwise."""
        raise NotImplementedError
