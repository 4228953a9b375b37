"""Pages to look at first: hints found by a worker after the manifest, and a reviewer confirming or dismissing each.

Asked in the manifest's writing transaction (one row, HintRun) and found on the previews queue after it commits, so
a manifest never waits for them; the reconciler asks again for a run without progress, as for previews
(preview_requests.py). The evidence is read in the limited PDF child (extraction/pdf/page_evidence.py); the rules
that turn it into suggestions are extraction/pdf/page_hints.py.
"""

import logging
import shutil

from django.conf import settings
from django.db import transaction

from audit.ledger import activity_records
from audit.models import HintRun, Manifest, PageHint, ReviewFlag
from audit.review import flags, preview_requests
from core import broker, stored_inputs, stores
from core.limits import configured_limits
from extraction import pdf, worker_stop

log = logging.getLogger(__name__)
Outcome = HintRun.Outcome
# A confirmed suggestion becomes the flag a reviewer would have raised by hand.
FLAG_KINDS = {PageHint.Kind.MISSING_PAGE: ReviewFlag.Kind.MISSING_PAGE}


def request(manifest: Manifest) -> None:
    """Asked for in the manifest's writing transaction, queued once it commits."""
    preview_requests.ask(manifest, enqueue, HintRun)


def enqueue(manifest_id: int) -> None:
    broker.enqueue("audit.tasks.find_page_hints", manifest_id, cluster=settings.PAGETRAIL_PREVIEW_QUEUE)


def redrive_hints(at=None) -> int:
    """The reconciler's part for hint runs whose task the queue lost (registered in audit's AppConfig.ready())."""
    return preview_requests.redrive(enqueue, at, HintRun)


def find_page_hints(manifest_id: int) -> dict:
    """Read every page's evidence in the child and store the suggestions, once (a duplicate task stores nothing)."""
    if worker_stop.stopping():
        enqueue(manifest_id)
        return {"hints": 0, "handed_back": True}
    manifest = Manifest.objects.select_related("job__bundle").get(pk=manifest_id)
    if HintRun.objects.filter(pk=manifest_id).exclude(outcome=Outcome.PENDING).exists():
        return {"hints": 0}
    if manifest.job.bundle.input_deleted_at:
        preview_requests.finish(manifest_id, Outcome.SKIPPED, model=HintRun)
        return {"hints": 0}
    preview_requests.progressed(manifest_id, model=HintRun)
    work = stores.temp_root() / "hints" / str(manifest.pk)
    shutil.rmtree(work, ignore_errors=True)  # what a killed earlier try left
    work.mkdir(parents=True, mode=0o700)
    try:
        with worker_stop.holding(lambda: enqueue(manifest_id)):
            source = stored_inputs.verified_input(manifest.job.bundle, work / "input.pdf")
            evidence = pdf.read_page_evidence(source, configured_limits())
    except (worker_stop.Stopping, pdf.WorkerStopping):
        enqueue(manifest_id)
        return {"hints": 0, "handed_back": True}
    except preview_requests.FINAL as exc:
        return failed(manifest, *preview_requests.final_failure(exc))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return {"hints": store(manifest, evidence)}


def store(manifest: Manifest, evidence: list[pdf.PageEvidence]) -> int:
    """The run's ending and its suggestions in one transaction: the task that ends the run writes them, alone."""
    found = pdf.hints(evidence)
    with transaction.atomic():
        if not preview_requests.finish(manifest.pk, Outcome.DONE, model=HintRun):
            return 0
        HintRun.objects.filter(pk=manifest.pk).update(numbering=[printed(page) for page in evidence])
        PageHint.objects.bulk_create(
            PageHint(manifest=manifest, kind=hint.kind, pages=list(hint.pages), evidence=hint.evidence)
            for hint in found
        )
    return len(found)


def printed(page: pdf.PageEvidence) -> str:
    if not page.printed:
        return ""
    return f"{page.printed}/{page.printed_total}" if page.printed_total else str(page.printed)


def failed(manifest: Manifest, code: str, message: str) -> dict:
    log.warning("Page hints of manifest %s could not be found: %s: %s", manifest.pk, code, message)
    activity_records.record("worker", "page_hints_failed", manifest, after={"code": code, "message": message})
    preview_requests.finish(manifest.pk, Outcome.FAILED, code, message, model=HintRun)
    return {"hints": 0, "error": code}


def confirm(hint: PageHint, by: str) -> ReviewFlag | None:
    """The suggestion becomes a flag, as if raised by hand with its evidence as the note; None if already answered."""
    with transaction.atomic():
        if not hint.mark_decided(PageHint.Status.CONFIRMED, by):
            return None
        kind = FLAG_KINDS.get(PageHint.Kind(hint.kind), ReviewFlag.Kind.OTHER)
        note = f"Suggested ({hint.get_kind_display()}): {hint.evidence}"
        flag = flags.raise_flag(hint.manifest, hint.pages, kind, note, by)
        hint.attach_flag(flag)
        activity_records.record(by, "page_hint_confirmed", hint, after={"flag": flag.pk, "pages": hint.pages})
    return flag


def dismiss(hint: PageHint, by: str) -> bool:
    with transaction.atomic():
        if not hint.mark_decided(PageHint.Status.DISMISSED, by):
            return False
        activity_records.record(by, "page_hint_dismissed", hint, after={"kind": hint.kind, "pages": hint.pages})
    return True


def for_review(manifest: Manifest) -> list[PageHint]:
    """Open suggestions first, in page order, then the answered ones."""
    hints = list(PageHint.objects.filter(manifest=manifest))
    return sorted(hints, key=lambda h: (h.status != PageHint.Status.SUGGESTED, h.pages[:1], h.pk))


def note_case_numbering(manifest: Manifest, case_maps) -> None:
    """Give each case of the (prefetched) case maps a `printed` note: what its first and last pages print, and whether
    it starts past its document's first printed page or ends before its last, where the pages print numbers."""
    numbering = HintRun.objects.filter(pk=manifest.pk).values_list("numbering", flat=True).first() or []
    for case_map in case_maps if numbering else []:
        for case in case_map.cases.all():
            first, last = printed_at(numbering, case.first_page), printed_at(numbering, case.last_page)
            if not (first or last):
                continue
            notes = [f"printed {first or '?'} to {last or '?'}"]
            if first and first.partition("/")[0] != "1":
                notes.append("starts after its document's first page")
            if last and last.partition("/")[2] and last.partition("/")[0] != last.partition("/")[2]:
                notes.append("ends before its document's last page")
            case.printed = "; ".join(notes)


def printed_at(numbering: list[str], page: int) -> str:
    return numbering[page - 1] if 1 <= page <= len(numbering) else ""


def state_of(manifest: Manifest) -> str:
    """What the review page says of the hints: being found, found, failed, or never asked for."""
    run = HintRun.objects.filter(pk=manifest.pk).first()
    if run is None:
        return "not looked for (this manifest is older than page hints)"
    if run.outcome == Outcome.FAILED:
        return f"could not be found: {run.error_message or run.error_code}"
    if run.outcome == Outcome.SKIPPED:
        return "not looked for: the input was deleted under retention"
    return "being looked for by a worker" if not run.outcome else "found after extraction"
