"""The witness over real HTTP against a live portal: it keeps what it saw, accepts only extensions, and
refuses loudly a history rewritten and re-signed by an insider holding the key, a rollback, and a split view
(two witnesses shown different histories) once they compare checkpoints."""

import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from django.utils import timezone

from audit.ledger import checkpoints as log_checkpoints
from audit.ledger import signing, tlog
from audit.models import LogCheckpoint, LogLeaf, Manifest
from audit.verifier import merkle
from tests.audit.test_evidence import chain, export, out  # noqa: F401 (fixtures)
from tests.audit.test_tlog import forget_subtrees_completed_by, rewrite_manifest_row
from tests.conftest import delete_stored

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def portal(live_server, chain, out):  # noqa: F811
    from django.core.cache import cache

    cache.clear()  # rate limits of earlier tests
    (out / "signing-keys.json").write_text(json.dumps(signing.published_document()))
    return live_server.url


def sign_before_the_newest_manifest() -> int:
    """A checkpoint of the log up to, not including, the newest manifest; its size."""
    size = Manifest.objects.order_by("sequence").last().log_leaf.index
    log_checkpoints._signed(size, merkle.root(tlog.leaf_hashes(size)), timezone.now())
    return size


def witness(portal, out, state="witness.json", *compare):
    """One witness run; returns its output, or raises CommandError with the exit code it would give."""
    args = [portal, "--state", str(out / state), "--public-keys", str(out / "signing-keys.json")]
    for other in compare:
        args += ["--compare", str(other)]
    from io import StringIO

    printed = StringIO()
    call_command("witness", *args, stdout=printed)
    return printed.getvalue()


def alarm(portal, out, *args) -> CommandError:
    with pytest.raises(CommandError) as refused:
        witness(portal, out, *args)
    return refused.value


def insider_re_signs(rewrite):
    """An insider with the database, the store and the key: `rewrite` the leaves, replace every checkpoint."""
    rewrite()
    for checkpoint in LogCheckpoint.objects.all():
        delete_stored("outputs", checkpoint.storage_name)
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM audit_logcheckpoint")
    log_checkpoints.write_log_checkpoint()


def drop_newest():
    with connection.cursor() as cursor:
        cursor.execute('DELETE FROM audit_logleaf WHERE "index" = %s', [LogLeaf.objects.count() - 1])
    forget_subtrees_completed_by(LogLeaf.objects.count())


def rewrite_second():
    rewrite_manifest_row(Manifest.objects.order_by("sequence")[1], warnings=["inserted afterwards"])


def test_it_keeps_the_first_checkpoint_and_accepts_the_log_growing(portal, out):
    before = sign_before_the_newest_manifest()
    assert f"at {before} records, first checkpoint kept" in witness(portal, out)
    size = log_checkpoints.write_log_checkpoint().tree_size
    assert size > before and f"at {size} records, consistent" in witness(portal, out)
    assert json.loads((out / "witness.json").read_text())["tree_size"] == size


def test_it_refuses_a_history_rewritten_and_re_signed_at_the_same_size(portal, out):
    seen = log_checkpoints.write_log_checkpoint()
    witness(portal, out)
    insider_re_signs(rewrite_second)
    assert log_checkpoints.latest().tree_size == seen.tree_size and log_checkpoints.latest().root_hash != seen.root_hash
    refused = alarm(portal, out)
    assert refused.returncode == 2 and "FORK" in str(refused)
    assert json.loads((out / "witness.json").read_text())["note"] == seen.note  # still the last good one


def test_it_refuses_a_history_rewritten_below_what_it_saw_as_the_log_grows(portal, out):
    sign_before_the_newest_manifest()
    witness(portal, out)
    insider_re_signs(rewrite_second)  # a larger size, not consistent with the smaller head the witness kept
    refused = alarm(portal, out)
    assert refused.returncode == 2 and "does not extend" in str(refused)


def test_it_refuses_a_rollback(portal, out):
    log_checkpoints.write_log_checkpoint()
    witness(portal, out)
    insider_re_signs(drop_newest)
    refused = alarm(portal, out)
    assert refused.returncode == 3 and "ROLLBACK" in str(refused)


def test_two_witnesses_shown_different_histories_find_the_fork_when_they_compare(portal, out):
    log_checkpoints.write_log_checkpoint()
    witness(portal, out, "a.json")
    insider_re_signs(rewrite_second)  # from now on the portal shows the rewritten history
    assert "first checkpoint kept" in witness(portal, out, "b.json")  # b alone cannot tell
    refused = alarm(portal, out, "b.json", out / "a.json")
    assert refused.returncode == 2 and "FORK" in str(refused)


def test_a_witness_that_saw_more_than_the_portal_now_serves_makes_the_other_find_a_rollback(portal, out):
    size = log_checkpoints.write_log_checkpoint().tree_size
    witness(portal, out, "a.json")
    insider_re_signs(drop_newest)
    refused = alarm(portal, out, "b.json", out / "a.json")
    assert refused.returncode == 3 and "ROLLBACK" in str(refused) and f"holds a checkpoint of {size}" in str(refused)
    assert not (out / "b.json").exists()


def test_a_package_exported_before_the_rewrite_catches_it(portal, out):
    package = export(out, "before.zip")
    insider_re_signs(rewrite_second)
    refused = alarm(portal, out, "fresh.json", package)
    assert refused.returncode == 2


def test_it_refuses_a_checkpoint_signed_by_a_key_it_was_not_given(portal, out):
    import base64

    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    log_checkpoints.write_log_checkpoint()
    other = base64.b64encode(Ed25519PrivateKey.generate().public_key().public_bytes_raw()).decode()
    with pytest.raises(CommandError, match="no signature on the checkpoint verifies with a trusted key"):
        call_command("witness", portal, "--state", str(out / "w.json"), "--public-key", other)
    assert not (out / "w.json").exists()
