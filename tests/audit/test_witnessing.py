"""The log asks real witness processes (`python -m audit.verifier.witness serve`) over HTTP for cosignatures:
it keeps and serves them, proves consistency from each witness's size, learns that size from a 409, retries a
witness that does not answer and alerts below quorum, and an insider's rewrite at a size the witnesses cosigned
is refused by both of them."""

import pytest
from django.db import connection
from django.urls import reverse
from django.utils import timezone
from django_q.brokers import get_broker
from django_q.models import Schedule
from django_q.signing import SignedPackage

from audit.ledger import checkpoints as log_checkpoints
from audit.ledger import signing, witnessing
from audit.models import Alert, LogCheckpoint, LogCosignature
from audit.verifier import cosignature, notes
from tests.audit.test_evidence import chain  # noqa: F401 (fixture)
from tests.audit.test_ledger_page import staff
from tests.audit.test_tlog import rewrite_manifest_row
from tests.conftest import delete_stored
from tests.witnesses import WitnessProcess, key_file

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def witnesses(tmp_path, settings):
    """Two witnesses following this log: w1 cosigns with Ed25519, w2 with ML-DSA-44; both configured here."""
    public = signing.private_key().public_key().public_bytes_raw()
    logs = {settings.PAGETRAIL_LOG_ORIGIN: notes.verifier_key(settings.PAGETRAIL_LOG_ORIGIN, public)}
    started, config = [], []
    for name, algorithm in (("w1", "ed25519"), ("w2", "ml-dsa-44")):
        keys = key_file(tmp_path / f"{name}.key", f"witness.example/{name}", algorithm)
        started.append(WitnessProcess(tmp_path / name, tmp_path / f"{name}.key", logs))
        config.append([name, started[-1].url, *(key.vkey for key in keys)])
    settings.PAGETRAIL_WITNESSES, settings.PAGETRAIL_WITNESS_QUORUM = config, 2
    yield started
    for process in started:
        process.stop()


def keys_of(settings) -> list[cosignature.VerifierKey]:
    return [cosignature.parse_vkey(vkey) for entry in settings.PAGETRAIL_WITNESSES for vkey in entry[2:]]


def signed_now() -> LogCheckpoint:
    """A checkpoint of the log's head now (its task, queued on commit, is not run: tests call the function)."""
    log_checkpoints.write_log_checkpoint()
    return log_checkpoints.latest()


def served(client) -> str:
    answer = client.get("/api/v1/log/checkpoint")
    assert answer.status_code == 200
    return answer.content.decode()


def held_by(process, origin) -> notes.Checkpoint:
    return notes.read_checkpoint(process.checkpoint_of(origin).text)[0]


def test_it_serves_the_checkpoint_with_both_witnesses_cosignatures(chain, witnesses, settings, client):  # noqa: F811
    checkpoint = signed_now()
    assert served(client) == checkpoint.note  # nothing cosigned yet: the note as signed
    assert witnessing.request_cosignatures(checkpoint.pk) == {"w1": "cosigned", "w2": "cosigned"}
    note = served(client)
    _, text, lines = notes.read_checkpoint(note)
    assert note.startswith(checkpoint.note) and len(lines) == 4  # the log's Ed25519 and ML-DSA-44 lines, two witnesses
    assert cosignature.verified_by(text, lines, keys_of(settings)) == keys_of(settings)
    assert notes.open_checkpoint(note, log_checkpoints.trusted_publics()).size == checkpoint.tree_size


def test_a_later_checkpoint_is_sent_with_a_proof_from_each_witness_size(chain, witnesses, settings):  # noqa: F811
    first = log_checkpoints._signed(2, log_checkpoints.tlog.root(2), timezone.now())
    assert witnessing.request_cosignatures(first.pk) == {"w1": "cosigned", "w2": "cosigned"}
    later = signed_now()
    assert later.tree_size > 2
    assert witnessing.request_cosignatures(later.pk) == {"w1": "cosigned", "w2": "cosigned"}
    assert [held_by(w, settings.PAGETRAIL_LOG_ORIGIN).size for w in witnesses] == [later.tree_size] * 2


def test_it_learns_a_witness_size_from_its_409(chain, witnesses, settings):  # noqa: F811
    first = log_checkpoints._signed(2, log_checkpoints.tlog.root(2), timezone.now())
    witnessing.request_cosignatures(first.pk)
    with connection.cursor() as cursor:  # a database restored from before the cosignatures were kept
        cursor.execute("DELETE FROM audit_logcosignature")
    later = signed_now()
    assert witnessing.last_cosigned_size("w1") == 0
    assert witnessing.request_cosignatures(later.pk) == {"w1": "cosigned", "w2": "cosigned"}


def test_an_insiders_rewrite_at_a_cosigned_size_is_refused_by_both_witnesses(chain, witnesses, settings):  # noqa: F811
    cosigned = signed_now()
    witnessing.request_cosignatures(cosigned.pk)
    insider_re_signs(lambda: rewrite_manifest_row(chain[1], warnings=["inserted afterwards"]))
    rewritten = log_checkpoints.latest()
    assert rewritten.tree_size == cosigned.tree_size and rewritten.root_hash != cosigned.root_hash
    outcomes = witnessing.request_cosignatures(rewritten.pk)
    assert outcomes == {"w1": "refused: conflicting_root", "w2": "refused: conflicting_root"}
    refusals = Alert.objects.filter(kind=Alert.Kind.WITNESS_REFUSED).order_by("key")
    assert ["history was rewritten" in alert.message for alert in refusals] == [True, True]
    assert Alert.objects.filter(kind=Alert.Kind.WITNESS_QUORUM).count() == 1
    for process in witnesses:  # each still holds, and serves, the head it cosigned
        assert held_by(process, settings.PAGETRAIL_LOG_ORIGIN).root.hex() == cosigned.root_hash


def test_an_insiders_rewrite_grown_past_the_cosigned_size_fails_its_proof(chain, witnesses, settings):  # noqa: F811
    size = chain[1].log_leaf.index + 1  # the first two manifests, not the third
    cosigned = log_checkpoints._signed(size, log_checkpoints.tlog.root(size), timezone.now())
    witnessing.request_cosignatures(cosigned.pk)
    insider_re_signs(lambda: rewrite_manifest_row(chain[0], warnings=["inserted afterwards"]))
    grown = log_checkpoints.latest()
    assert grown.tree_size > size
    outcomes = witnessing.request_cosignatures(grown.pk)
    assert outcomes == {"w1": "refused: bad_proof", "w2": "refused: bad_proof"}


def test_a_witness_that_does_not_answer_is_retried_then_the_quorum_alert_opens(chain, witnesses, settings):  # noqa: F811
    witnesses[1].stop()  # w2 is down
    checkpoint = signed_now()
    settings.PAGETRAIL_WITNESS_TRIES = 2
    assert witnessing.request_cosignatures(checkpoint.pk, 1) == {"w1": "cosigned", "w2": "unavailable"}
    assert Schedule.objects.filter(func="audit.tasks.request_cosignatures", args=f"({checkpoint.pk}, 2)").exists()
    assert not Alert.objects.filter(kind=Alert.Kind.WITNESS_QUORUM).exists()
    assert witnessing.request_cosignatures(checkpoint.pk, 2) == {"w1": "cosigned", "w2": "unavailable"}
    alert = Alert.objects.get(kind=Alert.Kind.WITNESS_QUORUM)
    assert "1 witness cosignature(s) after 2 tries, fewer than the quorum of 2" in alert.message
    assert "w2: unavailable" in alert.message


def test_a_new_checkpoint_queues_the_request_after_its_commit(chain, witnesses):  # noqa: F811
    broker = get_broker()
    broker.purge_queue()
    checkpoint = signed_now()
    queued = [SignedPackage.loads(task[1]) for task in broker.dequeue() or []]
    broker.purge_queue()
    assert [(t["func"], t["args"]) for t in queued] == [("audit.tasks.request_cosignatures", (checkpoint.pk, 1))]


def test_a_malformed_witness_setting_refuses_to_start(settings):
    settings.PAGETRAIL_WITNESSES = [["w1", "http://127.0.0.1:1", "not-a-vkey"]]
    assert [e.id for e in witnessing.witnesses_configured()] == ["audit.E010"]
    settings.PAGETRAIL_WITNESSES = [["w1", "http://127.0.0.1:1", cosignature.generate("w", "ed25519").verifier().vkey]]
    settings.PAGETRAIL_WITNESS_QUORUM = 2
    assert [e.id for e in witnessing.witnesses_configured()] == ["audit.E011"]


def insider_re_signs(rewrite):
    """An insider with the database, the store and the key: `rewrite` the leaves, remove every checkpoint and
    cosignature, sign the head again."""
    rewrite()
    for checkpoint in LogCheckpoint.objects.all():
        delete_stored("outputs", checkpoint.storage_name)
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM audit_logcosignature")
        cursor.execute("DELETE FROM audit_logcheckpoint")
    log_checkpoints.write_log_checkpoint()


def test_cosignatures_are_kept_once_per_key(chain, witnesses):  # noqa: F811
    checkpoint = signed_now()
    witnessing.request_cosignatures(checkpoint.pk)
    witnessing.request_cosignatures(checkpoint.pk)  # a redelivered task
    assert LogCosignature.objects.filter(checkpoint=checkpoint).count() == 2


def test_the_checkpoint_page_names_the_witnesses_that_cosigned(chain, witnesses, client):  # noqa: F811
    checkpoint = signed_now()
    staff(client, "Compliance staff")
    url = reverse("admin:audit_logcheckpoint_change", args=[checkpoint.pk])
    assert "none yet" in client.get(url).content.decode()
    witnessing.request_cosignatures(checkpoint.pk)
    page = client.get(url).content.decode()
    assert "w1 (key " in page and "w2 (key " in page
    assert LogCosignature.objects.filter(checkpoint=checkpoint, witness="w2").get().line in page


def test_the_environment_variable_is_read_as_documented(tmp_path):
    """`NAME URL VKEY [VKEY ...]` entries split by ';' or newlines; a malformed one refuses to start."""
    from tests.test_settings import run

    vkeys = [cosignature.generate(f"witness.example/{n}", "ml-dsa-44").verifier().vkey for n in ("w1", "w2")]
    good = f"w1 http://127.0.0.1:7380 {vkeys[0]};\nw2 https://w2.example/ {vkeys[1]}"
    done = run(tmp_path, "check", PAGETRAIL_WITNESSES=good, PAGETRAIL_WITNESS_QUORUM="2")
    assert done.returncode == 0, done.stderr
    done = run(tmp_path, "check", PAGETRAIL_WITNESSES="w1 http://127.0.0.1:7380 w1+00000000+AAAA")
    assert done.returncode != 0 and "audit.E010" in done.stderr
