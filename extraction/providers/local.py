"""The self-hosted extractor: pikepdf in a resource-limited child process."""

import shutil
from pathlib import Path

from core import stored_inputs
from core.limits import configured_limits
from extraction import pdf
from extraction.pdf.versions import EXTRACTOR_VERSION

from .base import JobReport, Provider, ProviderError, ReportedImage

READ_FLAGS = ("encrypted", "repaired", "leading_bytes")  # how the input was read
REPAIRED = (
    "The input was damaged (its cross-reference table, page tree or encryption entry) and was read "
    "after repair, as viewers read it; check the pages against the original."
)


def reported(image: pdf.WrittenImage) -> ReportedImage:
    """A written file as the provider reports it: its file name is its key for fetch()."""
    fields = dict(vars(image), placements=tuple(image.placements))
    return ReportedImage(key=fields.pop("filename"), **fields)


class LocalProvider(Provider):
    """Runs the whole extraction inside `check`: there is no remote job to wait for."""

    name = "local"
    extractor = "pagetrail-pikepdf"
    version = EXTRACTOR_VERSION

    def start(self, job) -> str:
        return self.job_id(job.idempotency_key)

    @staticmethod
    def job_id(key: str) -> str:
        """Derived from the job's key: there is no remote job, and a re-keyed job's id follows its key."""
        return f"local-{key[:24]}"

    def check(self, job, work_dir: Path) -> JobReport:
        """The whole extraction, once a try: the runner keeps the final report (providers.base.save_report), so a
        retried download reads it and never extracts again."""
        result = self._extract(job, work_dir)
        assets = tuple(reported(asset) for asset in result.assets)
        read = {key: getattr(result, key) for key in READ_FLAGS}
        # A rebuilt cross-reference table may have lost objects: a person should look (warnings flag the job),
        # unless the intake policy has judged the repair already (it flags, or accepts, what intake found).
        judged = any(f["kind"] == "repaired" for f in job.bundle.intake_found)
        warnings = (REPAIRED,) * (read["repaired"] and not judged) + tuple(result.warnings)
        return JobReport(
            state="completed",
            pages=result.pages,
            assets=assets,
            warnings=warnings,
            meta={
                "input": read,
                "libraries": result.libraries,
                # As the child that wrote the files says (its code may be newer than this worker's).
                "extractor_version": result.extractor_version,
            },
        )

    def fetch(self, job, asset: ReportedImage, work_dir: Path) -> Path:
        path = work_dir / "extracted" / asset.key
        if not path.exists():
            raise ProviderError("asset_missing", f"Extracted file {asset.key} is gone.", permanent=False)
        return path

    def _extract(self, job, work_dir: Path) -> pdf.Extraction:
        out_dir = work_dir / "extracted"
        shutil.rmtree(out_dir, ignore_errors=True)  # a killed earlier try may have left part of a run
        out_dir.mkdir(parents=True)
        copied = work_dir / "input.pdf"
        try:
            extraction = pdf.extract_images(
                stored_inputs.verified_input(job.bundle, copied), out_dir, configured_limits()
            )
        except stored_inputs.InputChanged as exc:
            raise ProviderError("input_changed", str(exc), permanent=True) from exc
        except pdf.SandboxError as exc:
            raise ProviderError(exc.code, exc.message, permanent=exc.permanent) from exc
        finally:
            copied.unlink(missing_ok=True)
        return extraction
