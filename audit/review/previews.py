"""Page previews: rendered by the worker in the limited PDF child, stored beside the outputs.

Sizes, measured on A4 pages: a 200 px thumbnail is 2-7 KB; a 1000 px large view (about 120 dpi,
where 10 pt text reads easily) is about 40 KB for a text page and 400 KB for a scanned one, each page
kept as the smaller of PNG and JPEG. A 240-page scanned bundle thus costs about 100 MB of previews,
about as much as its input; rendering on request instead would put PDFium in the web process and
make a 240-page review wait on it.
"""

import logging
import shutil
from pathlib import Path

from django.conf import settings

from audit.ledger import activity_records, manifests
from audit.models import Manifest, PagePreview, PreviewRequest, RetentionEvent
from audit.review import preview_requests
from core import broker, stored_inputs, stores
from core.limits import configured_limits
from extraction import pdf, worker_stop

log = logging.getLogger(__name__)

THUMBNAIL, LARGE = 200, 1000
WIDTHS = (THUMBNAIL, LARGE)
# One child process per batch, each under the extraction limits: what a page may cost does not
# shrink as bundles grow, and a redelivered task carries on after the last batch it stored.
BATCH = 50


def request(manifest: Manifest) -> None:
    """Asked for in the manifest's writing transaction, queued once it commits (rendered by a worker)."""
    preview_requests.ask(manifest, enqueue)


def enqueue(manifest_id: int) -> None:
    broker.enqueue("audit.tasks.generate_previews", manifest_id, cluster=settings.PAGETRAIL_PREVIEW_QUEUE)


def redrive_previews(at=None) -> int:
    """The reconciler's part for previews whose task the queue lost (registered in audit's AppConfig.ready())."""
    return preview_requests.redrive(enqueue, at)


def generate_previews(manifest_id: int) -> dict:
    """Render and store every page of the manifest's input that has no preview yet; idempotent.

    Does nothing once the input or the outputs were deleted under retention. A PDF that cannot be
    rendered within the limits is logged and recorded in the activity record (retrying would fail
    the same way); a failure of this machine is raised, for the queue to retry.
    """
    if worker_stop.stopping():
        enqueue(manifest_id)  # taken after its worker was told to stop: another worker renders it
        return {"rendered": 0, "handed_back": True}
    manifest = Manifest.objects.select_related("job__bundle").get(pk=manifest_id)
    pending = pending_pages(manifest)
    if not pending:
        preview_requests.finish(manifest_id, PreviewRequest.Outcome.DONE)
        return {"rendered": 0}
    if manifest.job.bundle.input_deleted_at or outputs_deleted(manifest):
        preview_requests.finish(manifest_id, PreviewRequest.Outcome.SKIPPED)
        return {"rendered": 0}
    preview_requests.progressed(manifest_id)
    work = stores.temp_root() / "previews" / str(manifest.pk)
    shutil.rmtree(work, ignore_errors=True)  # what a killed earlier try left
    work.mkdir(parents=True, mode=0o700)
    stored = 0
    try:
        with worker_stop.holding(lambda: enqueue(manifest_id)):
            source = stored_inputs.verified_input(manifest.job.bundle, work / "input.pdf")
            for batch in batches(pending):
                worker_stop.check()
                stored += render_batch(manifest, source, work, batch)
                preview_requests.progressed(manifest_id)
    except (worker_stop.Stopping, pdf.WorkerStopping):
        enqueue(manifest_id)  # the batches stored are kept: the next worker renders the rest
        return {"rendered": stored, "handed_back": True}
    except preview_requests.FINAL as exc:
        return failed(manifest, *preview_requests.final_failure(exc))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if not pending_pages(manifest):
        preview_requests.finish(manifest_id, PreviewRequest.Outcome.DONE)
    return {"rendered": stored}


def pending_pages(manifest: Manifest) -> list[int]:
    done = set(PagePreview.objects.filter(manifest=manifest).values_list("page", "max_width"))
    return [n for n in range(1, manifest.page_count + 1) if any((n, w) not in done for w in WIDTHS)]


def outputs_deleted(manifest: Manifest) -> bool:
    return manifest.retention_events.filter(
        what=RetentionEvent.What.OUTPUTS, outcome=RetentionEvent.Outcome.DELETED
    ).exists()


def batches(pages: list[int]) -> list[tuple[int, int]]:
    """Ranges (first, last) spanning at most BATCH pages that cover the sorted `pages`."""
    ranges: list[tuple[int, int]] = []
    for n in pages:
        if ranges and n - ranges[-1][0] < BATCH:
            ranges[-1] = (ranges[-1][0], n)
        else:
            ranges.append((n, n))
    return ranges


def render_batch(manifest: Manifest, source: Path, work: Path, batch: tuple[int, int]) -> int:
    """Render pages first..last, store the files, then their rows (a repeat stores nothing twice)."""
    out = work / f"from-{batch[0]}"
    out.mkdir()
    rendering = pdf.render_pages(source, out, configured_limits(), WIDTHS, *batch)
    if outputs_deleted(manifest):  # retention ran meanwhile: store nothing it has already deleted
        return 0
    prefix = f"{manifests.output_prefix(manifest.job)}/previews"
    rows = []
    for image in rendering.images:
        name = f"{prefix}/{image.filename}"
        stores.store_once(stores.outputs(), name, out / image.filename, image.sha256)
        rows.append(
            PagePreview(
                manifest=manifest,
                page=image.number,
                max_width=image.max_width,
                storage_name=name,
                content_type=image.content_type,
                sha256=image.sha256,
                size=image.size,
                width=image.width,
                height=image.height,
            )
        )
    PagePreview.objects.bulk_create(rows, ignore_conflicts=True)
    shutil.rmtree(out)
    return len(rows)


def failed(manifest: Manifest, code: str, message: str) -> dict:
    log.warning("Previews of manifest %s could not be made: %s: %s", manifest.pk, code, message)
    activity_records.record("worker", "previews_failed", manifest, after={"code": code, "message": message})
    preview_requests.finish(manifest.pk, PreviewRequest.Outcome.FAILED, code, message)
    return {"rendered": 0, "error": code}


def attach(pages: list, manifest: Manifest) -> int:
    """Give each review page its thumbnail and large view (one query); returns how many have a preview."""
    if outputs_deleted(manifest):
        return 0
    found = {
        (p.page, p.max_width): p
        for p in PagePreview.objects.filter(manifest=manifest).only("pk", "page", "max_width", "width", "height")
    }
    for page in pages:
        page.preview, page.large_preview = found.get((page.number, THUMBNAIL)), found.get((page.number, LARGE))
    return sum(1 for page in pages if page.preview)
