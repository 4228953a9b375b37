"""Split a bundle into named cases by page range, recorded as a new signed case map."""

import hashlib

from django.db import transaction
from django.utils import timezone

from audit.ledger import activity_records, manifests, signing, tlog
from audit.models import Case, CaseMap, Manifest, Placement


class SplitRefused(ValueError):
    """Ranges that overlap, leave the bundle, or are not ranges at all."""


def parse_ranges(text: str) -> list[tuple[str, int, int]]:
    """Lines like `claim 1042: 1-12` (a single page is `7`)."""
    ranges = []
    for number, line in enumerate(filter(None, (raw.strip() for raw in text.splitlines())), 1):
        name, colon, pages = line.rpartition(":")
        first, _, last = pages.strip().partition("-")
        if not colon or not name.strip() or not first.strip().isdigit() or (last and not last.strip().isdigit()):
            raise SplitRefused(f"Line {number} ({line!r}) is not like 'case name: 1-12'.")
        ranges.append((name.strip(), int(first), int(last or first)))
    return ranges


def validate(ranges: list[tuple[str, int, int]], page_count: int) -> None:
    if not ranges:
        raise SplitRefused("Give at least one case.")
    names = [name for name, _, _ in ranges]
    if len(set(names)) != len(names):
        raise SplitRefused("Each case needs its own name.")
    for name, first, last in ranges:
        if not 1 <= first <= last <= page_count:
            raise SplitRefused(f"{name}: pages {first}-{last} are not within the bundle's 1-{page_count}.")
    ordered = sorted(ranges, key=lambda r: r[1])
    for (a, _, a_last), (b, b_first, _) in zip(ordered, ordered[1:]):
        if b_first <= a_last:
            raise SplitRefused(f"{a} and {b} overlap on page {b_first}.")


def split(manifest: Manifest, ranges: list[tuple[str, int, int]], by: str) -> CaseMap:
    """Record the split; the manifest and its assets are untouched, nothing is re-extracted."""
    validate(ranges, manifest.page_count)
    at = timezone.now()
    body = manifests.canonical_bytes(_document(manifest, ranges, at))
    with transaction.atomic():
        tlog.lock()  # the ledger's one lock first: the activity record's own lock comes after it everywhere
        case_map = CaseMap.objects.create(
            manifest=manifest,
            manifest_sha256=manifest.sha256,
            body=body.decode("ascii"),
            sha256=hashlib.sha256(body).hexdigest(),
            signature=signing.sign(body, at),
            key_id=signing.current_key_id(),
            **signing.mldsa_fields(body, at),
            created_by=by[:150],
            created_at=at,
        )
        tlog.append(case_map)
        Case.objects.bulk_create(
            [Case(case_map=case_map, name=name, first_page=first, last_page=last) for name, first, last in ranges]
        )
        activity_records.record(by, "bundle_split", case_map, after={"cases": [list(r) for r in ranges]})
    return case_map


def _document(manifest: Manifest, ranges, at) -> dict:
    placements = list(
        Placement.objects.filter(manifest=manifest).select_related("asset").order_by("page", "index_on_page")
    )
    return {
        "schema_version": 2,  # 2: created_at, the time the map gives itself (a ledger record's signed time)
        "created_at": manifests.timestamp(at),
        "manifest_sha256": manifest.sha256,
        "manifest_sequence": manifest.sequence,
        "correlation_id": manifest.correlation_id,
        "page_count": manifest.page_count,
        "cases": [_section(name, first, last, placements) for name, first, last in sorted(ranges, key=lambda r: r[1])],
    }


def _section(name: str, first: int, last: int, placements) -> dict:
    assets: dict[str, dict] = {}
    for p in placements:
        if first <= p.page <= last:
            entry = assets.setdefault(p.asset.name, {"name": p.asset.name, "sha256": p.asset.sha256, "placements": []})
            entry["placements"].append([p.page, p.index_on_page])
    return {"name": name, "pages": [first, last], "assets": list(assets.values())}
