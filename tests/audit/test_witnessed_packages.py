"""Evidence packages carry their checkpoint's witness cosignatures, and `verify_evidence.pyz --witness VKEY --quorum K`
fails a package that fewer than K of those witnesses cosigned: an insider's consistent rewrite, refused by both real
witness processes, a fork shown to one witness, caught against the other's cosigned head, and a witness down for a
while, which only delays its cosignature."""

import json
import subprocess
import sys
import zipfile
from datetime import UTC, datetime

import pytest
from django.conf import settings as django_settings

from audit.ledger import checkpoints as log_checkpoints
from audit.ledger import signing
from audit.models import Alert, LogCheckpoint, LogCosignature, Manifest
from audit.verifier import cosignature, notes
from tests.audit.test_evidence import chain, export, failed, index_of, out, verify  # noqa: F401 (fixtures)
from tests.audit.test_tlog import rewrite_manifest_row
from tests.audit.test_witnessing import held_by, insider_re_signs, signed_now, witnesses  # noqa: F401 (fixture)
from tests.conftest import write_stored

NOWHERE = "http://127.0.0.1:9"  # configured, never asked: these tests keep cosignatures made in-process
pytestmark = pytest.mark.django_db
COSIGNED_AT = 1_796_000_000  # 2026-11-30 00:53:20 UTC


@pytest.fixture
def cosigners(settings):
    """Two witnesses' keys, in-process, configured as the log's witnesses (quorum 1)."""
    made = [cosignature.generate(f"witness.example/{n}", "ed25519") for n in ("w1", "w2")]
    settings.PAGETRAIL_WITNESSES = [[f"w{i}", NOWHERE, c.verifier().vkey] for i, c in enumerate(made, 1)]
    settings.PAGETRAIL_WITNESS_QUORUM = 1
    return made


def keep(checkpoint: LogCheckpoint, cosigner: cosignature.Cosigner, witness: str, text: str | None = None) -> None:
    """`cosigner`'s cosignature of `text` (default: the checkpoint's own) kept beside `checkpoint`."""
    line = cosigner.cosign(text or notes.split(checkpoint.note)[0], COSIGNED_AT)
    key_id, at = cosigner.verifier().key_id.hex(), datetime.fromtimestamp(COSIGNED_AT, UTC)
    LogCosignature.objects.create(checkpoint=checkpoint, witness=witness, key_id=key_id, line=line, signed_at=at)


def given(*vkeys: str, quorum: int | None = None) -> list[str]:
    args = [arg for vkey in vkeys for arg in ("--witness", vkey)]
    return [*args, "--quorum", str(quorum)] if quorum is not None else args


def vkeys_of(settings) -> list[str]:
    return [vkey for entry in settings.PAGETRAIL_WITNESSES for vkey in entry[2:]]


# --- the package and the verifier, witnesses in-process ----------------------------------------------


def test_a_package_carries_the_cosigned_note_and_names_each_witness_key(chain, out, cosigners):  # noqa: F811
    checkpoint = signed_now()
    keep(checkpoint, cosigners[0], "w1")
    log = index_of(export(out))["log"]
    assert log["checkpoint"] == checkpoint.note and log["cosigned_note"].startswith(checkpoint.note)
    assert log["cosignatures"] == [
        {
            "witness": "w1",
            "name": "witness.example/w1",
            "key_id": cosigners[0].verifier().key_id.hex(),
            "vkey": cosigners[0].verifier().vkey,
            "signed_at": "2026-11-30T00:53:20+00:00",
        }
    ]


def test_it_passes_the_quorum_the_checkpoint_meets_and_fails_the_one_it_does_not(chain, out, cosigners):  # noqa: F811
    keep(signed_now(), cosigners[0], "w1")
    package = export(out)
    w1, w2 = (c.verifier().vkey for c in cosigners)
    done = verify(package, *given(w1, w2, quorum=1))
    assert done.returncode == 0, done.stdout
    assert "witnessed: the log checkpoint is cosigned by 1 of 2 witnesses (quorum 1): witness.example/w1 at " in (
        done.stdout
    )
    problems = failed(verify(package, *given(w1, w2, quorum=2)), "cosigned by 1 of 2 witnesses (quorum 2)")
    assert "may be a history rewritten by whoever holds the log's key" in problems[0]


def test_a_witness_counts_once_whatever_number_of_its_keys_cosigned(chain, out, cosigners, settings):  # noqa: F811
    second_key = cosignature.generate("witness.example/w1", "ml-dsa-44")
    settings.PAGETRAIL_WITNESSES[0].append(second_key.verifier().vkey)
    checkpoint = signed_now()
    keep(checkpoint, cosigners[0], "w1")
    keep(checkpoint, second_key, "w1")
    w1, w2 = (c.verifier().vkey for c in cosigners)
    failed(verify(export(out), *given(w1, second_key.verifier().vkey, w2, quorum=2)), "cosigned by 1 of 2 witnesses")


def test_a_cosignature_of_another_checkpoint_fails_the_package(chain, out, cosigners):  # noqa: F811
    """An insider copies a witness's line from another checkpoint (one of the history before a rewrite)."""
    checkpoint = signed_now()
    other = notes.checkpoint_text(django_settings.PAGETRAIL_LOG_ORIGIN, checkpoint.tree_size, b"\x07" * 32)
    keep(checkpoint, cosigners[0], "w1", text=other)
    done = verify(export(out), *given(cosigners[0].verifier().vkey))
    failed(done, "its witness cosignatures do not count", "by witness.example/w1", "does not verify")


def test_without_witness_keys_it_reports_the_cosignatures_unchecked(chain, out, cosigners):  # noqa: F811
    keep(signed_now(), cosigners[1], "w2")
    done = verify(export(out))
    assert done.returncode == 0, done.stdout
    key_id = cosigners[1].verifier().key_id.hex()
    said = (
        f"note: the log checkpoint carries 1 witness cosignature(s) (witness.example/w2 (key {key_id}) at "
        "2026-11-30 00:53:20 UTC)"
    )
    assert said in done.stdout, done.stdout
    assert "not checked: give each witness's verifier key with --witness" in done.stdout


def test_it_prefers_the_newest_checkpoint_a_quorum_cosigned(chain, out, cosigners):  # noqa: F811
    size = chain[1].log_leaf.index + 1
    cosigned = log_checkpoints._signed(size, log_checkpoints.tlog.root(size), datetime.now(UTC))
    keep(cosigned, cosigners[0], "w1")
    newer = signed_now()  # nobody cosigned it yet
    assert newer.tree_size > size
    log = index_of(export(out, manifest=chain[1].sequence))["log"]
    assert notes.read_checkpoint(log["checkpoint"])[0].size == size
    assert verify(out / "evidence.zip", *given(cosigners[0].verifier().vkey)).returncode == 0


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--quorum", "1"], "--quorum counts witnesses"),
        (["--witness", "w+00000000+AAAA"], "is not an Ed25519 (0x01, 0x04) or ML-DSA-44 (0x06) key"),
        ("log key", "a log's signed-note key (type 0x01)"),
        ("quorum 3 of 2", "a quorum is 1 to the number of witnesses given (2), not 3"),
    ],
)
def test_a_wrong_witness_argument_is_a_usage_error(chain, out, cosigners, args, said):  # noqa: F811
    signed_now()
    package = export(out)
    if args == "log key":
        public = bytes(32)
        args = ["--witness", notes.verifier_key("log.example", public)]
    elif args == "quorum 3 of 2":
        args = given(*(c.verifier().vkey for c in cosigners), quorum=3)
    done = run_verifier(package, *args)
    assert done.returncode == 2 and said in done.stderr, done.stderr


def run_verifier(package, *args) -> subprocess.CompletedProcess:
    """The shipped verifier, pinned, its stderr kept (argparse's usage errors)."""
    (package.parent / "signing-keys.json").write_text(json.dumps(signing.published_document()))
    with zipfile.ZipFile(package) as zf:
        (package.parent / "verify_evidence.pyz").write_bytes(zf.read("verify_evidence.pyz"))
    command = [sys.executable, "-I", "verify_evidence.pyz", package.name, "--public-keys", "signing-keys.json"]
    return subprocess.run([*command, *args], cwd=package.parent, capture_output=True, text=True, timeout=60)


def rewrite_the_whole_history(chain):  # noqa: F811
    """An insider's consistent rewrite: a manifest changed and re-signed in the database and the output store, its
    leaf, every checkpoint after it and the head re-signed with the log's own key."""

    def rewrite():
        rewrite_manifest_row(chain[1], warnings=["inserted afterwards"])
        write_stored("outputs", chain[1].storage_name, Manifest.objects.get(pk=chain[1].pk).body.encode())

    insider_re_signs(rewrite)


# --- real witness processes over HTTP ---------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("grown", [False, True], ids=["same size", "larger"])
def test_an_insiders_consistent_rewrite_is_refused_by_both_witnesses_and_fails_the_quorum(  # noqa: F811
    chain, out, witnesses, settings, grown
):
    """The rewritten tree is of the size the witnesses cosigned (422 conflicting_root), or larger (422 bad_proof)."""
    from audit.ledger import witnessing

    size = chain[1].log_leaf.index + 1
    cosigned = log_checkpoints._signed(size, log_checkpoints.tlog.root(size), datetime.now(UTC)) if grown else None
    cosigned = cosigned or signed_now()
    assert witnessing.request_cosignatures(cosigned.pk) == {"w1": "cosigned", "w2": "cosigned"}
    scope = {"manifest": chain[1].sequence}
    assert verify(export(out, "honest.zip", **scope), *given(*vkeys_of(settings), quorum=2)).returncode == 0
    kept = list(LogCosignature.objects.values_list("witness", "key_id", "line", "signed_at"))

    rewrite_the_whole_history(chain)
    rewritten = log_checkpoints.latest()
    assert (rewritten.tree_size > cosigned.tree_size) == grown and rewritten.root_hash != cosigned.root_hash
    refusal = "refused: bad_proof" if grown else "refused: conflicting_root"
    assert witnessing.request_cosignatures(rewritten.pk) == {"w1": refusal, "w2": refusal}
    package = export(out, "rewritten.zip", **scope)
    assert verify(package).returncode == 0  # on its own, signed with the log's own key, it passes
    failed(verify(package, *given(*vkeys_of(settings), quorum=1)), "cosigned by 0 of 2 witnesses (quorum 1): none")

    for witness, key_id, line, signed_at in kept:  # the insider copies the old cosignatures onto the new head
        LogCosignature.objects.create(
            checkpoint=rewritten, witness=witness, key_id=key_id, line=line, signed_at=signed_at
        )
    failed(verify(export(out, "copied.zip", **scope), *given(*vkeys_of(settings), quorum=1)), "does not verify")


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_fork_shown_to_one_witness_is_caught_against_the_others_cosigned_head(  # noqa: F811
    chain, out, witnesses, settings
):
    from audit.ledger import witnessing

    both = list(settings.PAGETRAIL_WITNESSES)
    settings.PAGETRAIL_WITNESSES, settings.PAGETRAIL_WITNESS_QUORUM = both[:1], 1  # w1 alone sees the honest log
    witnessing.request_cosignatures(signed_now().pk)
    (out / "w1.note").write_text(witnesses[0].checkpoint_of(settings.PAGETRAIL_LOG_ORIGIN).text)

    rewrite_the_whole_history(chain)
    settings.PAGETRAIL_WITNESSES = both[1:]  # and w2, which never saw the log, alone the rewritten one
    assert witnessing.request_cosignatures(log_checkpoints.latest().pk) == {"w2": "cosigned"}
    package = export(out, "forked.zip")
    settings.PAGETRAIL_WITNESSES = both
    assert verify(package, *given(*vkeys_of(settings), quorum=1)).returncode == 0  # one witness is not enough
    failed(verify(package, *given(*vkeys_of(settings), quorum=2)), "cosigned by 1 of 2 witnesses")
    done = verify(package, *given(*vkeys_of(settings)), "--earlier-checkpoint", str(out / "w1.note"))
    failed(done, "--earlier-checkpoint", "not heads of one log", "the history was rewritten")


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_witness_down_for_a_while_only_delays_its_cosignature(chain, out, witnesses, settings):  # noqa: F811
    from audit.ledger import witnessing

    def signed_up_to(manifest):
        size = manifest.log_leaf.index + 1
        return log_checkpoints._signed(size, log_checkpoints.tlog.root(size), datetime.now(UTC))

    first = signed_up_to(chain[0])
    assert witnessing.request_cosignatures(first.pk) == {"w1": "cosigned", "w2": "cosigned"}
    witnesses[1].stop()  # w2 goes down
    settings.PAGETRAIL_WITNESS_TRIES = 2
    while_down = signed_up_to(chain[1])
    for attempt in (1, 2):
        assert witnessing.request_cosignatures(while_down.pk, attempt) == {"w1": "cosigned", "w2": "unavailable"}
    assert "1 witness cosignature(s) after 2 tries" in Alert.objects.get(kind=Alert.Kind.WITNESS_QUORUM).message

    witnesses[1].start()  # back, on another port, with the state it kept
    settings.PAGETRAIL_WITNESSES[1][1] = witnesses[1].url
    assert held_by(witnesses[1], settings.PAGETRAIL_LOG_ORIGIN).size == first.tree_size
    back = signed_now()  # the next checkpoint is sent to w2 with a proof from the size it kept
    assert witnessing.request_cosignatures(back.pk) == {"w1": "cosigned", "w2": "cosigned"}
    assert verify(export(out), *given(*vkeys_of(settings), quorum=2)).returncode == 0
