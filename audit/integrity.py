"""Verification beyond manifests and assets: the stored inputs, the activity record, and the chain's head.

An insider with database and store access could otherwise change an input's bytes, rewrite or delete
an activity event, delete the newest checkpoint file, or delete the newest manifest with its rows:
each of these is a finding of its own kind.
"""

import hashlib
import re

from extraction import stores
from extraction.models import Bundle

from .models import ActivityEvent, Checkpoint, Finding, Manifest, ManifestChain, RetentionEvent
from .previews import WIDTHS

Kind = Finding.Kind
# The names page previews are stored under: `<output prefix>/previews/p00001-w200.png`.
PREVIEW_NAME = re.compile(r"^(?P<prefix>.+)/previews/p(?P<page>\d{5})-w(?P<width>\d+)\.(?:png|jpg)$")


def check_inputs(bundles) -> list[Finding]:
    """Re-hash every stored input against its correlation id; a deleted one needs its retention event."""
    deleted_by_policy = set(RetentionEvent.objects.filter(
        what=RetentionEvent.What.INPUT, outcome=RetentionEvent.Outcome.DELETED).values_list("bundle_id", flat=True))
    found = []
    for bundle in bundles.only("pk", "correlation_id", "input_name", "input_deleted_at").iterator(chunk_size=500):
        if bundle.input_deleted_at:
            if bundle.pk not in deleted_by_policy:
                found.append(_input_finding(Kind.MISSING_INPUT, bundle, "The input is marked deleted, but no "
                                            "retention event records its deletion."))
            continue
        found += check_input(bundle)
    return found


def check_input(bundle: Bundle) -> list[Finding]:
    try:
        with stores.inputs().open(bundle.input_name, "rb") as fh:
            digest = hashlib.file_digest(fh, "sha256").hexdigest()
    except FileNotFoundError:
        return [_input_finding(Kind.MISSING_INPUT, bundle, "The stored input is missing, and no retention "
                                                           "event records its deletion.")]
    if digest != bundle.correlation_id:
        return [_input_finding(Kind.INPUT_CHANGED, bundle, f"The stored input hashes to {digest}, not to its "
                                                           f"correlation id {bundle.correlation_id}.")]
    return []


def _input_finding(kind: str, bundle: Bundle, detail: str) -> Finding:
    return Finding(kind=kind, name=bundle.input_name, detail=detail)


def check_activity() -> list[Finding]:
    """Every activity event still hashes to its recorded value and links to the one before it."""
    return [Finding(kind=Kind.ACTIVITY_CHAIN_BREAK, name=f"activity event {pk}",
                    detail=f"Activity event {pk} no longer matches its hash or its link to the event before it "
                           "(an event was edited, deleted or reordered).")
            for pk in ActivityEvent.broken_links()]


def check_chain_head() -> list[Finding]:
    """The chain's recorded head, the newest manifest and the newest checkpoint must agree.

    A manifest deleted with its rows after the last checkpoint leaves the head row pointing past the
    newest manifest; a deleted checkpoint file leaves its database row without a file.
    """
    chain = ManifestChain.objects.filter(pk=1).first()
    newest = Manifest.objects.order_by("-sequence").values_list("sequence", "sha256").first() or (0, None)
    found = []
    if chain and (chain.length, chain.head_sha256) != (newest[0], newest[1] or chain.head_sha256):
        found.append(Finding(kind=Kind.CHAIN_TRUNCATED, name="manifest chain",
                             detail=f"The chain's head records {chain.length} manifests, but the newest manifest "
                                    f"is number {newest[0]} (manifests were deleted or the head was rewritten)."))
    return found + [finding for checkpoint in Checkpoint.objects.order_by("chain_length")
                    for finding in _check_checkpoint_file(checkpoint, newest[0])]


def _check_checkpoint_file(checkpoint: Checkpoint, newest_sequence: int) -> list[Finding]:
    def problem(kind, detail):
        return [Finding(kind=kind, name=checkpoint.storage_name, detail=detail)]

    if checkpoint.chain_length > newest_sequence:
        return problem(Kind.CHAIN_TRUNCATED, f"Checkpoint {checkpoint.chain_length} covers more manifests than the "
                                             f"{newest_sequence} that exist (the newest were deleted).")
    # What a file that is there says is checked by checkpoints.check_all; here, that it is there.
    if not stores.outputs().exists(checkpoint.storage_name):
        return problem(Kind.CHECKPOINT_MISSING, f"The file of checkpoint {checkpoint.chain_length} is missing.")
    return []


def stray_preview(name: str, rendering: dict[str, int]) -> bool:
    """False for a file a preview worker may still be writing: a well-formed preview name, of a page the
    bundle has, under a manifest whose previews are not all recorded yet (files land before their rows)."""
    match = PREVIEW_NAME.match(name)
    if match is None or match["prefix"] not in rendering or int(match["width"]) not in WIDTHS:
        return True
    return not 1 <= int(match["page"]) <= rendering[match["prefix"]]
