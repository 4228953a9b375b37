#!/usr/bin/env python3
"""Offline verifier for a Pagetrail evidence package (shipped inside it as verify_evidence.py).

    python3 verify_evidence.py PACKAGE.zip [--key-id ID --key KEY ...] [--key-file FILE]

Standard library only (no network, no Pagetrail). Re-hashes every manifest and asset in the package, checks
the chain and the checkpoints against it, and HMAC-SHA256 signatures when given the key. Exits 0 on PASS.
"""

import argparse
import hashlib
import hmac
import json
import sys
import zipfile

GENESIS = "0" * 64
FIXED_MEMBERS = {"README.txt", "index.json", "verify_evidence.py"}
CHUNK = 1024 * 1024
LEFT_OUT = {"not_included": "asset(s) not included (package exported without assets)",
            "outside_case": "asset(s) of the manifest outside this case's pages, not included",
            "retained_away": "file(s) deleted under retention, as retention events in index.json record"}


class Report:
    def __init__(self):
        self.problems = []
        self.counts = dict.fromkeys(("manifests", "links", "checkpoints", "assets", "not_included",
                                     "outside_case", "signatures", "retained_away"), 0)
        self.unsigned = {}  # key id -> signatures left unchecked for want of its key

    def fail(self, where, what):
        self.problems.append(f"{where}: {what}")


def signature_ok(body, signature, key):
    return hmac.compare_digest(hmac.new(key.encode(), body, hashlib.sha256).hexdigest(), signature or "")


def check_signature(report, where, body, signature, key_id, keys):
    if key_id not in keys:
        report.unsigned[key_id] = report.unsigned.get(key_id, 0) + 1
    elif signature_ok(body, signature, keys[key_id]):
        report.counts["signatures"] += 1
    else:
        report.fail(where, f"the HMAC signature does not verify with the key for key id {key_id!r}")


def check_manifests(zf, index, keys, report):
    """Each manifest file: its bytes against index.json and its own name, its fields, its signature."""
    bodies, seen = {}, set()
    for entry in index.get("manifests", []):
        seq, where = entry.get("sequence"), entry.get("file") or f"manifest {entry.get('sequence')}"
        if seq in seen:
            report.fail("index.json", f"manifest {seq} is listed twice")
        seen.add(seq)
        data = read_member(zf, where, report)
        if data is None:
            continue
        report.counts["manifests"] += 1
        check_manifest_bytes(report, where, entry, data)
        body = parse_json(report, where, data)
        if body is not None:
            check_manifest_fields(report, where, entry, body)
            bodies[seq] = body
        check_signature(report, where, data, entry.get("signature"), entry.get("key_id"), keys)
        check_stored_copy(report, where, entry, index, seq)
    return bodies


def check_manifest_bytes(report, where, entry, data):
    digest, listed = hashlib.sha256(data).hexdigest(), entry.get("sha256")
    if digest != listed:
        report.fail(where, f"the file hashes to {digest}, index.json says {listed}")
    expected_name = f"manifests/{entry.get('sequence'):06d}-{digest}.json"
    if where != expected_name:
        report.fail(where, f"the file name does not match its sequence and content hash ({expected_name})")


def check_manifest_fields(report, where, entry, body):
    for field in ("sequence", "previous_sha256", "key_id"):
        if body.get(field) != entry.get(field):
            report.fail(where, f"the manifest says {field} {body.get(field)!r}, index.json says {entry.get(field)!r}")


STORED_COPY_PROBLEMS = {
    "missing": "at export time its file was missing from the output store",
    "differs": "at export time its file in the output store differed from the database copy",
    "no_database_row": "its file in the output store has no database row (the database lost or rewrote it)",
}


def check_stored_copy(report, where, entry, index, sequence=None):
    stored = entry.get("stored_copy")
    if stored == "deleted_by_retention":
        check_retention(report, where, index, sequence, "manifest_file")
    elif stored != "matches":
        report.fail(where, STORED_COPY_PROBLEMS.get(stored, f"its stored copy was not compared ({stored})"))


def check_retention(report, where, index, sequence, what):
    """Something left out as deleted under retention must have the retention event that says so."""
    if any(e.get("manifest") == sequence and e.get("what") == what and e.get("outcome") == "deleted"
           for e in index.get("retention_events", [])):
        report.counts["retained_away"] += 1
    else:
        report.fail(where, f"left out as deleted under retention, but no retention event in index.json "
                           f"records deleting the {what.replace('_', ' ')} of manifest {sequence}")


def check_chain(index, report):
    """The segment links without gaps, and every manifest in scope sits in it with the same hashes."""
    segment = index.get("chain_segment", [])
    links = {}
    for i, link in enumerate(segment):
        seq, prev = link.get("sequence"), link.get("previous_sha256")
        if i == 0 and seq == 1 and prev != GENESIS:
            report.fail("index.json", "chain segment: manifest 1 does not start from the genesis hash")
        if i > 0:
            before = segment[i - 1]
            if seq != before.get("sequence", 0) + 1:
                report.fail("index.json", f"chain segment: sequence {seq} follows {before.get('sequence')} "
                                          "(a gap or a reordering)")
            if prev != before.get("sha256"):
                report.fail("index.json", f"chain segment: manifest {seq}'s previous_sha256 is not the sha256 "
                                          f"of manifest {before.get('sequence')}")
        links[seq] = link
    report.counts["links"] = len(segment)
    for entry in index.get("manifests", []):
        link = links.get(entry.get("sequence"))
        if link is None or (link.get("sha256"), link.get("previous_sha256")) != (
                entry.get("sha256"), entry.get("previous_sha256")):
            report.fail(entry.get("file", "index.json"), "not in the chain segment with the same hashes")
    return links


def check_checkpoints(index, links, keys, report):
    """A checkpoint inside the segment must name the same head; its signed body is what counts."""
    for cp in index.get("checkpoints", []):
        where = f"index.json: checkpoint at chain length {cp.get('chain_length')}"
        body_text = cp.get("body", "")
        check_signature(report, where, body_text.encode("utf-8"), cp.get("signature"), cp.get("key_id"), keys)
        check_stored_copy(report, where, cp, index)
        body = parse_json(report, where, body_text.encode("utf-8")) or {}
        length, head = body.get("chain_length", cp.get("chain_length")), body.get("head_sha256", cp.get("head_sha256"))
        if (length, head) != (cp.get("chain_length"), cp.get("head_sha256")):
            report.fail(where, f"its signed body says chain length {length}, head {head}")
        if length in links:
            report.counts["checkpoints"] += 1
            if links[length].get("sha256") != head:
                report.fail(where, f"names head {head} but manifest {length} in the chain is "
                                   f"{links[length].get('sha256')}")


def check_assets(zf, index, bodies, report):
    """Every asset a manifest lists: listed alike in index.json, and re-hashed when included."""
    expected = {a.get("name"): (seq, a) for seq, body in bodies.items() for a in body.get("assets", [])}
    listed = {a.get("name"): a for a in index.get("assets", [])}
    for name, (seq, _) in expected.items():
        if name not in listed:
            report.fail("index.json", f"asset {name} of manifest {seq} is not listed")
    for name, entry in listed.items():
        if name not in expected:
            report.fail("index.json", f"lists asset {name}, which no manifest in the package names")
            continue
        seq, wanted = expected[name]
        if (entry.get("sha256"), entry.get("size"), entry.get("manifest_sequence")) != (
                wanted.get("sha256"), wanted.get("size"), seq):
            report.fail("index.json", f"asset {name} is listed with another hash, size or manifest than manifest {seq}")
        check_asset_file(zf, index, entry, seq, wanted, report)


def check_asset_file(zf, index, entry, seq, wanted, report):
    where = entry.get("file")
    if not where:
        reason = entry.get("omitted") or "not_exported"
        if reason == "deleted_by_retention":
            check_retention(report, f"assets/{entry.get('name')}", index, seq, "outputs")
        elif reason == "not_exported" and not index.get("includes_assets"):
            report.counts["not_included"] += 1
        elif reason == "outside_case" and "case_map" in index:
            report.counts["outside_case"] += 1
        else:
            report.fail(f"assets/{entry.get('name')}", f"not in the package ({reason.replace('_', ' ')})")
        return
    if where != f"assets/{entry.get('name')}":
        report.fail(where, f"is not where asset {entry.get('name')} belongs")
    digest, size = hash_member(zf, where, report)
    if digest is None:
        return
    report.counts["assets"] += 1
    if digest != wanted.get("sha256") or size != wanted.get("size"):
        report.fail(where, f"bytes hash to {digest} ({size} bytes), manifest {seq} says "
                           f"{wanted.get('sha256')} ({wanted.get('size')} bytes)")


def check_members(zf, index, report):
    """Nothing in the zip that the index does not account for, and no name twice."""
    names = zf.namelist()
    allowed = FIXED_MEMBERS | {m.get("file") for m in index.get("manifests", [])}
    allowed |= {a.get("file") for a in index.get("assets", []) if a.get("file")}
    allowed |= {index["case_map"].get("file")} if isinstance(index.get("case_map"), dict) else set()
    for name in sorted(set(names)):
        if names.count(name) > 1:
            report.fail(name, "appears more than once in the zip")
        if name not in allowed:
            report.fail(name, "unexpected file: index.json does not list it")


def read_member(zf, name, report):
    try:
        return zf.read(name)
    except KeyError:
        report.fail(name, "listed in index.json but missing from the package")
        return None


def hash_member(zf, name, report):
    digest, size = hashlib.sha256(), 0
    try:
        with zf.open(name) as fh:
            for chunk in iter(lambda: fh.read(CHUNK), b""):
                digest.update(chunk)
                size += len(chunk)
    except KeyError:
        report.fail(name, "listed in index.json but missing from the package")
        return None, None
    except (zipfile.BadZipFile, OSError) as exc:  # a flipped byte in a compressed member can break its CRC
        report.fail(name, f"cannot be read intact ({exc})")
        return None, None
    return digest.hexdigest(), size


def parse_json(report, where, data):
    try:
        return json.loads(data)
    except ValueError as exc:
        report.fail(where, f"is not valid JSON ({exc})")
        return None


def verify(zf, keys, report):
    data = read_member(zf, "index.json", report)
    index = parse_json(report, "index.json", data) if data is not None else None
    if not isinstance(index, dict):
        return None
    bodies = check_manifests(zf, index, keys, report)
    links = check_chain(index, report)
    check_checkpoints(index, links, keys, report)
    check_assets(zf, index, bodies, report)
    check_case_map(zf, index, keys, report)
    check_members(zf, index, report)
    return index


def check_case_map(zf, index, keys, report):
    """A case package: the signed case map, for a manifest in the package, naming the assets included."""
    entry = index.get("case_map")
    if entry is None:
        return
    where = entry.get("file") or "case map"
    data = read_member(zf, where, report)
    if data is None:
        return
    if hashlib.sha256(data).hexdigest() != entry.get("sha256"):
        report.fail(where, "the case map's bytes do not match the sha256 in index.json")
    check_signature(report, where, data, entry.get("signature"), entry.get("key_id"), keys)
    body = parse_json(report, where, data) or {}
    if body.get("manifest_sha256") not in {m.get("sha256") for m in index.get("manifests", [])}:
        report.fail(where, "refers to a manifest that is not in the package")
    cases = [c for c in body.get("cases", []) if c.get("name") == entry.get("case")]
    if not cases:
        report.fail(where, f"has no case named {entry.get('case')!r}")
        return
    included = {a.get("name"): a.get("sha256") for a in index.get("assets", []) if a.get("file")}
    for asset in cases[0].get("assets", []):
        if included.get(asset.get("name"), asset.get("sha256")) != asset.get("sha256"):
            report.fail(where, f"names {asset.get('name')} with another hash than the package holds")


def summary_lines(index, keys, report):
    lines = []
    if index:
        scope = index.get("scope", {})
        lines.append(f"scope: {scope.get('description', '?')}; exported {index.get('generated_at')} "
                     f"by {index.get('exported_by') or 'unknown'}")
    if not keys:
        lines.append("note: signatures not checked: no key given (use --key-id ID --key KEY or --key-file)")
    else:
        lines += [f"note: {n} signature(s) not checked: no key given for key id {k!r}"
                  for k, n in sorted(report.unsigned.items())]
    lines += [f"note: {report.counts[kind]} {text}: their hashes are listed but not re-checked"
              for kind, text in LEFT_OUT.items() if report.counts[kind]]
    c = report.counts
    lines.append(f"checked: {c['manifests']} manifest(s), chain segment of {c['links']} link(s), "
                 f"{c['checkpoints']} checkpoint(s) against the chain, {c['assets']} asset(s) re-hashed, "
                 f"{c['signatures']} signature(s)")
    return lines


def load_keys(args, parser):
    if len(args.key_id) != len(args.key):
        parser.error("give --key-id and --key in pairs")
    keys = dict(zip(args.key_id, args.key))
    if args.key_file:
        with open(args.key_file, encoding="utf-8") as fh:
            for line in fh:
                if line.strip() and not line.lstrip().startswith("#"):
                    key_id, sep, key = line.strip().partition("=")
                    if not sep:
                        parser.error(f"{args.key_file}: expected id=key lines")
                    keys[key_id.strip()] = key.strip()
    return keys


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("package", help="the evidence package (.zip)")
    parser.add_argument("--key-id", action="append", default=[], help="a key id recorded in the manifests")
    parser.add_argument("--key", action="append", default=[], help="the HMAC key for the preceding --key-id")
    parser.add_argument("--key-file", help="a file of id=key lines")
    args = parser.parse_args(argv)
    keys, report = load_keys(args, parser), Report()
    print(f"Pagetrail evidence package {args.package}")
    try:
        with zipfile.ZipFile(args.package) as zf:
            index = verify(zf, keys, report)
    except (OSError, zipfile.BadZipFile) as exc:
        print(f"FAIL\n  {args.package}: cannot be read as a zip ({exc})")
        return 1
    except (TypeError, ValueError, AttributeError, KeyError) as exc:  # an index.json edited into another shape
        print(f"FAIL\n  index.json: malformed, verification stopped ({type(exc).__name__}: {exc})")
        return 1
    print("\n".join(summary_lines(index, keys, report)))
    if report.problems:
        print(f"FAIL ({len(report.problems)} problem(s))")
        print("\n".join(f"  {problem}" for problem in report.problems))
        return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
