"""Writing the evidence of a completed job: assets first, then the manifest and its rows in extraction's commit."""

import hashlib
import logging
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from django.db import transaction
from django.utils import timezone

from audit.ledger import manifests, signing, store_witness, tlog
from audit.models import Asset, Manifest, Placement
from audit.review import page_hints, previews
from audit.review.flags import flag_intake_findings, flag_provider_warnings
from core import stores
from extraction.models import Job
from extraction.providers import JobReport, ProviderError, ReportedImage

log = logging.getLogger(__name__)


@contextmanager
def record_completion(
    job: Job, report: JobReport, files: dict[str, Path], attempt_number: int, at=None
) -> Iterator["Evidence"]:
    """Store every asset under its deterministic name, then yield the Evidence that extraction's completion
    (extraction.completion.complete_job) writes in its transaction: the manifest, its ledger leaf, assets, placements.

    `at` (default: now, once the ledger is locked) dates the manifest and its assets. A store that fails midway,
    here or in the block, raises StorageUnavailable, after removing what this call wrote: never a partial set of
    outputs. An output store ahead of the database raises LedgerRollback (a StorageUnavailable: the job is held)
    and stops appends.
    """
    ordered = sorted(report.assets, key=lambda a: a.first_placement)
    for asset in ordered:
        _check_size(asset, files[asset.key])
    names = {a.key: manifests.asset_name(job, *a.first_placement, a.content_type) for a in ordered}
    written: list[str] = []
    try:
        for asset in ordered:
            if stores.store_once(stores.outputs(), names[asset.key], files[asset.key], asset.sha256, expect_new=True):
                written.append(names[asset.key])
        yield Evidence(report, ordered, names, attempt_number, at, written)
    except stores.STORAGE_ERRORS as exc:
        _discard(written)
        raise stores.StorageUnavailable("outputs", exc) from exc
    except store_witness.LedgerRollback as exc:  # the store is ahead of the database: nothing is signed again
        _discard(written)
        store_witness.stop_appends(exc)
        raise


def _discard(written: list[str]) -> None:
    named = Asset.objects.filter(name__in=written).values_list("name", flat=True)  # a manifest that did commit
    stores.discard(stores.outputs(), written, keep=set(named))


class Evidence:
    """A completed job's manifest and rows, written inside extraction's completion transaction (no Job transition)."""

    def __init__(self, report: JobReport, ordered, names, attempt_number: int, at, written: list[str]) -> None:
        self.report, self.ordered, self.names, self.written = report, ordered, names, written
        self.attempt_number, self.at = attempt_number, at
        self.keys_stamp: uuid.UUID | None = None  # the ledger row's, read under its lock

    def lock(self) -> None:
        """The ledger's one lock, before the job's row: the order every ledger writer takes them in."""
        self.keys_stamp = tlog.lock().keys_stamp

    def write(self, job: Job) -> None:
        at = self.at or timezone.now()
        signing.cover(at, self.keys_stamp)  # a key published now is a leaf of its own, before this manifest's
        document = _document(job, self.report, self.ordered, self.names, tlog.leaf_count(), self.attempt_number, at)
        manifest = _write(job, document, self.ordered, self.names, self.attempt_number, at, self.written)
        transaction.on_commit(
            lambda: log.info("job %s: manifest %s durable, ledger leaf %s", job.pk, manifest.pk, manifest.sequence)
        )
        previews.request(manifest)  # rendered by a worker, never the request
        page_hints.request(manifest)  # found by a worker after this commits: one row here, no reading of pages
        flag_provider_warnings(manifest, self.report.warnings)
        flag_intake_findings(manifest, job.bundle)


def _check_size(asset: ReportedImage, path: Path) -> None:
    # fetch() hashed the bytes as they were written (Provider.fetch); reading them all again here
    # cost a tenth of a job. A file changed since then is caught by its size here, and by any
    # verification run afterwards, which re-hashes what the store holds.
    if (size := path.stat().st_size) != asset.size:
        raise ProviderError(
            "asset_mismatch", f"Asset {asset.key} has {size} bytes, not the {asset.size} reported.", permanent=False
        )


def _document(job, report, ordered, names, position: int, attempt_number, at) -> dict:
    bundle = job.bundle
    return {
        "schema_version": manifests.SCHEMA_VERSION,
        "sequence": position,  # the leaf it will be: the one counter of a record's place (tlog.append checks)
        "key_id": signing.current_key_id(),
        "input": {
            "sha256": bundle.correlation_id,
            "size": bundle.size,
            "page_count": bundle.page_count,
            **report.meta.get("input", {}),
            **_intake(bundle),
        },
        "extractor": {
            "name": job.extractor,
            "version": job.extractor_version,
            "provider": job.provider,
            **_libraries(report),
        },
        "job": {
            "id": job.pk,
            "idempotency_key": job.idempotency_key,
            "provider_job_id": job.provider_job_id,
            "enqueued_at": manifests.timestamp(job.enqueued_at),
            "picked_up_at": manifests.timestamp(job.picked_up_at),
            "submitted_at": manifests.timestamp(job.submitted_at),
            "provider_finished_at": manifests.timestamp(job.provider_finished_at),
        },
        "assets": [_asset_entry(a, names[a.key], attempt_number, at) for a in ordered],
        "warnings": list(report.warnings),
        "created_at": manifests.timestamp(at),
    }


def _intake(bundle) -> dict:
    """What the intake policy saw and did, and which version it was (null for bundles taken in before there was
    one); every file attached inside the input."""
    version = bundle.intake_policy.version if bundle.intake_policy_id else None
    return {"policy": {"version": version, "found": bundle.intake_found}, "attachments": bundle.attachments}


def _libraries(report: JobReport) -> dict:
    """The versions of the libraries that wrote the assets, when the provider says: a managed provider may not."""
    libraries = report.meta.get("libraries")
    return {"libraries": dict(libraries)} if libraries else {}


def _asset_entry(asset: ReportedImage, name: str, attempt_number: int, at) -> dict:
    placements = sorted(asset.placements)
    return {
        "name": name,
        "sha256": asset.sha256,
        "size": asset.size,
        "content_type": asset.content_type,
        "width": asset.width,
        "height": asset.height,
        "pages": sorted({p for p, _ in placements}),
        "placements": [list(p) for p in placements],
        "attempt": attempt_number,
        "created_at": manifests.timestamp(at),
        **_made_from(asset),
    }


def _made_from(asset: ReportedImage) -> dict:
    """How the file was made from the PDF, when the provider says: a managed provider may not."""
    if not asset.method:
        return {}
    made = {"colorspace": asset.colorspace, "bits": asset.bits, "method": asset.method}
    return made | ({"stream_sha256": asset.stream_sha256} if asset.stream_sha256 else {})


def _write(job, document, ordered, names, attempt_number, at, written: list[str]) -> Manifest:
    body = manifests.canonical_bytes(document)
    sha256 = hashlib.sha256(body).hexdigest()
    storage_name = manifests.manifest_name(job, sha256)
    if stores.save_bytes_once(stores.outputs(), storage_name, body, sha256):
        written.append(storage_name)
    manifest = Manifest.objects.create(
        job=job,
        sequence=document["sequence"],
        schema_version=manifests.SCHEMA_VERSION,
        correlation_id=job.bundle.correlation_id,
        extractor=job.extractor,
        extractor_version=job.extractor_version,
        page_count=job.bundle.page_count,
        body=body.decode("ascii"),
        sha256=sha256,
        signature=signing.signed(body),  # write() covered `at` under the ledger's lock
        key_id=document["key_id"],
        **signing.mldsa_fields(body, at),
        storage_name=storage_name,
        created_at=at,
    )
    tlog.append_manifest(manifest)  # under the ledger's lock, in this transaction: the leaf is its sequence
    assets = Asset.objects.bulk_create(
        [
            Asset(
                manifest=manifest,
                name=names[a.key],
                sha256=a.sha256,
                size=a.size,
                page=a.first_placement[0],
                index_on_page=a.first_placement[1],
                width=a.width,
                height=a.height,
                content_type=a.content_type,
                attempt_number=attempt_number,
                created_at=at,
            )
            for a in ordered
        ]
    )
    Placement.objects.bulk_create(
        [
            Placement(asset=row, manifest=manifest, page=p, index_on_page=i)
            for row, a in zip(assets, ordered)
            for p, i in a.placements
        ]
    )
    return manifest
