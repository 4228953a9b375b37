"""The reviewer's workflow: pages and what was extracted from them, flags and their lifecycle."""

import re
from dataclasses import dataclass, field

from django.db import transaction

from audit.ledger import activity_records
from audit.models import Asset, Manifest, PagePreview, Placement, ReviewFlag
from extraction.intake import policy
from extraction.intake.rounds import request_reextraction as new_extraction_round

PAGE_IN_WARNING = re.compile(r"\bpage (\d+)", re.IGNORECASE)


class FlagRefused(ValueError):
    """A flag that names no page, or pages the bundle does not have."""


@dataclass
class Page:
    number: int
    assets: list = field(default_factory=list)
    preview: PagePreview | None = None  # set by previews.attach
    large_preview: PagePreview | None = None
    flags: list = field(default_factory=list)  # open flags naming this page, set by mark_flags

    @property
    def state(self) -> str:
        """For the page index: flagged outranks missing, which outranks covered."""
        return "flagged" if self.flags else ("covered" if self.assets else "missing")


def pages_of(manifest: Manifest, with_assets: bool = True) -> list[Page]:
    """Every page of the input in order, each with the assets drawn on it (one query, whatever the size)."""
    pages = [Page(n) for n in range(1, manifest.page_count + 1)]
    if not with_assets:
        return pages
    for placement in (
        Placement.objects.filter(manifest=manifest).select_related("asset").order_by("page", "index_on_page")
    ):
        if 1 <= placement.page <= len(pages):
            pages[placement.page - 1].assets.append(placement.asset)
    return pages


def mark_flags(pages: list[Page], flags) -> list[int]:
    """Attach each flag still being worked on to the pages it names; returns those page numbers."""
    marked = set()
    for flag in flags:
        if flag.status not in (ReviewFlag.Status.OPEN, ReviewFlag.Status.REEXTRACTION_REQUESTED):
            continue
        for n in flag.pages:
            if 1 <= n <= len(pages):
                pages[n - 1].flags.append(flag)
                marked.add(n)
    return sorted(marked)


def raise_flag(manifest: Manifest, pages: list[int], kind: str, note: str, by: str) -> ReviewFlag:
    pages = sorted(set(pages))
    if not pages:
        raise FlagRefused("Pick at least one page.")
    outside = [p for p in pages if not 1 <= p <= manifest.page_count]
    if outside:
        raise FlagRefused(f"The bundle has {manifest.page_count} pages; there is no page {outside[0]}.")
    flag = ReviewFlag.objects.create(manifest=manifest, pages=pages, kind=kind, note=note, raised_by=by[:150])
    activity_records.record(by, "flag_raised", flag, after={"pages": pages, "kind": kind, "note": note})
    return flag


def flag_provider_warnings(manifest: Manifest, warnings) -> ReviewFlag | None:
    """Partial success or page warnings put the job in the review queue by themselves."""
    if not warnings:
        return None
    pages = sorted({int(n) for w in warnings for n in PAGE_IN_WARNING.findall(w) if 1 <= int(n) <= manifest.page_count})
    return ReviewFlag.objects.create(
        manifest=manifest,
        pages=pages,
        kind=ReviewFlag.Kind.OTHER,
        note="Reported by the extractor:\n" + "\n".join(warnings),
        raised_by="extractor",
    )


def flag_intake_findings(manifest: Manifest, bundle) -> ReviewFlag | None:
    """What the intake policy accepted with a flag (bundle.intake_found) puts the job in the review queue: one
    flag naming each kind, what it is and where, so a Reviewer decides."""
    flagged = [f for f in bundle.intake_found if f.get("action") == policy.FLAG]
    if not flagged:
        return None
    version = bundle.intake_policy.version if bundle.intake_policy_id else "?"
    lines = [f"- {f['kind']}: {f['what']} ({policy.where(f)})" for f in flagged]
    return ReviewFlag.objects.create(
        manifest=manifest,
        pages=[],  # findings are in objects, not on pages
        kind=ReviewFlag.Kind.OTHER,
        note=f"Accepted with a flag by the intake policy (version {version}):\n" + "\n".join(lines),
        raised_by="intake policy",
    )


def request_reextraction(flag: ReviewFlag, by: str) -> ReviewFlag:
    """The flag's guarded change first: a duplicate request loses it and makes no second extraction round.
    One transaction, so a bundle whose input is gone (InputGone) leaves the flag open."""
    with transaction.atomic():
        if not flag.mark_reextraction_requested(by):
            return flag
        job = new_extraction_round(flag.manifest.job.bundle)
        flag.attach_reextraction(job)
        activity_records.record(by, "reextraction_requested", flag, after={"job": job.pk})
    return flag


def close(flag: ReviewFlag, status: str, by: str) -> bool:
    before = flag.status
    if flag.mark_closed(status, by):
        activity_records.record(by, f"flag_{status}", flag, before={"status": before}, after={"status": status})
        return True
    return False


def comparison(flag: ReviewFlag) -> dict | None:
    """The re-extraction's manifest against the flagged one: assets added, removed, unchanged (by content)."""
    new = Manifest.objects.filter(job=flag.reextraction_job_id).first() if flag.reextraction_job_id else None
    if new is None:
        return None
    old_hashes = set(Asset.objects.filter(manifest=flag.manifest).values_list("sha256", flat=True))
    new_hashes = set(Asset.objects.filter(manifest=new).values_list("sha256", flat=True))
    return {
        "manifest": new.sequence,
        "added": len(new_hashes - old_hashes),
        "removed": len(old_hashes - new_hashes),
        "unchanged": len(old_hashes & new_hashes),
    }
