"""The rules of an evidence package (docs/evidence.md): what index.json says, checked against the members and
every signature, with nothing left out that no signed statement excuses.

`verify(zf, options)` returns a Report: problems (each naming the file), findings the portal itself recorded for
the scope, and what was checked. The log's rules (inclusion, completeness of a date range, timestamps, an earlier
checkpoint) are in package_log.py; the reading limits in bounded.py.
"""

from __future__ import annotations

import hashlib
import zipfile
from typing import TYPE_CHECKING, Any

from . import bounded, notes, package_log
from .keys import ED25519, Trust, read_key_list
from .report import Options, Report

if TYPE_CHECKING:
    pass

FIXED_MEMBERS = {"README.txt", "index.json", "index.sig.json", "verify_evidence.pyz", "keys.json"}
STORED_COPY_PROBLEMS = {
    "missing": "at export time its file was missing from the output store",
    "differs": "at export time its file in the output store differed from the database copy",
    "no_database_row": "its file in the output store has no database row (the database lost or rewrote it)",
}
RETENTION_FIELDS = {
    "bundle": "bundle",
    "manifest": "manifest_sequence",
    "what": "what",
    "outcome": "outcome",
    "files": "file_count",
    "bytes_freed": "bytes_freed",
    "at": "at",
}
LEDGER_RETENTION = 5  # the format from which retention events are ledger records
LEDGER_CASE_MAPS = 6  # and case maps
LEDGER_ACTIVITY = 7  # and activity events (a date range carries those recorded within it)


def verify(zf: zipfile.ZipFile, options: Options) -> Report:
    report = Report()
    data = _read(zf, "index.json", report, bounded.MAX_INDEX)
    index = _json(report, "index.json", data)
    if data is None or not isinstance(index, dict):  # data None: nothing parsed, index is None too
        return report
    report.index = index
    _load_keys(zf, index, options, report)
    _check_index_signature(zf, data, index, report)
    head = package_log.open_head(index, options, report)
    proven = package_log.proven_events(index, head, report)
    _check_retention_events(_list(index, "retention_events"), report, proven, _version(index) >= LEDGER_RETENTION)
    bodies = _check_manifests(zf, index, report)
    _check_assets(zf, index, bodies, report)
    _check_case_maps(zf, index, report, head)
    _check_activity(zf, index, report, head)
    _check_members(zf, index, report)
    package_log.check(zf, index, options, report, head, proven)
    _collect_findings(index, report)
    return report


def _version(index: dict[str, Any]) -> int:
    version = index.get("format_version")
    return version if isinstance(version, int) else 0


def _dict(document: dict[str, Any], key: str) -> dict[str, Any]:
    value = document.get(key)
    return value if isinstance(value, dict) else {}


def _list(document: dict[str, Any], key: str) -> list[dict[str, Any]]:
    """A list of objects from the index; anything else in its place is treated as empty (and fails elsewhere)."""
    value = document.get(key)
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _read(zf: zipfile.ZipFile, name: str, report: Report, limit: int = bounded.MAX_DOCUMENT) -> bytes | None:
    try:
        return bounded.read(zf, name, limit)
    except KeyError:
        report.fail(name, "listed in index.json but missing from the package")
    except bounded.Refused as exc:
        report.fail(name, str(exc).removeprefix(f"{name}: "))
    except (zipfile.BadZipFile, OSError, EOFError, NotImplementedError) as exc:
        report.fail(name, f"cannot be read intact ({exc})")
    return None


def _json(report: Report, where: str, data: bytes | None) -> object:
    if data is None:
        return None
    try:
        return bounded.parse_json(data)
    except bounded.Refused as exc:
        report.fail(where, str(exc))
        return None


def _load_keys(zf: zipfile.ZipFile, index: dict[str, Any], options: Options, report: Report) -> None:
    """The package's keys.json, which the signed index covers; with a pinned list, the package must agree."""
    data = _read(zf, "keys.json", report) or b"{}"
    if hashlib.sha256(data).hexdigest() != _dict(index, "keys").get("sha256"):
        report.fail("keys.json", "is not the key list the index records (its sha256 differs from index.json's)")
    carried, periods, problems = read_key_list(_json(report, "keys.json", data))
    for problem in problems:
        report.fail("keys.json", problem)
    if options.pinned is not None:
        report.pinned = True
        trusted, periods, problems = read_key_list(options.pinned)
        for problem in problems:
            report.fail("--public-keys", problem)
        for key_id, public in carried.items():
            if trusted.get(key_id) != public:
                report.fail("keys.json", f"key {key_id} is not in the published key list given with --public-keys")
        carried = trusted
    report.trust = Trust(carried, periods, dict(options.secrets))
    report.require_post_quantum = options.require_post_quantum


def _check_index_signature(zf: zipfile.ZipFile, data: bytes, index: dict[str, Any], report: Report) -> None:
    """index.json says what is in scope and why anything is absent; only the exporter's signature makes it count."""
    if "index.sig.json" not in zf.namelist():
        report.fail(
            "index.json", "is not signed (index.sig.json is missing): what it says it left out cannot be trusted"
        )
        return
    signed = _json(report, "index.sig.json", _read(zf, "index.sig.json", report))
    signed = signed if isinstance(signed, dict) else {}
    if not str(signed.get("key_id", "")).startswith(ED25519):
        report.fail("index.sig.json", "the index must be signed with an Ed25519 key")
        return
    if report.require_post_quantum and not signed.get("mldsa_key_id"):
        report.fail(
            "index.sig.json", "the index carries no ML-DSA-44 signature, and post-quantum signatures are required"
        )
        return
    before = len(report.problems)
    report.check_signature(
        "index.sig.json", data, signed.get("signature"), signed.get("key_id"), index.get("generated_at"), signed
    )
    if len(report.problems) > before:
        report.problems[-1] = "index.json: changed after export: " + report.problems[-1].split(": ", 1)[1]


def _check_retention_events(
    events: list[dict[str, Any]], report: Report, proven: dict[Any, Any], in_ledger: bool
) -> None:
    """Each retention event: its signed body verifies (Ed25519 only), says what the index says, and (format 5)
    is a leaf of the package's checkpoint: a signed statement the ledger does not hold excuses nothing."""
    for event in events:
        where = f"index.json: retention event {event.get('id')}"
        text = given if isinstance(given := event.get("body"), str) else ""
        body = _json(report, where, text.encode("utf-8")) if text else None
        if not isinstance(body, dict):
            report.fail(where, "is not signed: it proves nothing about what was deleted")
        elif not str(event.get("key_id", "")).startswith(ED25519):  # an HMAC one could go unchecked for want of a key
            report.fail(where, "a retention event must be signed with an Ed25519 key")
        elif in_ledger and event.get("id") not in proven:
            report.fail(
                where, "is not in the ledger: no inclusion proof leads from its signed body to the package's checkpoint"
            )
        elif report.check_signature(
            where, text.encode(), event.get("signature"), event.get("key_id"), body.get("signed_at"), event
        ):
            differing = [k for k, f in RETENTION_FIELDS.items() if event.get(k) != body.get(f)]
            if differing:
                report.fail(where, f"says other {', '.join(differing)} than its signed body")
            else:
                report.retention.append(body)


def _check_manifests(zf: zipfile.ZipFile, index: dict[str, Any], report: Report) -> dict[int, dict[str, Any]]:
    """Each manifest file: its bytes against index.json and its own name, its fields, its signature."""
    bodies, seen = {}, set()
    for entry in _list(index, "manifests"):
        seq = entry.get("sequence")
        where = file if isinstance(file := entry.get("file"), str) else f"manifest {seq}"
        if seq in seen or not isinstance(seq, int):
            report.fail("index.json", f"manifest {seq!r} is listed twice or without a sequence")
            continue
        seen.add(seq)
        data = _read(zf, where, report)
        if data is None:
            continue
        report.counts["manifests"] += 1
        report.manifest_bytes[where] = data
        digest = hashlib.sha256(data).hexdigest()
        if digest != entry.get("sha256"):
            report.fail(where, f"the file hashes to {digest}, index.json says {entry.get('sha256')}")
        if where != f"manifests/{seq:06d}-{digest}.json":
            report.fail(where, f"the file name does not match its sequence and content hash ({seq:06d}-{digest})")
        body = _json(report, where, data)
        body = body if isinstance(body, dict) else {}
        for name in ("sequence", "previous_sha256", "key_id"):
            if body.get(name) != entry.get(name):
                report.fail(where, f"the manifest says {name} {body.get(name)!r}, index.json says {entry.get(name)!r}")
        bodies[seq] = body
        report.check_signature(where, data, entry.get("signature"), entry.get("key_id"), body.get("created_at"), entry)
        _check_stored_copy(report, where, entry.get("stored_copy"), seq, entry.get("stored_name"))
    return bodies


def _check_stored_copy(
    report: Report, where: str, stored: object, sequence: object = None, name: object = None
) -> None:
    if stored == "deleted_by_retention":
        _check_retained_away(report, where, sequence, "manifest_file", name)
    elif stored != "matches":
        report.fail(where, STORED_COPY_PROBLEMS.get(str(stored), f"its stored copy was not compared ({stored})"))


def _check_retained_away(report: Report, where: str, sequence: object, what: str, name: object) -> None:
    """Something left out as deleted under retention must have a signed retention event naming it."""
    if any(
        b.get("manifest_sequence") == sequence
        and b.get("what") == what
        and b.get("outcome") == "deleted"
        and name in (files if isinstance(files := b.get("files"), list) else [])
        for b in report.retention
    ):
        report.counts["retained_away"] += 1
    else:
        report.fail(
            where,
            f"left out as deleted under retention, but no signed retention event in the package "
            f"names {name} among the {what.replace('_', ' ')} of manifest {sequence} it deleted",
        )


def _check_assets(
    zf: zipfile.ZipFile, index: dict[str, Any], bodies: dict[int, dict[str, Any]], report: Report
) -> None:
    """Every asset a manifest lists: listed alike in index.json, and re-hashed when included."""
    expected = {}
    for seq, body in bodies.items():
        for asset in assets if isinstance(assets := body.get("assets"), list) else []:
            if isinstance(asset, dict):
                expected[asset.get("name")] = (seq, asset)
    listed = {a.get("name"): a for a in _list(index, "assets")}
    for name, (seq, _) in expected.items():
        if name not in listed:
            report.fail("index.json", f"asset {name} of manifest {seq} is not listed")
    for name, entry in listed.items():
        if name not in expected:
            report.fail("index.json", f"lists asset {name}, which no manifest in the package names")
            continue
        seq, wanted = expected[name]
        if (entry.get("sha256"), entry.get("size"), entry.get("manifest_sequence")) != (
            wanted.get("sha256"),
            wanted.get("size"),
            seq,
        ):
            report.fail("index.json", f"asset {name} is listed with another hash, size or manifest than manifest {seq}")
        _check_asset_file(zf, index, entry, seq, wanted, report)


def _check_asset_file(
    zf: zipfile.ZipFile, index: dict[str, Any], entry: dict[str, Any], seq: int, wanted: dict[str, Any], report: Report
) -> None:
    name, where = entry.get("name"), entry.get("file")
    if not where:
        reason = omitted if isinstance(omitted := entry.get("omitted"), str) else "not_exported"
        if reason == "deleted_by_retention":
            _check_retained_away(report, f"assets/{name}", seq, "outputs", name)
        elif reason == "not_exported" and index.get("includes_assets") is False:
            report.counts["not_included"] += 1
        elif reason == "outside_case" and "case_map" in index:
            report.counts["outside_case"] += 1
        else:
            report.fail(f"assets/{name}", f"not in the package ({reason.replace('_', ' ')})")
        return
    if where != f"assets/{name}":
        report.fail(str(where), f"is not where asset {name} belongs")
    size = listed_size if isinstance(listed_size := wanted.get("size"), int) else 0
    try:
        digest, found = bounded.hash_member(zf, where, size)
    except KeyError:
        report.fail(where, "listed in index.json but missing from the package")
        return
    except (bounded.Refused, zipfile.BadZipFile, OSError, EOFError, NotImplementedError) as exc:
        report.fail(where, f"cannot be read intact ({exc})")  # a flipped byte can break a member's CRC
        return
    report.counts["assets"] += 1
    if digest != wanted.get("sha256") or found != size:
        report.fail(
            where, f"bytes hash to {digest} ({found} bytes), manifest {seq} says {wanted.get('sha256')} ({size} bytes)"
        )


def _check_case_maps(zf: zipfile.ZipFile, index: dict[str, Any], report: Report, head: notes.Checkpoint | None) -> None:
    """Each signed case map the package carries: its bytes, its signature and (format 6) its place in the ledger;
    a case package's own map also names the assets its case holds."""
    proofs = {p.get("sha256"): p for p in _list(_dict(index, "log"), "case_map_inclusion")}
    own = case_map if isinstance(case_map := index.get("case_map"), dict) else None
    for entry in ([own] if own else []) + _list(index, "case_maps"):
        where = str(entry.get("file") or "case map")
        data = _signed_file(zf, where, entry, "created_at", report)
        if data is None:
            continue
        if _version(index) >= LEDGER_CASE_MAPS:
            _check_in_ledger(where, data, proofs.get(entry.get("sha256")), head, report)
        if own is not None and entry is own:
            _check_case(where, data, own, index, report)


def _check_activity(zf: zipfile.ZipFile, index: dict[str, Any], report: Report, head: notes.Checkpoint | None) -> None:
    """Each signed activity event a date range carries: its bytes, its signature and its place in the ledger."""
    proofs = {p.get("id"): p for p in _list(_dict(index, "log"), "activity_inclusion")}
    for entry in _list(index, "activity"):
        where = str(entry.get("file") or "activity event")
        data = _signed_file(zf, where, entry, "signed_at", report)
        if data is not None:
            _check_in_ledger(where, data, proofs.get(entry.get("id")), head, report)


def _signed_file(
    zf: zipfile.ZipFile, where: str, entry: dict[str, Any], time_field: str, report: Report
) -> bytes | None:
    """A record's file: its bytes as index.json's sha256 says, its signature as of the time it gives."""
    data = _read(zf, where, report)
    if data is None:
        return None
    if hashlib.sha256(data).hexdigest() != entry.get("sha256"):
        report.fail(where, "the record's bytes do not match the sha256 in index.json")
    report.check_signature(where, data, entry.get("signature"), entry.get("key_id"), entry.get(time_field), entry)
    return data


def _check_in_ledger(where: str, data: bytes, proof: object, head: notes.Checkpoint | None, report: Report) -> None:
    if head is not None and isinstance(proof, dict) and package_log.proves(data, proof, head, report):
        report.record_leaves[proof["leaf_index"]] = package_log.signed_at(data)
    else:
        report.fail(where, "is not in the ledger: no inclusion proof leads from its bytes to the package's checkpoint")


def _check_case(where: str, data: bytes, entry: dict[str, Any], index: dict[str, Any], report: Report) -> None:
    """The case package's map: for a manifest in the package, naming the assets included."""
    body = _json(report, where, data)
    body = body if isinstance(body, dict) else {}
    if body.get("manifest_sha256") not in {m.get("sha256") for m in _list(index, "manifests")}:
        report.fail(where, "refers to a manifest that is not in the package")
    cases = [c for c in _list(body, "cases") if c.get("name") == entry.get("case")]
    if not cases:
        report.fail(where, f"has no case named {entry.get('case')!r}")
        return
    listed = {a.get("name"): a for a in _list(index, "assets")}
    for asset in _list(cases[0], "assets"):
        held = listed.get(asset.get("name"), {})
        if held.get("file") and held.get("sha256") != asset.get("sha256"):
            report.fail(where, f"names {asset.get('name')} with another hash than the package holds")
        elif not held.get("file") and not (
            held.get("omitted") == "deleted_by_retention" or index.get("includes_assets") is False
        ):
            report.fail(
                where,
                f"names {asset.get('name')}, which the package does not hold "
                f"(listed as {held.get('omitted') or 'absent'})",
            )


def _check_members(zf: zipfile.ZipFile, index: dict[str, Any], report: Report) -> None:
    """Nothing in the zip that the index does not account for, and no name twice."""
    allowed = FIXED_MEMBERS | {m.get("file") for m in _list(index, "manifests")}
    allowed |= {m.get("file") for m in _list(_dict(index, "log"), "boundaries")}
    allowed |= {a.get("file") for a in _list(index, "assets") if a.get("file")}
    allowed |= {index["case_map"].get("file")} if isinstance(index.get("case_map"), dict) else set()
    allowed |= {m.get("file") for m in _list(index, "case_maps")}
    allowed |= {m.get("file") for m in _list(index, "activity")}
    seen: set[str] = set()
    for name in zf.namelist():
        if name in seen:
            report.fail(name, "appears more than once in the zip")
        elif name not in allowed:
            report.fail(name, "unexpected file: index.json does not list it")
        seen.add(name)


def _collect_findings(index: dict[str, Any], report: Report) -> None:
    """The portal's newest verification run's findings about the scope: the package then cannot PASS."""
    runs = _list(index, "verification_runs")
    newest = max(runs, key=lambda r: str(r.get("finished_at") or ""), default=None)
    for finding in _list(newest or {}, "findings_in_scope"):
        report.findings.append(((newest or {}).get("id"), finding))
