"""The transparency log in a deployment: a leaf per manifest, signed checkpoints, and what verification finds."""

import base64
import hashlib
import json

import pytest
from django.db import connection

from audit import log_checkpoints, signing, tasks, tlog
from audit.models import LogCheckpoint, LogLeaf, Manifest
from audit.verifier import merkle, notes
from tests.audit.test_verify import completed, kinds  # noqa: F401 (a fixture)
from tests.conftest import read_stored, write_stored

pytestmark = pytest.mark.django_db


def test_it_logs_each_manifest_as_a_leaf_in_chain_order(completed):  # noqa: F811
    size = LogLeaf.objects.count()  # the records migrate made (roles, the signing key) come first
    leaves = list(LogLeaf.objects.filter(kind="manifest").order_by("index").select_related("manifest"))
    assert [leaf.manifest.sequence for leaf in leaves] == [1, 2]
    assert [leaf.index for leaf in leaves] == [size - 2, size - 1]
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
    """An insider with the database and the signing key: a manifest edited, re-signed, its leaf re-hashed."""
    body = json.loads(manifest.body) | changes
    raw = json.dumps(body, sort_keys=True, separators=(",", ":")).encode()
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE audit_manifest SET body = %s, sha256 = %s, signature = %s WHERE id = %s",
            [raw.decode(), hashlib.sha256(raw).hexdigest(), signing.sign(raw), manifest.pk],
        )
        cursor.execute(
            "UPDATE audit_logleaf SET leaf_hash = %s WHERE manifest_id = %s",
            [merkle.leaf_hash(raw).hex(), manifest.pk],
        )


def test_it_finds_a_manifest_whose_leaf_is_not_its_hash(completed):  # noqa: F811
    LogLeaf.objects.filter(manifest__sequence=1).update(leaf_hash="0" * 64)
    assert "log_mismatch" in kinds()


def test_it_finds_a_leaf_rewritten_under_a_signed_checkpoint(completed):  # noqa: F811
    log_checkpoints.write_log_checkpoint()
    rewrite_manifest_row(Manifest.objects.get(sequence=2), warnings=["inserted later"])
    assert "log_checkpoint_invalid" in kinds()


def test_it_finds_a_log_truncated_under_a_signed_checkpoint(completed):  # noqa: F811
    newest = Manifest.objects.get(sequence=2).log_leaf.index
    assert log_checkpoints.write_log_checkpoint().tree_size == newest + 1  # the newest leaf, under the checkpoint
    with connection.cursor() as cursor:
        cursor.execute('DELETE FROM audit_logleaf WHERE "index" = %s', [newest])
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

    before = list(LogLeaf.objects.filter(kind="manifest").values_list("manifest__sequence", "leaf_hash"))
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM audit_logleaf")  # as the database stood before the upgrade
    importlib.import_module("audit.migrations.0015_transparency_log").log_every_manifest_so_far(apps, None)
    assert list(LogLeaf.objects.values_list("manifest__sequence", "leaf_hash")) == before
    assert list(LogLeaf.objects.values_list("index", flat=True)) == [0, 1]
    # activity joined the ledger later (0021), after every record so far
    importlib.import_module("audit.migrations.0021_ledger_activity").sign_and_log_every_event_so_far(apps, None)
    assert kinds() == []
