"""What a verification run checks of the transparency log: every manifest is its leaf, the leaves have no gap,
the stored subtree hashes are the leaves', and every signed checkpoint in the output store is a head of today's
log, each consistent with the one before."""

from collections import Counter
from collections.abc import Iterator

from cryptography import x509
from django.conf import settings
from django.db.models import F
from django.db.models.expressions import Combinable, CombinedExpression

from audit.ledger import checkpoints as log_checkpoints
from audit.ledger import store_witness, timestamps, tlog
from audit.models import (
    ActivityEvent,
    CaseMap,
    Finding,
    LogCheckpoint,
    LogSubtree,
    Manifest,
    RecoveredRecord,
    RetentionEvent,
)
from audit.verifier import merkle, notes
from core import stores

Kind = Finding.Kind


def check_all() -> list[Finding]:
    findings = _check_leaves() + _check_store_ahead()
    try:
        leaves = tlog.leaf_hashes()
    except tlog.LogGap as gap:
        return findings + [Finding(kind=Kind.LOG_MISMATCH, detail=f"The log's leaves are not contiguous: {gap}.")]
    return findings + _check_subtrees(leaves) + _check_checkpoints(leaves)


def _check_leaves() -> list[Finding]:
    """Every manifest, retention event, case map and activity event is a leaf, which hashes its signed bytes."""
    found = []
    rows = Manifest.objects.order_by("sequence").values_list("pk", "storage_name", "body", "log_leaf__leaf_hash")
    for pk, name, body, leaf in rows.iterator(chunk_size=500):
        if problem := _leaf_differs("manifest", body, leaf):
            found.append(_leaf_problem(pk, name, problem))
    events = RetentionEvent.objects.order_by("pk").values_list("pk", "manifest_id", "body", "log_leaf__leaf_hash")
    for pk, manifest_id, body, leaf in events.iterator(chunk_size=500):
        if problem := _leaf_differs("retention event", body, leaf):
            found.append(_leaf_problem(manifest_id, f"retention event {pk}", problem))
    maps = CaseMap.objects.order_by("pk").values_list("sha256", "manifest_id", "body", "log_leaf__leaf_hash")
    for sha256, manifest_id, body, leaf in maps.iterator(chunk_size=500):
        if problem := _leaf_differs("case map", body, leaf):
            found.append(_leaf_problem(manifest_id, f"case map {sha256[:12]}", problem))
    activity = ActivityEvent.objects.order_by("pk").values_list("pk", "body", "log_leaf__leaf_hash")
    for pk, body, leaf in activity.iterator(chunk_size=1000):
        if problem := _leaf_differs("activity event", body, leaf):
            found.append(_leaf_problem(None, f"activity event {pk}", problem))
    recovered = RecoveredRecord.objects.order_by("pk").values_list("pk", "kind", "body", "log_leaf__leaf_hash")
    for pk, kind, body, leaf in recovered:
        if problem := _leaf_differs(f"recovered {kind}", body, leaf):
            found.append(_leaf_problem(None, f"recovered record {pk}", problem))
    return found


def _leaf_differs(what: str, body: str, leaf: str | None) -> str | None:
    if leaf is None:
        return f"The {what} is not in the transparency log."
    if merkle.leaf_hash(body.encode("utf-8")).hex() != leaf:
        return f"The {what}'s log leaf is not the hash of its bytes."
    return None


PROBLEMS = {
    "differ": "stored subtree hashes differ from the hashes of the leaves under them",
    "missing": "complete subtrees of the leaves have no stored hash",
    "extra": "stored subtree hashes have no complete subtree of leaves under them",
}


def _check_subtrees(leaves: list[bytes]) -> list[Finding]:
    """The stored subtree hashes, which proofs and checkpoints are made from, are exactly the ones the leaves make:
    one edited would make proofs that no longer follow from the records."""
    counts: Counter[str] = Counter()
    first: dict[str, tuple[int, int]] = {}
    for problem, level, index in _subtree_problems(leaves):
        counts[problem] += 1
        first.setdefault(problem, (level, index))
    return [
        Finding(
            kind=Kind.LOG_MISMATCH,
            name=f"log subtree {first[problem][1]} of level {first[problem][0]}",
            detail=f"{counts[problem]} {PROBLEMS[problem]} (the first: subtree {first[problem][1]} of level "
            f"{first[problem][0]}).",
        )
        for problem in PROBLEMS
        if counts[problem]
    ]


def _subtree_problems(leaves: list[bytes]) -> Iterator[tuple[str, int, int]]:
    """Both in the order the leaves complete them: by the leaf count that completes each, then by level."""
    made = merkle.closed_subtrees(0, [], leaves)
    completes = CombinedExpression(F("index") + 1, Combinable.BITLEFTSHIFT, F("level"))
    stored = LogSubtree.objects.order_by(completes, "level").values_list("level", "index", "hash")
    want = next(made, None)
    for level, index, hexed in stored.iterator(chunk_size=10000):
        while want and ((want[1] + 1) << want[0], want[0]) < ((index + 1) << level, level):
            yield "missing", want[0], want[1]
            want = next(made, None)
        if want and want[:2] == (level, index):
            if want[2].hex() != hexed:
                yield "differ", level, index
            want = next(made, None)
        else:
            yield "extra", level, index
    for level, index, _ in [want, *made] if want else []:
        yield "missing", level, index


def _check_store_ahead() -> list[Finding]:
    """Positions the output store holds past the database's newest: the database was restored or lost them."""
    return [
        Finding(
            kind=Kind.LEDGER_ROLLBACK,
            name=marker.get("manifest", ""),
            detail=f"The output store holds log position {marker['leaf_index']} "
            f"({_what(marker)}), which the database lacks.",
        )
        for marker in store_witness.ahead_of_database()
    ]


def _what(marker: dict) -> str:
    return f"manifest {marker['sequence']}" if "sequence" in marker else marker.get("kind", "a record")


def _leaf_problem(pk: int | None, name: str, detail: str) -> Finding:
    return Finding(kind=Kind.LOG_MISMATCH, manifest_id=pk, name=name, detail=detail)


def _check_checkpoints(leaves: list[bytes]) -> list[Finding]:
    rows = {row.storage_name: row for row in LogCheckpoint.objects.all()}
    names = sorted(n for n in log_checkpoints.stored_names() if n.endswith(log_checkpoints.NOTE))
    found = [
        _invalid(name, "The checkpoint's file is missing from the output store.") for name in rows.keys() - set(names)
    ]
    heads = []
    for name in names:
        problem, head = _read(name, rows.get(name))
        if problem:
            found.append(_invalid(name, problem))
        elif head:
            heads.append((name, head))
    roots = merkle.prefix_roots(leaves, [head.size for _, head in heads])
    for name, head in heads:
        if head.size > len(leaves):
            found.append(_invalid(name, f"It signs {head.size} leaves; the log holds {len(leaves)} (truncated)."))
        elif roots[head.size] != head.root:
            found.append(_invalid(name, f"The log's first {head.size} leaves no longer hash to its root (rewritten)."))
    found += _check_timestamps(rows.values())
    return found + _check_newest_extends_previous(leaves, [h for _, h in heads])


def _read(name: str, row: LogCheckpoint | None) -> tuple[str | None, notes.Checkpoint | None]:
    with stores.outputs().open(name, "rb") as fh:
        note = fh.read().decode("utf-8", "replace")
    try:
        head = log_checkpoints.open_note(note)
    except notes.NoteError as exc:
        return f"The checkpoint does not count: {exc}.", None
    if row is None or row.note != note:
        return "The checkpoint's database row is missing or differs from its file.", head
    return None, head


def _check_newest_extends_previous(leaves: list[bytes], heads: list[notes.Checkpoint]) -> list[Finding]:
    """The proof a witness asks for: the newest head extends the one before it."""
    heads = sorted((h for h in heads if h.size <= len(leaves)), key=lambda h: h.size)
    if len(heads) < 2:
        return []
    previous, newest = heads[-2], heads[-1]
    proof = merkle.Tree(leaves, newest.size).consistency_proof(previous.size)
    if merkle.verify_consistency(previous.size, newest.size, previous.root, newest.root, proof):
        return []
    return [_invalid(log_checkpoints.storage_name(newest.size), "It is not consistent with the checkpoint before it.")]


def _invalid(name: str, detail: str) -> Finding:
    return Finding(kind=Kind.LOG_CHECKPOINT_INVALID, name=name, detail=detail)


def _missing(name: str) -> Finding:
    return Finding(kind=Kind.TIMESTAMP_MISSING, name=name, detail="The checkpoint has no RFC 3161 timestamp.")


def _check_timestamps(rows) -> list[Finding]:
    """With PAGETRAIL_TSA_CERTIFICATE set, every checkpoint's token must be the TSA's over its note: one without
    a token is `timestamp_missing` (dropped, or the TSA failed when it was signed), as the offline verifier
    given --tsa-certificate refuses a package whose checkpoint has none."""
    if not settings.PAGETRAIL_TSA_CERTIFICATE:
        return []
    with open(settings.PAGETRAIL_TSA_CERTIFICATE, "rb") as fh:
        certificate = x509.load_pem_x509_certificate(fh.read())
    found = []
    for row in rows:
        if not row.timestamp_token:
            found.append(_missing(row.storage_name))
            continue
        try:
            timestamps.check(bytes(row.timestamp_token), row.note.encode(), certificate)
        except timestamps.TimestampError as exc:
            found.append(_invalid(row.storage_name, f"Its RFC 3161 timestamp does not count: {exc}."))
    return found
