"""Evidence packages carry the log: a signed checkpoint and each manifest's inclusion proof, checked offline with
the public key only; a package (or an auditor) holding an earlier checkpoint catches a history rewritten and
re-signed by an insider holding the signing key."""

import base64

import pytest
from django.db import connection
from django.test import Client
from django.utils import timezone

from audit.ledger import checkpoints as log_checkpoints
from audit.ledger import tlog
from audit.models import LogCheckpoint, Manifest
from audit.verifier import merkle
from tests.audit.test_evidence import (  # chain and out are fixtures
    activity_carried,
    chain,  # noqa: F401
    edit_index,
    export,
    failed,
    index_of,
    out,  # noqa: F401
    rewrite,
    verify,
)
from tests.audit.test_tlog import rewrite_manifest_row
from tests.conftest import delete_stored, write_stored

pytestmark = pytest.mark.django_db


def insider_rewrites_the_newest_manifest():
    """With the database, the store and the signing key: the newest manifest edited and re-signed, its file and
    leaf made to match, every log checkpoint replaced by one signed over the new history."""
    newest = Manifest.objects.order_by("-sequence").first()
    rewrite_manifest_row(newest, warnings=["inserted afterwards"])
    newest.refresh_from_db()
    write_stored("outputs", newest.storage_name, newest.body.encode())
    for checkpoint in LogCheckpoint.objects.all():
        delete_stored("outputs", checkpoint.storage_name)
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM audit_logcheckpoint")
    log_checkpoints.write_log_checkpoint()


def test_it_passes_a_package_whose_manifests_are_all_in_the_signed_log(chain, out):  # noqa: F811
    package = export(out)
    done = verify(package)
    proofs = 3 + activity_carried(package)  # the manifests, and the activity the ledger took in the range
    assert done.returncode == 0 and f" {proofs} log inclusion proof(s)" in done.stdout, done.stdout
    assert index_of(out / "evidence.zip")["log"]["checkpoint"] == log_checkpoints.latest().note


def test_it_fails_a_manifest_swapped_in_a_re_signed_index(chain, out):  # noqa: F811
    package = export(out)

    def swap(index):
        index["log"]["inclusion"][0]["leaf_index"] = chain[1].log_leaf.index

    failed(verify(rewrite(package, edit_index(swap)), "--trust-package-keys", pin=False), "inclusion proof")


def test_it_fails_a_checkpoint_signed_by_another_key(chain, out):  # noqa: F811
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from audit.verifier import notes

    package, head = export(out), log_checkpoints.latest()
    forged = notes.sign(head.note.split("\n\n")[0] + "\n", "insider", Ed25519PrivateKey.generate())
    failed(verify(rewrite(package, edit_index(lambda i: i["log"].update(checkpoint=forged)))), "log checkpoint")


def test_a_rewrite_re_signed_by_the_insider_passes_alone_but_not_against_an_earlier_checkpoint(chain, out):  # noqa: F811
    earlier = out / "earlier.note"
    earlier.write_text(index_of(export(out, "before.zip"))["log"]["checkpoint"])
    insider_rewrites_the_newest_manifest()
    after = export(out, "after.zip")
    assert verify(after).returncode == 0  # consistent on its own: only an outside checkpoint tells
    failed(verify(after, "--earlier-checkpoint", str(earlier)), "not heads of one log", "rewritten")


def consistency_answer(out, first: int, second: int):
    answer = out / f"consistency-{first}-{second}.json"
    answer.write_text(Client().get(f"/api/v1/log/consistency?first={first}&second={second}").content.decode())
    return str(answer)


def signed_before_the_newest_manifest(out):
    """An earlier checkpoint an outside party holds: the log up to, not including, the newest manifest."""
    size = Manifest.objects.order_by("sequence").last().log_leaf.index
    earlier = out / "earlier.note"
    earlier.write_text(log_checkpoints._signed(size, merkle.root(tlog.leaf_hashes(size)), timezone.now()).note)
    return earlier, size


def test_a_smaller_earlier_checkpoint_joins_the_package_only_through_a_true_consistency_proof(chain, out):  # noqa: F811
    earlier, size = signed_before_the_newest_manifest(out)
    package = export(out)
    proof = consistency_answer(out, size, log_checkpoints.latest().tree_size)
    done = verify(package, "--earlier-checkpoint", str(earlier), "--consistency-proof", proof)
    assert done.returncode == 0 and "1 earlier log checkpoint(s)" in done.stdout, done.stdout
    failed(verify(package, "--earlier-checkpoint", str(earlier)), "not heads of one log")


def test_a_record_newer_than_the_earlier_checkpoint_is_not_protected_by_it(chain, out):  # noqa: F811
    """The limit docs/transparency-log.md states: a checkpoint vouches for the records it covers, no more."""
    earlier, size = signed_before_the_newest_manifest(out)
    insider_rewrites_the_newest_manifest()  # which no outside party had seen
    package = export(out)
    proof = consistency_answer(out, size, log_checkpoints.latest().tree_size)
    done = verify(package, "--earlier-checkpoint", str(earlier), "--consistency-proof", proof)
    assert done.returncode == 0, done.stdout


def test_the_proofs_in_a_package_are_the_ones_the_api_serves(chain, out):  # noqa: F811
    log = index_of(export(out))["log"]
    first = next(p for p in log["inclusion"] if p["sequence"] == chain[0].sequence)
    tree = merkle.Tree(tlog.leaf_hashes(int(log["checkpoint"].split("\n")[1])))  # the checkpoint's size, all leaves
    assert first["proof"] == [base64.b64encode(h).decode() for h in tree.inclusion_proof(first["leaf_index"])]
