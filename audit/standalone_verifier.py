#!/usr/bin/env python3
"""Offline verifier for a Pagetrail evidence package (shipped inside it as verify_evidence.py).

    python3 verify_evidence.py PACKAGE.zip --public-keys signing-keys.json [--key-id ID --key KEY ...]
    python3 verify_evidence.py PACKAGE.zip --trust-package-keys
    ... --earlier-checkpoint SEEN.note [--consistency-proof CONSISTENCY.json] [--tsa-certificate TSA.pem]

No network, no Pagetrail. Re-hashes every manifest and asset in the package, checks the chain and the
checkpoints against it, each manifest's inclusion proof to the signed transparency-log checkpoint (and,
given a log checkpoint seen earlier, that both are heads of one log), the signed retention events behind
anything deleted, and every signature, each inside its key's validity period: Ed25519 ones with public keys,
HMAC-SHA256 ones (made before Ed25519) only when given their secret key. The public keys are the portal's
published list given with --public-keys (the package's keys.json must agree with it); without it, trust
would rest on the keys the package carries, which whoever re-signs a package can replace, so the verifier
says so and exits 3 unless --trust-package-keys accepts that. Ed25519 needs the `cryptography` package (pip
install cryptography): a well-reviewed implementation rather than one of our own. Exits 0 on PASS, 1 on
FAIL, 3 when only the package's own keys vouch for it.
"""

from __future__ import annotations

import argparse
import base64
import datetime
import hashlib
import hmac
import json
import sys
import zipfile

try:
    from cryptography import x509
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    CRYPTOGRAPHY = True
except ImportError:  # reported per signature: HMAC-only packages still verify with the standard library
    CRYPTOGRAPHY = False

GENESIS = "0" * 64
FIXED_MEMBERS = {"README.txt", "index.json", "index.sig.json", "verify_evidence.py", "keys.json"}
ED25519 = "ed25519-"
CHUNK = 1024 * 1024
LEFT_OUT = {
    "not_included": "asset(s) not included (package exported without assets)",
    "outside_case": "asset(s) of the manifest outside this case's pages, not included",
    "retained_away": "file(s) deleted under retention, as retention events in index.json record",
}


class Report:
    def __init__(self):
        self.problems = []
        self.pinned = False
        self.periods = {}  # key id -> (valid from, valid until or None), from the trusted key list
        self.retention = []  # the signed bodies of retention events that verified
        self.counts = dict.fromkeys(
            (
                "manifests",
                "links",
                "checkpoints",
                "assets",
                "not_included",
                "outside_case",
                "signatures",
                "retained_away",
                "log_proofs",
                "earlier_checkpoints",
                "timestamps",
            ),
            0,
        )
        self.unsigned = {}  # key id -> signatures left unchecked for want of its key
        self.signers = set()  # Ed25519 key ids whose signatures verified
        self.timestamp_unchecked = False  # the log checkpoint has a timestamp, but no TSA certificate was given
        self.timestamped_at = None

    def fail(self, where, what):
        self.problems.append(f"{where}: {what}")


def signature_ok(body, signature, key):
    return hmac.compare_digest(hmac.new(key.encode(), body, hashlib.sha256).hexdigest(), signature or "")


def ed25519_ok(public, body, signature):
    try:
        Ed25519PublicKey.from_public_bytes(public).verify(bytes.fromhex(signature or ""), body)
    except (InvalidSignature, ValueError):
        return False
    return True


def parse_time(text):
    try:
        return datetime.datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    except ValueError:
        return None


def check_signature(report, where, body, signature, key_id, keys, at=None):
    """`at`: the time the signed statement gives itself, which must fall inside its key's validity."""
    key_id = key_id or ""
    if key_id.startswith(ED25519):
        if check_ed25519(report, where, body, signature, key_id, keys):
            check_period(report, where, key_id, at)
    elif key_id not in keys:
        report.unsigned[key_id] = report.unsigned.get(key_id, 0) + 1
    elif signature_ok(body, signature, keys[key_id]):
        report.counts["signatures"] += 1
    else:
        report.fail(where, f"the HMAC signature does not verify with the key for key id {key_id!r}")


def check_ed25519(report, where, body, signature, key_id, keys):
    public = keys.get(key_id)
    if not isinstance(public, bytes):
        report.fail(where, f"signed with key {key_id}, which no public key list given or in the package holds")
    elif not CRYPTOGRAPHY:
        report.fail(where, "Ed25519 signatures need the cryptography package: pip install cryptography")
    elif ed25519_ok(public, body, signature):
        report.counts["signatures"] += 1
        report.signers.add(key_id)
        return True
    else:
        report.fail(where, f"the Ed25519 signature does not verify with public key {key_id}")
    return False


def check_period(report, where, key_id, at):
    start, end = report.periods.get(key_id, (None, None))
    signed = parse_time(at) if at else None
    if signed is None or signed.tzinfo is None:
        report.fail(where, f"gives no time it was signed at ({at!r}), so key {key_id}'s validity cannot be checked")
    elif start is None or signed < start or (end is not None and signed > end):
        report.fail(
            where,
            f"signed at {at}, outside the validity period of key {key_id} "
            f"({start.isoformat() if start else '?'} until {end.isoformat() if end else 'now'})",
        )


def key_id_of(public):
    return ED25519 + hashlib.sha256(public).hexdigest()[:16]


def public_keys(document, where, report, periods=None):
    """{key id: raw public key} from a published key list; a key under another key's id is refused.
    `periods` receives each key's validity period."""
    found = {}
    for entry in (document or {}).get("keys", []):
        try:
            public = base64.b64decode(entry.get("public_key", ""), validate=True)
        except ValueError:
            public = b""
        if len(public) != 32 or key_id_of(public) != entry.get("key_id"):
            report.fail(where, f"key {entry.get('key_id')!r} is not the public key its id names")
            continue
        found[entry["key_id"]] = public
        if periods is not None:
            periods[entry["key_id"]] = (
                parse_time(entry.get("valid_from") or ""),
                parse_time(entry["valid_until"]) if entry.get("valid_until") else None,
            )
    return found


def load_public_keys(zf, index, pinned, report):
    """The package's keys.json, which the signed index covers; with --public-keys, the published list, and
    the package must agree with it."""
    data = read_member(zf, "keys.json", report) or b"{}"
    listed = (index.get("keys") or {}).get("sha256")
    if hashlib.sha256(data).hexdigest() != listed:
        report.fail("keys.json", "is not the key list the index records (its sha256 differs from index.json's)")
    carried = public_keys(
        parse_json(report, "keys.json", data), "keys.json", report, None if pinned is not None else report.periods
    )
    if pinned is None:
        return carried
    report.pinned = True
    trusted = public_keys(pinned, "--public-keys", report, report.periods)
    for key_id, public in carried.items():
        if trusted.get(key_id) != public:
            report.fail("keys.json", f"key {key_id} is not in the published key list given with --public-keys")
    return trusted


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
        if isinstance(body, dict):
            check_manifest_fields(report, where, entry, body)
            bodies[seq] = body
        at = body.get("created_at") if isinstance(body, dict) else None
        check_signature(report, where, data, entry.get("signature"), entry.get("key_id"), keys, at)
        check_stored_copy(report, where, entry, seq, entry.get("stored_name"))
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


def check_stored_copy(report, where, entry, sequence=None, name=None):
    stored = entry.get("stored_copy")
    if stored == "deleted_by_retention":
        check_retention(report, where, sequence, "manifest_file", name)
    elif stored != "matches":
        report.fail(where, STORED_COPY_PROBLEMS.get(stored, f"its stored copy was not compared ({stored})"))


def check_retention(report, where, sequence, what, name):
    """Something left out as deleted under retention must have a signed retention event naming it."""
    if any(
        body.get("manifest_sequence") == sequence
        and body.get("what") == what
        and body.get("outcome") == "deleted"
        and name in (body.get("files") or [])
        for body in report.retention
    ):
        report.counts["retained_away"] += 1
    else:
        report.fail(
            where,
            f"left out as deleted under retention, but no signed retention event in the package "
            f"names {name} among the {what.replace('_', ' ')} of manifest {sequence} it deleted",
        )


RETENTION_FIELDS = {
    "bundle": "bundle",
    "manifest": "manifest_sequence",
    "what": "what",
    "outcome": "outcome",
    "files": "file_count",
    "bytes_freed": "bytes_freed",
    "at": "at",
}


def check_retention_events(index, keys, report):
    """Each retention event in the index: its signed body verifies and says what the index says."""
    for event in index.get("retention_events", []):
        where = f"index.json: retention event {event.get('id')}"
        text = event.get("body") or ""
        body = parse_json(report, where, text.encode("utf-8")) if text else None
        if not isinstance(body, dict):
            report.fail(where, "is not signed: it proves nothing about what was deleted")
            continue
        if not str(event.get("key_id", "")).startswith(ED25519):  # an HMAC one could go unchecked for want of a key
            report.fail(where, "a retention event must be signed with an Ed25519 key")
            continue
        before = len(report.problems)
        check_signature(
            report,
            where,
            text.encode("utf-8"),
            event.get("signature"),
            event.get("key_id"),
            keys,
            body.get("signed_at"),
        )
        differing = [k for k, field in RETENTION_FIELDS.items() if event.get(k) != body.get(field)]
        if differing:
            report.fail(where, f"says other {', '.join(differing)} than its signed body")
        if len(report.problems) == before:
            report.retention.append(body)


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
                report.fail(
                    "index.json",
                    f"chain segment: sequence {seq} follows {before.get('sequence')} (a gap or a reordering)",
                )
            if prev != before.get("sha256"):
                report.fail(
                    "index.json",
                    f"chain segment: manifest {seq}'s previous_sha256 is not the sha256 "
                    f"of manifest {before.get('sequence')}",
                )
        links[seq] = link
    report.counts["links"] = len(segment)
    for entry in index.get("manifests", []):
        link = links.get(entry.get("sequence"))
        if link is None or (link.get("sha256"), link.get("previous_sha256")) != (
            entry.get("sha256"),
            entry.get("previous_sha256"),
        ):
            report.fail(entry.get("file", "index.json"), "not in the chain segment with the same hashes")
    return links


def check_checkpoints(index, links, keys, report):
    """A checkpoint inside the segment must name the same head; its signed body is what counts.
    Returns the bodies of those whose signature verified."""
    verified = []
    for cp in index.get("checkpoints", []):
        where = f"index.json: checkpoint at chain length {cp.get('chain_length')}"
        body_text = cp.get("body", "")
        body = parse_json(report, where, body_text.encode("utf-8")) or {}
        before = len(report.problems)
        check_signature(
            report,
            where,
            body_text.encode("utf-8"),
            cp.get("signature"),
            cp.get("key_id"),
            keys,
            body.get("created_at"),
        )
        if len(report.problems) == before and (
            str(cp.get("key_id", "")).startswith(ED25519) or cp.get("key_id") in keys
        ):
            verified.append(body)  # only a checked signature anchors anything: an HMAC one without its key does not
        check_stored_copy(report, where, cp)
        length, head = body.get("chain_length", cp.get("chain_length")), body.get("head_sha256", cp.get("head_sha256"))
        if (length, head) != (cp.get("chain_length"), cp.get("head_sha256")):
            report.fail(where, f"its signed body says chain length {length}, head {head}")
        if length in links:
            report.counts["checkpoints"] += 1
            if links[length].get("sha256") != head:
                report.fail(
                    where, f"names head {head} but manifest {length} in the chain is {links[length].get('sha256')}"
                )
    return verified


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
            wanted.get("sha256"),
            wanted.get("size"),
            seq,
        ):
            report.fail("index.json", f"asset {name} is listed with another hash, size or manifest than manifest {seq}")
        check_asset_file(zf, index, entry, seq, wanted, report)


def check_asset_file(zf, index, entry, seq, wanted, report):
    where = entry.get("file")
    if not where:
        reason = entry.get("omitted") or "not_exported"
        if reason == "deleted_by_retention":
            check_retention(report, f"assets/{entry.get('name')}", seq, "outputs", entry.get("name"))
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
        report.fail(
            where,
            f"bytes hash to {digest} ({size} bytes), manifest {seq} says "
            f"{wanted.get('sha256')} ({wanted.get('size')} bytes)",
        )


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


def verify(zf, keys, report, pinned=None, earlier=None, tsa=None):
    data = read_member(zf, "index.json", report)
    index = parse_json(report, "index.json", data) if data is not None else None
    if not isinstance(index, dict):
        return None
    keys = {**keys, **load_public_keys(zf, index, pinned, report)}
    check_index_signature(zf, data, index, keys, report)
    check_retention_events(index, keys, report)
    bodies = check_manifests(zf, index, keys, report)
    links = check_chain(index, report)
    checkpoints = check_checkpoints(index, links, keys, report)
    check_assets(zf, index, bodies, report)
    check_case_map(zf, index, keys, report)
    check_members(zf, index, report)
    check_date_range_complete(index, checkpoints, report)
    head = check_log(zf, index, keys, report, tsa)
    if earlier is not None:
        check_earlier_checkpoint(head, *earlier, keys, report)
    return index


def check_index_signature(zf, data, index, keys, report):
    """index.json says what is in scope and why anything is absent; only the exporter's signature makes that count."""
    if "index.sig.json" not in zf.namelist():
        report.fail(
            "index.json", "is not signed (index.sig.json is missing): what it says is left out cannot be trusted"
        )
        return
    signed = parse_json(report, "index.sig.json", read_member(zf, "index.sig.json", report) or b"") or {}
    if not str(signed.get("key_id", "")).startswith(ED25519):
        report.fail("index.sig.json", "the index must be signed with an Ed25519 key")
        return
    before = len(report.problems)
    check_signature(
        report, "index.sig.json", data, signed.get("signature"), signed.get("key_id"), keys, index.get("generated_at")
    )
    if len(report.problems) > before:
        report.problems[-1] = "index.json: changed after export: " + report.problems[-1].split(": ", 1)[1]


def check_date_range_complete(index, checkpoints, report):
    """A date-range package holds every manifest of the chain segment created within its range, and the
    segment reaches what proves nothing later is in the range: a signed checkpoint made at or after the
    range's end, or the chain head the signed index records."""
    scope = index.get("scope", {})
    if scope.get("kind") != "date_range":
        return
    listed = {m.get("sequence") for m in index.get("manifests", [])}
    start, before = scope.get("from") or "", scope.get("before") or "9999"
    segment = index.get("chain_segment", [])
    for link in segment:
        created = link.get("created_at") or ""
        if start <= created < before and link.get("sequence") not in listed:
            report.fail(
                "index.json",
                f"manifest {link.get('sequence')} was created within the range ({created}) but is not in the package",
            )
    end = segment[-1] if segment else {}
    check_range_anchor(index, checkpoints, end, scope.get("before"), report)


def check_range_anchor(index, checkpoints, end, before, report):
    head, range_end = index.get("chain_head") or {}, parse_time(before) if before else None
    at_head = (head.get("length"), head.get("sha256")) == (end.get("sequence"), end.get("sha256"))
    at_checkpoint = range_end is not None and any(
        (cp.get("chain_length"), cp.get("head_sha256")) == (end.get("sequence"), end.get("sha256"))
        and made_at_or_after(cp, range_end)
        for cp in checkpoints
    )
    if not (at_head or at_checkpoint):
        report.fail(
            "index.json",
            f"the chain segment ends at manifest {end.get('sequence')}, which neither a signed "
            "checkpoint made after the range's end nor the chain head vouches for: "
            "manifests of the range after it may be missing",
        )
    for cp in checkpoints:
        made = parse_time(cp.get("created_at") or "")
        if (
            (cp.get("chain_length") or 0) > (end.get("sequence") or 0)
            and made
            and (range_end is None or made < range_end)
        ):
            report.fail(
                "index.json",
                f"a signed checkpoint made at {cp.get('created_at')}, within the range, covers "
                f"{cp.get('chain_length')} manifests, past the segment's end at "
                f"{end.get('sequence')}: manifests of the range are missing",
            )


def made_at_or_after(checkpoint, moment):
    made = parse_time(checkpoint.get("created_at") or "")
    return made is not None and made.tzinfo is not None and made >= moment


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
    check_signature(report, where, data, entry.get("signature"), entry.get("key_id"), keys, entry.get("created_at"))
    body = parse_json(report, where, data) or {}
    if body.get("manifest_sha256") not in {m.get("sha256") for m in index.get("manifests", [])}:
        report.fail(where, "refers to a manifest that is not in the package")
    cases = [c for c in body.get("cases", []) if c.get("name") == entry.get("case")]
    if not cases:
        report.fail(where, f"has no case named {entry.get('case')!r}")
        return
    listed = {a.get("name"): a for a in index.get("assets", [])}
    for asset in cases[0].get("assets", []):
        entry = listed.get(asset.get("name"), {})
        if entry.get("file") and entry.get("sha256") != asset.get("sha256"):
            report.fail(where, f"names {asset.get('name')} with another hash than the package holds")
        elif not entry.get("file") and not case_asset_may_be_absent(entry, index):
            report.fail(
                where,
                f"names {asset.get('name')}, which the package does not hold "
                f"(listed as {entry.get('omitted') or 'absent'})",
            )


def case_asset_may_be_absent(entry, index):
    """Only when its outputs were deleted under retention (the event is checked with the asset), or the
    exporter's signed index says assets were not requested."""
    return entry.get("omitted") == "deleted_by_retention" or index.get("includes_assets") is False


# --- the transparency log: a copy of audit/merkle.py's verification half (tests hold them to the same answers)


def node_hash(left: bytes, right: bytes) -> bytes:
    return hashlib.sha256(b"\x01" + left + right).digest()


def verify_inclusion(leaf: bytes, index: int, size: int, proof: list[bytes], root_hash: bytes) -> bool:
    """RFC 9162 section 2.1.3.2: `leaf` is leaf `index` of the tree of `size` whose root is `root_hash`."""
    if not 0 <= index < size:
        return False
    fn, sn, r = index, size - 1, leaf
    for p in proof:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            r = node_hash(p, r)
            while not fn & 1 and fn != 0:
                fn, sn = fn >> 1, sn >> 1
        else:
            r = node_hash(r, p)
        fn, sn = fn >> 1, sn >> 1
    return sn == 0 and r == root_hash


def verify_consistency(first: int, second: int, first_root: bytes, second_root: bytes, proof: list[bytes]) -> bool:
    """RFC 9162 section 2.1.4.2: the tree of size `first` is a prefix of the tree of size `second`."""
    if first == second:
        return not proof and first_root == second_root
    if not 0 < first < second or not proof:
        return False
    path = [first_root, *proof] if first & (first - 1) == 0 else list(proof)
    fn, sn = first - 1, second - 1
    while fn & 1:
        fn, sn = fn >> 1, sn >> 1
    fr = sr = path[0]
    for c in path[1:]:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            fr, sr = node_hash(c, fr), node_hash(c, sr)
            while not fn & 1 and fn != 0:
                fn, sn = fn >> 1, sn >> 1
        else:
            sr = node_hash(sr, c)
        fn, sn = fn >> 1, sn >> 1
    return sn == 0 and fr == first_root and sr == second_root


# --- C2SP signed notes: a copy of audit/signed_note.py's reading half


class NoteError(ValueError):
    pass


def note_key_hash(name, public):
    return hashlib.sha256(name.encode() + b"\n" + b"\x01" + public).digest()[:4]


def open_checkpoint(note, publics):
    """(origin, size, root) of a C2SP tlog-checkpoint once one signature by one of `publics` verifies."""
    text, sep, signatures = note.partition("\n\n")
    if not sep or not text or not signatures.endswith("\n"):
        raise NoteError("is not a signed note (no blank line before the signatures, or no final newline)")
    text += "\n"
    if not CRYPTOGRAPHY:
        raise NoteError("Ed25519 signatures need the cryptography package: pip install cryptography")
    if not any(note_signed_by(text, line, p) for line in signatures[:-1].split("\n") for p in publics):
        raise NoteError("carries no signature that verifies with a trusted key")
    lines = text[:-1].split("\n")
    if len(lines) < 3 or not lines[1].isdigit():
        raise NoteError("is not a checkpoint (origin, tree size, root hash)")
    try:
        root = base64.b64decode(lines[2], validate=True)
    except ValueError:
        root = b""
    if len(root) != 32:
        raise NoteError("has a root hash that is not base64 of 32 bytes")
    return lines[0], int(lines[1]), root


def note_signed_by(text, line, public):
    if not line.startswith("\u2014 "):
        return False
    name, _, encoded = line[2:].rpartition(" ")
    try:
        raw = base64.b64decode(encoded, validate=True)
    except ValueError:
        return False
    if len(raw) != 68 or raw[:4] != note_key_hash(name, public):
        return False
    return ed25519_ok(public, text.encode(), raw[4:].hex())


def leaf_hash(data):
    return hashlib.sha256(b"\x00" + data).digest()


def check_log(zf, index, keys, report, tsa=None):
    """Each manifest's file, hashed as a log leaf, follows its inclusion proof to a checkpoint a trusted key signed."""
    log = index.get("log")
    if not isinstance(log, dict):
        if (index.get("format_version") or 0) >= 3:
            report.fail("index.json", "carries no transparency log checkpoint or inclusion proofs")
        return None
    try:
        head = open_checkpoint(log.get("checkpoint") or "", [k for k in keys.values() if isinstance(k, bytes)])
    except NoteError as exc:
        report.fail("index.json: log checkpoint", str(exc))
        return None
    check_log_timestamp(log, tsa, report)
    _, size, root = head
    proofs, members = {p.get("sequence"): p for p in log.get("inclusion", [])}, set(zf.namelist())
    for entry in index.get("manifests", []):
        where, proof = entry.get("file") or f"manifest {entry.get('sequence')}", proofs.get(entry.get("sequence"))
        data = zf.read(where) if where in members else None
        if proof is None or data is None:
            report.fail(where, "has no inclusion proof in the package's log checkpoint")
        elif not verify_inclusion(leaf_hash(data), proof.get("leaf_index", -1), size, decode_hashes(proof), root):
            report.fail(where, f"its inclusion proof does not lead to the root of the signed log checkpoint ({size})")
        else:
            report.counts["log_proofs"] += 1
    return head


def check_log_timestamp(log, tsa, report):
    """With --tsa-certificate, the checkpoint's RFC 3161 token must be that TSA's over the note's bytes."""
    where, token = "index.json: log checkpoint", log.get("timestamp")
    if tsa is None:
        report.timestamp_unchecked = bool(token)
    elif not token:
        report.fail(where, "carries no RFC 3161 timestamp, which --tsa-certificate asks for")
    else:
        try:
            at = check_timestamp(base64.b64decode(token, validate=True), log["checkpoint"].encode(), tsa)
        except (TimestampError, ValueError) as exc:
            report.fail(where, f"its RFC 3161 timestamp does not count: {exc}")
            return
        report.counts["timestamps"] += 1
        report.timestamped_at = at


def decode_hashes(proof):
    try:
        return [base64.b64decode(h, validate=True) for h in proof.get("proof", [])]
    except (ValueError, TypeError):
        return []


def check_earlier_checkpoint(head, earlier, consistency, keys, report):
    """An earlier checkpoint the auditor holds (from an older package or a witness) and the package's must be
    heads of one log: equal at one size, else the consistency proof given (the portal's /log/consistency
    answer for the two sizes) must join them. A rewritten history cannot."""
    where = "--earlier-checkpoint"
    try:
        _, old_size, old_root = open_checkpoint(earlier, [k for k in keys.values() if isinstance(k, bytes)])
    except NoteError as exc:
        report.fail(where, str(exc))
        return
    if head is None:
        report.fail(where, "the package has no log checkpoint to compare it with")
        return
    (small, small_root), (big, big_root) = sorted([(old_size, old_root), (head[1], head[2])])
    proof = decode_hashes(consistency or {})
    if (consistency or {}).get("first", small) != small or (consistency or {}).get("second", big) != big:
        report.fail(where, f"the consistency proof given is not from size {small} to size {big}")
    elif not verify_consistency(small, big, small_root, big_root, proof):
        report.fail(
            where,
            f"the log checkpoints of size {old_size} and {head[1]} are not heads of one log: "
            "the history was rewritten (or, with different sizes, no valid consistency proof was given)",
        )
    else:
        report.counts["earlier_checkpoints"] += 1


# --- RFC 3161 timestamps: a copy of audit/timestamps.py's checking half (tests hold them to the same answers)

SHA256_OID = bytes.fromhex("0609608648016503040201")
SIGNED_DATA_OID = bytes.fromhex("06092a864886f70d010702")
MESSAGE_DIGEST_OID = bytes.fromhex("06092a864886f70d010904")
DIGESTS = (
    {
        bytes.fromhex("608648016503040201"): hashes.SHA256,
        bytes.fromhex("608648016503040202"): hashes.SHA384,
        bytes.fromhex("608648016503040203"): hashes.SHA512,
    }
    if CRYPTOGRAPHY
    else {}
)


class TimestampError(ValueError):
    """The token is malformed, for other bytes, or not signed by the TSA certificate given."""


def check_timestamp(token: bytes, data: bytes, tsa_certificate: x509.Certificate) -> datetime:
    """The token's genTime, once it is shown to be the TSA's signature over the SHA-256 of `data`."""
    try:
        return _check(token, data, tsa_certificate)
    except (IndexError, ValueError, TypeError) as exc:
        if isinstance(exc, TimestampError):
            raise
        raise TimestampError(f"the token is malformed ({exc})") from exc


def _check(token: bytes, data: bytes, tsa_certificate: x509.Certificate) -> datetime:
    info = _children(_one(token, 0x30))
    if info[0][2] != SIGNED_DATA_OID:
        raise TimestampError("the token is not CMS signed data")
    signed = _children(_one(_children(info[1][1])[0][2], 0x30))
    encap = _children(signed[2][1])
    tst_der = _one(_children(encap[1][1])[0][2], 0x04)
    signer = _children(signed[-1][1])[0][1]
    tst = _children(_one(tst_der, 0x30))
    imprint = _children(tst[2][1])
    if _children(imprint[0][1])[0][2] != SHA256_OID or imprint[1][1] != hashlib.sha256(data).digest():
        raise TimestampError("the token is a timestamp of other bytes (its message imprint differs)")
    _check_signer(_children(signer), tst_der, signed, tsa_certificate)
    return _generalized_time(tst[4][1])


def _check_signer(signer: list, tst_der: bytes, signed: list, tsa_certificate: x509.Certificate) -> None:
    digest = DIGESTS.get(_children(signer[2][1])[0][1])
    attrs = next((part for part in signer if part[0] == 0xA0), None)
    if digest is None or attrs is None:
        raise TimestampError("the token's signer uses an unsupported digest or signs no attributes")
    wanted = hashlib.new(digest.name, tst_der).digest()
    found = [
        _children(_children(a[1])[1][1])[0][1]
        for a in _children(attrs[1])
        if _children(a[1])[0][2] == MESSAGE_DIGEST_OID
    ]
    if found != [wanted]:
        raise TimestampError("the token's signed attributes do not cover its timestamp")
    signature = next(part[1] for part in signer[4:] if part[0] == 0x04)
    signed_attrs = b"\x31" + attrs[2][1:]  # signed as a SET (RFC 5652 section 5.4), stored [0] IMPLICIT
    for key in _candidate_keys(signed, tsa_certificate):
        if _verifies(key, signature, signed_attrs, digest()):
            return
    raise TimestampError("the token's signature does not verify with the TSA certificate given")


def _candidate_keys(signed: list, tsa_certificate: x509.Certificate):
    """The TSA certificate itself, and a certificate in the token that it directly issued."""
    yield tsa_certificate.public_key()
    carried = next((part for part in signed[3:] if part[0] == 0xA0), None)
    for _, _, der in _children(carried[1]) if carried else []:
        try:
            cert = x509.load_der_x509_certificate(der)
            cert.verify_directly_issued_by(tsa_certificate)
        except (ValueError, TypeError, InvalidSignature):
            continue
        yield cert.public_key()


def _verifies(key, signature: bytes, body: bytes, digest) -> bool:
    try:
        if isinstance(key, rsa.RSAPublicKey):
            key.verify(signature, body, padding.PKCS1v15(), digest)
        elif isinstance(key, ec.EllipticCurvePublicKey):
            key.verify(signature, body, ec.ECDSA(digest))
        else:
            return False
    except InvalidSignature:
        return False
    return True


def _generalized_time(text: bytes) -> datetime:
    value = text.decode("ascii").rstrip("Z")
    whole, _, fraction = value.partition(".")
    at = datetime.datetime.strptime(whole, "%Y%m%d%H%M%S").replace(tzinfo=datetime.UTC)
    return at.replace(microsecond=int((fraction or "0")[:6].ljust(6, "0")))


def _tlv(data: bytes, pos: int) -> tuple[int, int, int]:
    """(tag, start of content, end) of the DER element at `pos`."""
    tag, first = data[pos], data[pos + 1]
    if first < 0x80:
        return tag, pos + 2, pos + 2 + first
    n = first & 0x7F
    if not 0 < n <= 4:
        raise ValueError("a DER length of unsupported form")
    length = int.from_bytes(data[pos + 2 : pos + 2 + n], "big")
    return tag, pos + 2 + n, pos + 2 + n + length


def _children(content: bytes) -> list[tuple[int, bytes, bytes]]:
    """(tag, content, whole element) of each element in `content`."""
    found, pos = [], 0
    while pos < len(content):
        tag, start, end = _tlv(content, pos)
        if end > len(content):
            raise ValueError("a DER element runs past its container")
        found.append((tag, content[start:end], content[pos:end]))
        pos = end
    return found


def _one(data: bytes, tag: int) -> bytes:
    """The content of `data`, which must be exactly one element with `tag`."""
    elements = _children(data)
    if len(elements) != 1 or elements[0][0] != tag:
        raise ValueError(f"expected one DER element of tag {tag:#x}")
    return elements[0][1]


def summary_lines(index, keys, report):
    lines = []
    if index:
        scope = index.get("scope", {})
        lines.append(
            f"scope: {scope.get('description', '?')}; exported {index.get('generated_at')} "
            f"by {index.get('exported_by') or 'unknown'}"
        )
    lines += [
        f"note: {n} HMAC signature(s) not checked: no key given for key id {k!r} "
        "(use --key-id ID --key KEY or --key-file)"
        for k, n in sorted(report.unsigned.items())
    ]
    if report.timestamp_unchecked:
        lines.append("note: the log checkpoint's RFC 3161 timestamp was not checked (give --tsa-certificate)")
    if report.timestamped_at:
        lines.append(f"timestamped: the log checkpoint existed by {report.timestamped_at.isoformat()} (RFC 3161)")
    if report.signers:
        lines.append(f"signed by: {', '.join(sorted(report.signers))}")
    if not report.pinned:
        lines.append(
            "WARNING: no --public-keys given: every signature was checked with the keys.json the package "
            "carries, so trust rests on the package itself (a package re-signed with another key and "
            "carrying that key would pass). Pass the portal's /signing-keys.json, obtained separately, "
            "with --public-keys."
        )
    lines += [
        f"note: {report.counts[kind]} {text}: their hashes are listed but not re-checked"
        for kind, text in LEFT_OUT.items()
        if report.counts[kind]
    ]
    c = report.counts
    lines.append(
        f"checked: {c['manifests']} manifest(s), chain segment of {c['links']} link(s), "
        f"{c['checkpoints']} checkpoint(s) against the chain, {c['assets']} asset(s) re-hashed, "
        f"{c['signatures']} signature(s), {c['log_proofs']} log inclusion proof(s), "
        f"{c['earlier_checkpoints']} earlier log checkpoint(s), {c['timestamps']} timestamp(s)"
    )
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


def load_tsa(args):
    if not args.tsa_certificate:
        return None
    with open(args.tsa_certificate, "rb") as fh:
        return x509.load_pem_x509_certificate(fh.read())


def load_earlier(args):
    if not args.earlier_checkpoint:
        return None
    with open(args.earlier_checkpoint, encoding="utf-8") as fh:
        note = fh.read()
    proof = None
    if args.consistency_proof:
        with open(args.consistency_proof, encoding="utf-8") as fh:
            proof = json.load(fh)
    return note, proof


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("package", help="the evidence package (.zip)")
    parser.add_argument("--key-id", action="append", default=[], help="a key id recorded in the manifests")
    parser.add_argument("--key", action="append", default=[], help="the HMAC key for the preceding --key-id")
    parser.add_argument("--key-file", help="a file of id=key lines")
    parser.add_argument("--public-keys", help="the portal's published key list (signing-keys.json) to trust")
    parser.add_argument(
        "--trust-package-keys",
        action="store_true",
        help="accept the package's own keys.json when no --public-keys is given (exit 0, not 3)",
    )
    parser.add_argument("--earlier-checkpoint", help="a log checkpoint seen before (an older package's, a witness's)")
    parser.add_argument("--tsa-certificate", help="the TSA's certificate (PEM) to check the log timestamp against")
    parser.add_argument("--consistency-proof", help="the portal's /log/consistency answer joining the two sizes")
    args = parser.parse_args(argv)
    keys, report = load_keys(args, parser), Report()
    pinned = None
    if args.public_keys:
        with open(args.public_keys, encoding="utf-8") as fh:
            pinned = json.load(fh)
    print(f"Pagetrail evidence package {args.package}")
    try:
        with zipfile.ZipFile(args.package) as zf:
            index = verify(zf, keys, report, pinned, load_earlier(args), load_tsa(args))
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
    if not report.pinned and not args.trust_package_keys:
        print(
            "UNPINNED: every check passed, but only against the keys the package carries; verify with "
            "--public-keys signing-keys.json, or accept them with --trust-package-keys"
        )
        return 3
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
