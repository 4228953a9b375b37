"""The self-hosted extractor: pikepdf in a resource-limited child process."""

import json
import shutil
from pathlib import Path

import pikepdf
from django.conf import settings

from extraction import pdf, stores
from extraction.pdf.protocol import plain

from .base import JobReport, Provider, ProviderError, RemoteAsset

EXTRACTOR_VERSION = "2.0"


def configured_limits() -> pdf.Limits:
    """Intake and extraction limits from settings (the pdf package itself knows nothing of Django)."""
    return pdf.Limits(
        max_bytes=settings.PAGETRAIL_MAX_UPLOAD_BYTES,
        max_pages=settings.PAGETRAIL_MAX_PAGES,
        max_pixels=settings.PAGETRAIL_MAX_IMAGE_PIXELS,
        max_stream_bytes=settings.PAGETRAIL_MAX_STREAM_BYTES,
        cpu_seconds=settings.PAGETRAIL_CHILD_CPU_SECONDS,
        memory_bytes=settings.PAGETRAIL_CHILD_MEMORY_BYTES,
        wall_seconds=settings.PAGETRAIL_CHILD_WALL_SECONDS,
        child_reuse=settings.PAGETRAIL_CHILD_REUSE,
    )


class LocalProvider(Provider):
    """Runs the whole extraction inside `check`: there is no remote job to wait for."""

    name = "local"
    extractor = "pagetrail-pikepdf"
    # The pikepdf (and so qpdf) version changes how images decode, so it is part of the version.
    version = f"{EXTRACTOR_VERSION}+pikepdf.{pikepdf.__version__}"

    def start(self, job) -> str:
        return f"local-{job.idempotency_key[:24]}"

    def check(self, job, work_dir: Path) -> JobReport:
        result_path = work_dir / "result.json"
        if not result_path.exists():
            self._extract(job, work_dir, result_path)
        result = json.loads(result_path.read_text())
        assets = tuple(
            RemoteAsset(key=a["filename"], sha256=a["sha256"], size=a["size"], content_type=a["content_type"],
                        width=a["width"], height=a["height"],
                        placements=tuple(tuple(p) for p in a["placements"]))
            for a in result["assets"]
        )
        return JobReport(state="completed", pages=result["pages"], assets=assets,
                         warnings=tuple(result["warnings"]))

    def fetch(self, job, asset: RemoteAsset, work_dir: Path) -> Path:
        path = work_dir / "extracted" / asset.key
        if not path.exists():
            raise ProviderError("asset_missing", f"Extracted file {asset.key} is gone.", permanent=False)
        return path

    def _extract(self, job, work_dir: Path, result_path: Path) -> None:
        out_dir = work_dir / "extracted"
        shutil.rmtree(out_dir, ignore_errors=True)  # a killed earlier try may have left part of a run
        out_dir.mkdir(parents=True)
        copied = work_dir / "input.pdf"
        try:
            extraction = pdf.extract_images(stores.verified_input(job.bundle, copied), out_dir, configured_limits())
        except stores.InputChanged as exc:
            raise ProviderError("input_changed", str(exc), permanent=True) from exc
        except pdf.SandboxError as exc:
            raise ProviderError(exc.code, exc.message, permanent=exc.permanent) from exc
        finally:
            copied.unlink(missing_ok=True)
        tmp = result_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(plain(extraction)))
        tmp.rename(result_path)
