"""The transparency log in a deployment: a leaf per manifest, signed checkpoints, and what verification finds."""

import base64
import hashlib
import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from audit import tasks
from audit.ledger import activity_records, signing, tlog
from audit.ledger import checkpoints as log_checkpoints
from audit.models import LogCheckpoint, LogLeaf, LogSubtree, Manifest
from audit.verifier import merkle, notes
from tests.audit.chained import freeze_the_chain, make_chained
from tests.audit.test_verify import completed, kinds  # noqa: F401 (a fixture)
from tests.conftest import read_stored, write_stored

pytestmark = pytest.mark.django_db


def test_it_logs_each_manifest_as_the_leaf_its_sequence_names(completed):  # noqa: F811
    size = LogLeaf.objects.count()  # the records migrate made (roles, the signing key) come first
    leaves = list(LogLeaf.objects.filter(kind="manifest").order_by("index").select_related("manifest"))
    assert [leaf.manifest.sequence for leaf in leaves] == [leaf.index for leaf in leaves] == [size - 2, size - 1]
    assert [json.loads(leaf.manifest.body)["sequence"] for leaf in leaves] == [size - 2, size - 1]
    assert [leaf.manifest.previous_sha256 for leaf in leaves] == [None, None]
    assert all("previous_sha256" not in json.loads(leaf.manifest.body) for leaf in leaves)
    assert list(LogLeaf.objects.values_list("index", flat=True)) == list(range(size))
    assert all(leaf.leaf_hash == merkle.leaf_hash(leaf.manifest.body.encode()).hex() for leaf in leaves)


def test_it_signs_a_checkpoint_of_the_log_once_per_size(completed, settings):  # noqa: F811
    checkpoint = log_checkpoints.write_log_checkpoint()
    head = notes.open_checkpoint(read_stored("outputs", checkpoint.storage_name).decode(), trusted())
    assert (head.origin, head.size) == (settings.PAGETRAIL_LOG_ORIGIN, LogLeaf.objects.count())
    assert head.root == merkle.root(tlog.leaf_hashes()) and head.root.hex() == checkpoint.root_hash
    assert log_checkpoints.write_log_checkpoint() is None
    assert kinds() == []


def test_it_signs_the_log_on_the_checkpoint_schedule(completed):  # noqa: F811
    tasks.write_checkpoint()
    assert list(LogCheckpoint.objects.values_list("tree_size", flat=True)) == [LogLeaf.objects.count()]


def trusted() -> list[bytes]:
    return list(signing.configured_keys().values())


def test_it_reads_a_note_only_with_the_key_that_signed_it(completed):  # noqa: F811
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    checkpoint = log_checkpoints.write_log_checkpoint()
    note, size = checkpoint.note, checkpoint.tree_size
    with pytest.raises(notes.NoteError):
        notes.open_checkpoint(note, [Ed25519PrivateKey.generate().public_key().public_bytes_raw()])
    with pytest.raises(notes.NoteError):
        notes.open_checkpoint(note.replace(f"\n{size}\n", f"\n{size + 1}\n", 1), trusted())


def rewrite_manifest_row(manifest: Manifest, **changes) -> None:
    """An insider with the database and the signing key: a manifest edited, re-signed, its leaf and the stored
    subtree hashes above it re-hashed."""
    body = json.loads(manifest.body) | changes
    raw = json.dumps(body, sort_keys=True, separators=(",", ":")).encode()
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE audit_manifest SET body = %s, sha256 = %s, signature = %s, mldsa_signature = %s WHERE id = %s",
            [
                raw.decode(),
                hashlib.sha256(raw).hexdigest(),
                signing.sign(raw),
                signing.mldsa_fields(raw)["mldsa_signature"],
                manifest.pk,
            ],
        )
        cursor.execute(
            "UPDATE audit_logleaf SET leaf_hash = %s WHERE manifest_id = %s",
            [merkle.leaf_hash(raw).hex(), manifest.pk],
        )
    rehash_subtrees()


def forget_subtrees_completed_by(index: int) -> None:
    """The stored subtree hashes leaf `index` completed, gone with it: a restore from before its append, or an
    insider deleting the leaf with care."""
    with connection.cursor() as cursor:
        for level in range((index + 1).bit_length()):
            if (index + 1) % (1 << level) == 0:
                cursor.execute(
                    'DELETE FROM audit_logsubtree WHERE level = %s AND "index" = %s',
                    [level, ((index + 1) >> level) - 1],
                )


def rehash_subtrees() -> None:
    """What an insider who rewrote a leaf does next: the stored subtree hashes made to match every leaf again."""
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM audit_logsubtree")
    tlog.store_subtrees(0, tlog.leaf_hashes())


def test_it_finds_a_manifest_whose_leaf_is_not_its_hash(completed):  # noqa: F811
    LogLeaf.objects.filter(manifest=completed.first()).update(leaf_hash="0" * 64)
    assert "log_mismatch" in kinds()


def test_it_finds_a_leaf_rewritten_under_a_signed_checkpoint(completed):  # noqa: F811
    log_checkpoints.write_log_checkpoint()
    rewrite_manifest_row(completed.last(), warnings=["inserted later"])
    assert "log_checkpoint_invalid" in kinds()


def test_it_finds_a_log_truncated_under_a_signed_checkpoint(completed):  # noqa: F811
    newest = completed.last().log_leaf.index
    assert log_checkpoints.write_log_checkpoint().tree_size == newest + 1  # the newest leaf, under the checkpoint
    with connection.cursor() as cursor:
        cursor.execute('DELETE FROM audit_logleaf WHERE "index" = %s', [newest])
    forget_subtrees_completed_by(newest)
    assert kinds().count("log_checkpoint_invalid") == 1 and "log_mismatch" in kinds()


def test_it_finds_an_altered_checkpoint_file(completed):  # noqa: F811
    checkpoint = log_checkpoints.write_log_checkpoint()
    size, name = checkpoint.tree_size, checkpoint.storage_name
    write_stored("outputs", name, read_stored("outputs", name).replace(b"\n%d\n" % size, b"\n%d\n" % (size - 1), 1))
    assert kinds() == ["log_checkpoint_invalid"]


def test_it_finds_a_checkpoint_file_deleted(completed):  # noqa: F811
    from tests.conftest import delete_stored

    delete_stored("outputs", log_checkpoints.write_log_checkpoint().storage_name)
    assert kinds() == ["log_checkpoint_invalid"]


def test_it_signs_a_checkpoint_on_demand(completed, settings):  # noqa: F811
    from io import StringIO

    from django.core.management import call_command

    printed, size = StringIO(), LogLeaf.objects.count()
    call_command("log_checkpoint", stdout=printed)
    assert f"Signed the checkpoint at {size}." in printed.getvalue()
    assert log_checkpoints.latest().note in printed.getvalue()
    call_command("log_checkpoint", stdout=printed)
    assert f"Unchanged since the checkpoint at {size}." in printed.getvalue()
    key = printed.getvalue().rsplit("verifier key (for C2SP and Go sumdb note tools): ", 1)[1].strip()
    name, key_hash, encoded = key.split("+", 2)  # the base64 may hold "+" too
    assert name == settings.PAGETRAIL_LOG_ORIGIN and base64.b64decode(encoded)[1:] in trusted()
    assert bytes.fromhex(key_hash) == notes.key_hash(name, base64.b64decode(encoded)[1:])


def test_the_upgrade_logs_every_manifest_written_before_the_log(completed):  # noqa: F811
    import importlib

    from django.apps import apps

    make_chained(completed)  # manifests as written before the log, counted in the hash chain
    before = list(LogLeaf.objects.filter(kind="manifest").values_list("manifest__sequence", "leaf_hash"))
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM audit_logleaf")  # as the database stood before the upgrade
        cursor.execute("DELETE FROM audit_logsubtree")
        cursor.execute("UPDATE audit_activityevent SET mldsa_signature = '', mldsa_key_id = ''")  # 0021 signs them
    importlib.import_module("audit.migrations.0015_transparency_log").log_every_manifest_so_far(apps, None)
    assert list(LogLeaf.objects.values_list("manifest__sequence", "leaf_hash")) == before
    assert list(LogLeaf.objects.values_list("index", flat=True)) == [0, 1]
    # activity joined the ledger later (0021), after every record so far
    importlib.import_module("audit.migrations.0021_ledger_activity").sign_and_log_every_event_so_far(apps, None)
    importlib.import_module("audit.migrations.0023_ledger_subtrees").store_the_subtrees_of_every_leaf_so_far(apps, None)
    assert kinds() == []


def test_after_the_upgrade_to_one_counter_old_and_new_manifests_verify_and_never_share_a_sequence(completed, tmp_path):  # noqa: F811
    """Migration 0024 freezes the chain of schemas 1-3: its head becomes a ledger record, and the next manifest's
    sequence is its leaf index, past every old sequence even when the ledger held nothing but the old manifests."""
    import importlib

    from django.apps import apps

    from audit.models import ActivityEvent, ManifestChain
    from tests import pdfs
    from tests.conftest import complete

    old = make_chained(completed)
    with connection.cursor() as cursor:  # the ledger of a deployment that held nothing but manifests 1 and 2
        cursor.execute("DELETE FROM audit_logleaf")
        cursor.execute("DELETE FROM audit_logsubtree")
        cursor.execute(f"DELETE FROM {ActivityEvent._meta.db_table}")
    importlib.import_module("audit.migrations.0015_transparency_log").log_every_manifest_so_far(apps, None)
    importlib.import_module("audit.migrations.0023_ledger_subtrees").store_the_subtrees_of_every_leaf_so_far(apps, None)
    assert list(LogLeaf.objects.values_list("index", "manifest__sequence")) == [(0, 1), (1, 2)]
    freeze_the_chain()
    frozen = LogLeaf.objects.get(index=2).activity
    assert (frozen.action, frozen.after) == (
        "manifest_chain_frozen",
        {"chain_length": 2, "head_sha256": old[-1].sha256, "next_sequence": "leaf index"},
    )
    new = complete(pdfs.jpeg_rgb(tmp_path), filename="after.pdf")
    assert new.sequence == new.log_leaf.index == 3 and new.previous_sha256 is None
    assert ManifestChain.objects.get().length == 2  # frozen: the new manifest is not in the chain
    assert kinds() == []


@pytest.fixture
def log70(db):
    """A ledger of 70 leaves, each appended as the product appends it (an activity event, under the lock)."""
    from types import SimpleNamespace

    for i in range(70 - LogLeaf.objects.count()):
        activity_records.record("tester", "noted", SimpleNamespace(pk=i))
    assert LogLeaf.objects.count() == 70
    return tlog.leaf_hashes()


def stored_subtrees() -> dict[tuple[int, int], bytes]:
    return {(lv, k): bytes.fromhex(h) for lv, k, h in LogSubtree.objects.values_list("level", "index", "hash")}


def test_each_append_stores_the_subtrees_its_leaf_completes(log70):
    assert stored_subtrees() == {(level, k): h for level, k, h in merkle.closed_subtrees(0, [], log70)}
    assert len(stored_subtrees()) == 70 + 35 + 17 + 8 + 4 + 2 + 1


def test_the_ledger_proves_from_stored_subtrees_what_every_leaf_proves(log70, django_assert_max_num_queries):
    for n in range(1, 71):
        rebuilt = merkle.Tree(log70, n)
        with django_assert_max_num_queries(1):
            tree = tlog.tree(n, leaves=range(n), firsts=range(1, n + 1))
        assert tree.root() == rebuilt.root() == merkle.root(log70[:n]), n
        assert [tree.inclusion_proof(m) for m in range(n)] == [rebuilt.inclusion_proof(m) for m in range(n)], n
        assert [tree.consistency_proof(m) for m in range(1, n + 1)] == [
            rebuilt.consistency_proof(m) for m in range(1, n + 1)
        ], n


def test_a_proof_reads_one_query_of_stored_hashes(log70, django_assert_num_queries):
    with django_assert_num_queries(1):
        assert tlog.tree(70, leaves=[37]).inclusion_proof(37) == merkle.inclusion_proof(log70, 37)
    with django_assert_num_queries(1):
        assert tlog.root(64) == merkle.root(log70[:64])


def test_an_append_costs_the_same_queries_whether_it_completes_subtrees_or_not(log70):
    from types import SimpleNamespace

    counts = []
    for n in range(70, 74):  # leaf 71 completes levels 1 to 3, leaves 70 and 72 none
        with CaptureQueriesContext(connection) as captured:
            activity_records.record("tester", "noted", SimpleNamespace(pk=n))
        counts.append(len(captured))
    assert len(set(counts)) == 1, counts
    assert stored_subtrees()[3, 8] == merkle.root(tlog.leaf_hashes()[64:72])


def test_a_proof_needing_a_deleted_subtree_hash_says_the_log_has_a_gap(log70):
    with connection.cursor() as cursor:
        cursor.execute('DELETE FROM audit_logsubtree WHERE level = 6 AND "index" = 0')
    with pytest.raises(tlog.LogGap, match="subtree 0 of level 6"):
        tlog.root(70)


def test_the_upgrade_stores_the_subtrees_of_every_leaf_so_far(log70):
    import importlib

    from django.apps import apps

    before = stored_subtrees()
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM audit_logsubtree")  # as the database stood before the upgrade
    importlib.import_module("audit.migrations.0023_ledger_subtrees").store_the_subtrees_of_every_leaf_so_far(apps, None)
    assert stored_subtrees() == before


@pytest.mark.parametrize(
    "edit, problem",
    [
        ("UPDATE audit_logsubtree SET hash = '%s' WHERE level = 1 AND \"index\" = 0" % ("0" * 64), "differ from"),
        ("UPDATE audit_logsubtree SET hash = '%s' WHERE level = 0 AND \"index\" = 1" % ("0" * 64), "differ from"),
        ('DELETE FROM audit_logsubtree WHERE level = 1 AND "index" = 0', "have no stored hash"),
        ("INSERT INTO audit_logsubtree (level, \"index\", hash) VALUES (9, 0, '%s')" % ("0" * 64), "no complete"),
    ],
)
def test_it_finds_a_stored_subtree_hash_that_is_not_the_leaves(completed, edit, problem):  # noqa: F811
    from audit.verification import ledger_checks as log_checks

    assert [f for f in log_checks.check_all() if f.kind == "log_mismatch"] == []
    with connection.cursor() as cursor:
        cursor.execute(edit)
    found = [f.detail for f in log_checks.check_all() if f.kind == "log_mismatch"]
    assert len(found) == 1 and found[0].startswith("1 ") and problem in found[0], found
