"""Evidence packages: one zip an outside auditor checks offline, with the verifier inside.

Layout (members always in this order, with fixed timestamps, so the same evidence gives the same bytes):
README.txt, manifests/<sequence:06d>-<sha256>.json, assets/<asset name> (optional), cases/ (a case package),
keys.json (the published public keys), index.json (which records keys.json's sha256), index.sig.json (the
exporter's Ed25519 signature of index.json), verify_evidence.pyz (the verifier package `audit.verifier`, built
at export time from the very modules verification runs import: the standard library and `cryptography` only).
"""

import hashlib
import json
import os
import shutil
import zipfile
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from django.db.models import QuerySet
from django.utils import timezone

from audit.export import ledger_sections as log_evidence
from audit.export import sections
from audit.export.readme import README
from audit.ledger import signing
from audit.ledger.manifests import timestamp
from audit.models import ActivityEvent, Asset, Case, CaseMap, Manifest
from audit.verifier import build as verifier_build
from core import stores
from extraction.models import Bundle

# 2: keys.json covered by the index, signed retention events, the chain head; 3: log proofs;
# 4: the log alone says where each record stands (no hash-chain segment, chain head or chain checkpoints), a date
#    range carries its boundary records, the verifier is verify_evidence.pyz; 5: retention events are ledger
#    records with inclusion proofs (only a proven one excuses an absence), a date range holds those recorded in it;
#    6: case maps are ledger records too (a case package's map proven; a date range holds the maps made in it)
FORMAT_VERSION = 7
ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)  # the earliest time a zip can hold; real times would make every export differ


class EvidenceScopeError(ValueError):
    """The bundle or manifest asked for does not exist, or the scope holds no manifest."""


@dataclass(frozen=True)
class Scope:
    description: str
    detail: dict
    manifests: QuerySet  # ordered by sequence
    case: Case | None = None  # its pages decide which assets are included


def select_scope(*, bundle=None, manifest=None, manifests=None, date_from=None, date_to=None, case=None) -> Scope:
    """Exactly one of: a bundle (correlation id), a manifest (sequence), a selection, a date range, a case."""
    chosen = [x is not None for x in (bundle, manifest, manifests, case)] + [bool(date_from or date_to)]
    if sum(chosen) != 1:
        raise EvidenceScopeError("Choose exactly one scope: a bundle, a manifest, a selection, a date range or a case.")
    if case is not None:
        scope = _case_scope(case)
    elif bundle is not None:
        scope = _bundle_scope(getattr(bundle, "correlation_id", bundle))
    elif manifest is not None:
        scope = _manifest_scope(getattr(manifest, "sequence", manifest))
    elif manifests is not None:
        scope = _selection_scope(manifests)
    else:
        scope = _date_scope(date_from, date_to)
    if not scope.manifests.exists():
        raise EvidenceScopeError(f"No manifest in scope: {scope.description}.")
    return scope


def _bundle_scope(correlation_id: str) -> Scope:
    if not Bundle.objects.filter(correlation_id=correlation_id).exists():
        raise EvidenceScopeError(f"No bundle with correlation id {correlation_id!r}.")
    rows = Manifest.objects.filter(correlation_id=correlation_id).order_by("sequence")
    if not rows.exists():
        raise EvidenceScopeError(f"Bundle {correlation_id} has no manifest yet: none of its jobs has completed.")
    return Scope(f"bundle {correlation_id}", {"kind": "bundle", "bundle": correlation_id}, rows)


def _manifest_scope(sequence: int) -> Scope:
    if not Manifest.objects.filter(sequence=sequence).exists():
        raise EvidenceScopeError(f"No manifest with sequence {sequence}.")
    return Scope(
        f"manifest {sequence}",
        {"kind": "manifest", "manifest": sequence},
        Manifest.objects.filter(sequence=sequence).order_by("sequence"),
    )


def _case_scope(case) -> Scope:
    manifest = case.case_map.manifest
    return Scope(
        f"case {case.name} (pages {case.first_page}-{case.last_page}) of manifest {manifest.sequence}",
        {"kind": "case", "case": case.name, "pages": [case.first_page, case.last_page]},
        Manifest.objects.filter(pk=manifest.pk).order_by("sequence"),
        case,
    )


def _selection_scope(manifests) -> Scope:
    pks: QuerySet | list = (
        manifests.values("pk") if isinstance(manifests, QuerySet) else [getattr(m, "pk", m) for m in manifests]
    )
    rows = Manifest.objects.filter(pk__in=pks).order_by("sequence")
    sequences = list(rows.values_list("sequence", flat=True))
    shown = ", ".join(map(str, sequences[:20])) + (", ..." if len(sequences) > 20 else "")
    return Scope(f"{len(sequences)} selected manifest(s): {shown}", {"kind": "selection"}, rows)


def _date_scope(date_from, date_to) -> Scope:
    rows = Manifest.objects.all()
    if date_from:
        rows = rows.filter(created_at__gte=date_from)
    if date_to:
        rows = rows.filter(created_at__lt=date_to)
    span = {"kind": "date_range", "from": timestamp(date_from), "before": timestamp(date_to)}
    return Scope(
        f"manifests created from {span['from'] or 'the start'} to before {span['before'] or 'now'}",
        span,
        rows.order_by("sequence"),
    )


def build_evidence(
    path_or_fileobj,
    *,
    bundle=None,
    manifest=None,
    manifests=None,
    date_from=None,
    date_to=None,
    case=None,
    include_assets=False,
    exported_by="",
    at=None,
) -> dict:
    """Write the evidence package for one scope to a path or a binary file; return a summary.

    The scope is checked before anything is written (EvidenceScopeError). `at` is the export time
    recorded inside; the same evidence, scope and `at` give byte-identical zips.
    """
    scope = select_scope(
        bundle=bundle, manifest=manifest, manifests=manifests, case=case, date_from=date_from, date_to=date_to
    )
    at = at or timezone.now()
    if not isinstance(path_or_fileobj, (str, os.PathLike)):
        return _write_package(path_or_fileobj, scope, include_assets, exported_by, at)
    path = Path(path_or_fileobj)
    partial = path.with_name(path.name + ".partial")  # never leave a half-written package under the real name
    try:
        with open(partial, "w+b") as fh:
            summary = _write_package(fh, scope, include_assets, exported_by, at)
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)
    return {**summary, "path": str(path)}


def _write_package(fh, scope: Scope, include_assets: bool, exported_by: str, at) -> dict:
    start = fh.tell()
    with zipfile.ZipFile(fh, "w") as zf:
        still_open = sections.open_findings(scope.manifests)
        readme = README.format(
            scope=scope.description,
            at=timestamp(at),
            by=exported_by or "unknown",
            findings=sections.findings_warning(still_open),
        )
        _put(zf, "README.txt", readme.encode())
        gone = sections.deleted_by_retention(scope.manifests, "manifest_file")
        manifests = [_put_manifest(zf, m, m.sequence in gone) for m in scope.manifests.iterator(chunk_size=200)]
        gone = sections.deleted_by_retention(scope.manifests, "outputs")
        in_case = _case_asset_names(scope)
        assets = [
            _put_asset(
                zf,
                a,
                include_assets and (in_case is None or a["name"] in in_case),
                a["manifest__sequence"] in gone,
                outside_case=in_case is not None and a["name"] not in in_case,
            )
            for a in _assets(scope)
        ]
        # a signed log checkpoint, each manifest's proof, and a date range's boundary records
        events = sections.retention_event_rows(scope.manifests, _range(scope))
        case_maps, activity = _case_maps(scope), _activity(scope)
        log = log_evidence.section(
            scope.manifests, events, case_maps, activity, at, _range(scope), lambda name, data: _put(zf, name, data)
        )
        index = _index(scope, manifests, assets, include_assets, exported_by, at, log, events)
        index["open_findings"] = still_open
        if scope.case is not None:
            index["case_map"] = {**_put_case_map(zf, scope.case.case_map), "case": scope.case.name}
        elif case_maps:
            index["case_maps"] = [_put_case_map(zf, case_map) for case_map in case_maps]
        if activity:
            index["activity"] = [_put_activity(zf, event) for event in activity]
        signing.cover(at)  # the period keys.json publishes covers the index's own time
        keys = json.dumps(signing.published_document(), indent=1, sort_keys=True).encode("ascii")
        _put(zf, "keys.json", keys)  # covered by the signed index: its keys and periods cannot be swapped
        index["keys"] = {"file": "keys.json", "sha256": hashlib.sha256(keys).hexdigest()}
        _put_signed_index(zf, json.dumps(index, indent=1, sort_keys=True).encode("ascii"), at)
        _put(zf, verifier_build.NAME, verifier_build.build())
    return _summary(fh, start, scope, index)


def _put_signed_index(zf: zipfile.ZipFile, index: bytes, at) -> None:
    """The index is the exporter's signed statement: what is in scope, and why anything is left out."""
    _put(zf, "index.json", index)
    signed = {
        "file": "index.json",
        "sha256": hashlib.sha256(index).hexdigest(),
        "key_id": signing.current_key_id(),
        "signature": signing.sign(index, at),
        **signing.stable_mldsa_fields(index, at),
    }
    _put(zf, "index.sig.json", json.dumps(signed, indent=1, sort_keys=True).encode("ascii"))


def _info(name: str, size: int = 0) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name, ZIP_EPOCH)
    info.compress_type, info.create_system, info.external_attr = zipfile.ZIP_DEFLATED, 3, 0o644 << 16
    info.file_size = size  # decides up front whether a streamed member needs zip64
    return info


def _put(zf: zipfile.ZipFile, name: str, data: bytes) -> None:
    zf.writestr(_info(name), data)


def _put_manifest(zf: zipfile.ZipFile, manifest: Manifest, file_deleted: bool) -> dict:
    body = manifest.body.encode("ascii")
    chained = {"previous_sha256": manifest.previous_sha256} if manifest.previous_sha256 else {}  # schemas 1-3
    entry = {
        "sequence": manifest.sequence,
        "sha256": manifest.sha256,
        **chained,
        "key_id": manifest.key_id,
        "signature": manifest.signature,
        **sections.mldsa(manifest),
        "correlation_id": manifest.correlation_id,
        "created_at": timestamp(manifest.created_at),
        "stored_name": manifest.storage_name,
        "stored_copy": sections.stored_copy(manifest.storage_name, body, file_deleted),
        "file": (name := f"manifests/{manifest.sequence:06d}-{manifest.sha256}.json"),
    }
    _put(zf, name, body)
    return entry


def _assets(scope: Scope):
    rows = Asset.objects.filter(manifest__in=scope.manifests).order_by("manifest__sequence", "name")
    return rows.values("name", "sha256", "size", "manifest__sequence").iterator(chunk_size=2000)


def _case_asset_names(scope: Scope) -> set[str] | None:
    if scope.case is None:
        return None
    return set(
        Asset.objects.filter(
            manifest__in=scope.manifests,
            placements__page__gte=scope.case.first_page,
            placements__page__lte=scope.case.last_page,
        ).values_list("name", flat=True)
    )


def _case_maps(scope: Scope) -> list[CaseMap]:
    """The case package's own map; a date range's maps made within it (records of the range); else none."""
    if scope.case is not None:
        return [scope.case.case_map]
    span = _range(scope)
    if span is None:
        return []
    start, before = span
    rows = CaseMap.objects.filter(**({"created_at__gte": start} if start else {}))
    return list(rows.filter(**({"created_at__lt": before} if before else {})).order_by("created_at", "pk"))


def _activity(scope: Scope) -> list[ActivityEvent]:
    """A date range's activity: the events the ledger took within it (an event signed at the upgrade joined it
    then, whatever time it gives the deed)."""
    span = _range(scope)
    if span is None:
        return []
    start, before = span
    rows = ActivityEvent.objects.filter(**({"log_leaf__created_at__gte": start} if start else {}))
    rows = rows.filter(log_leaf__isnull=False, **({"log_leaf__created_at__lt": before} if before else {}))
    return list(rows.order_by("log_leaf__index"))


def _put_activity(zf: zipfile.ZipFile, event: ActivityEvent) -> dict:
    body = event.body.encode("ascii")
    entry = {
        "id": event.pk,
        "file": log_evidence.activity_file(event.pk),
        "sha256": hashlib.sha256(body).hexdigest(),
        "signature": event.signature,
        "key_id": event.key_id,
        **sections.mldsa(event),
        "signed_at": json.loads(body)["signed_at"],
    }
    _put(zf, entry["file"], body)
    return entry


def _put_case_map(zf: zipfile.ZipFile, case_map: CaseMap) -> dict:
    entry = {
        "file": (name := log_evidence.case_map_file(case_map)),
        "sha256": case_map.sha256,
        "signature": case_map.signature,
        "key_id": case_map.key_id,
        **sections.mldsa(case_map),
        "manifest_sha256": case_map.manifest_sha256,
        "created_at": timestamp(case_map.created_at),
    }
    _put(zf, name, case_map.body.encode("ascii"))
    return entry


def _put_asset(zf: zipfile.ZipFile, asset: dict, include: bool, outputs_deleted: bool, outside_case=False) -> dict:
    omitted = "deleted_by_retention" if outputs_deleted else "outside_case" if outside_case else "not_exported"
    entry = {
        "name": asset["name"],
        "sha256": asset["sha256"],
        "size": asset["size"],
        "manifest_sequence": asset["manifest__sequence"],
        "file": None,
        "omitted": omitted,
    }
    if include:
        try:
            src = stores.outputs().open(asset["name"], "rb")
        except FileNotFoundError:
            return entry if outputs_deleted else {**entry, "omitted": "missing_from_store"}
        member = f"assets/{asset['name']}"
        with src, zf.open(_info(member, asset["size"]), "w") as dst:
            shutil.copyfileobj(src, dst, stores.CHUNK)
        entry.update(file=member, omitted=None)
    return entry


def _index(scope, manifests, assets, include_assets, exported_by, at, log, events) -> dict:
    return {
        "format": "pagetrail-evidence",
        "format_version": FORMAT_VERSION,
        "generated_at": timestamp(at),
        "exported_by": exported_by,
        "scope": {**scope.detail, "description": scope.description},
        "includes_assets": include_assets,
        "manifests": manifests,
        "verification_runs": sections.verification_runs(scope.manifests),
        "retention_events": sections.retention_events(events),
        "assets": assets,
        "log": log,
    }


def _range(scope: Scope) -> tuple[datetime | None, datetime | None] | None:
    if scope.detail["kind"] != "date_range":
        return None
    start = scope.detail.get("from")
    return (datetime.fromisoformat(start) if start else None, _range_end(scope))


def _range_end(scope: Scope) -> datetime | None:
    before = scope.detail.get("before")
    return datetime.fromisoformat(before) if before else None


def _sha256_written(fh, start: int) -> str | None:
    """The package's own hash, for the chain of custody (not possible on a write-only stream)."""
    if not (fh.seekable() and fh.readable()):
        return None
    end, digest = fh.tell(), hashlib.sha256()
    fh.seek(start)
    for chunk in iter(lambda: fh.read(stores.CHUNK), b""):
        digest.update(chunk)
    fh.seek(end)
    return digest.hexdigest()


def _summary(fh, start: int, scope: Scope, index: dict) -> dict:
    sha256, end = _sha256_written(fh, start), fh.tell()
    assets = index["assets"]
    listed = index["manifests"]
    return {
        "path": None,
        "scope": scope.description,
        "manifests": len(listed),
        "scope_sequences": [listed[0]["sequence"], listed[-1]["sequence"]],
        "boundary_records": len(index["log"]["boundaries"]),
        "assets": len(assets),
        "assets_included": sum(1 for a in assets if a["file"]),
        "assets_missing": sum(1 for a in assets if a["omitted"] == "missing_from_store"),
        "assets_deleted_by_retention": sum(1 for a in assets if a["omitted"] == "deleted_by_retention"),
        "stored_copies_not_matching": sum(1 for m in listed if m["stored_copy"] != "matches"),
        "verification_runs": len(index["verification_runs"]),
        "open_findings": len(index["open_findings"]),
        "retention_events": len(index["retention_events"]),
        "bytes": end - start,
        "sha256": sha256,
    }
