"""The transparency log's read-only API: what an auditor or a witness fetches, checked with the public key only."""

import base64

import pytest
from django.test import Client

from audit.ledger import checkpoints as log_checkpoints
from audit.ledger import signing
from audit.models import LogCheckpoint, LogLeaf, Manifest
from audit.verifier import merkle, notes
from extraction.accounts import ServiceAccount
from extraction.models import Job
from tests.audit.test_verify import completed  # noqa: F401 (a fixture)

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def no_rate_limit_history():
    """The counts live in a cache every process shares (files in the data dir): earlier tests and runs leave some."""
    from django.core.cache import cache

    cache.clear()


@pytest.fixture
def token(completed):  # noqa: F811
    account = ServiceAccount.objects.create(name="claims-ingest")
    Job.objects.update(account=account)
    return account.issue_token()


def head(note: str) -> notes.Checkpoint:
    return notes.open_checkpoint(note, list(signing.configured_keys().values()))


def test_it_serves_the_latest_checkpoint_without_a_token(completed):  # noqa: F811
    assert Client().get("/api/v1/log/checkpoint").status_code == 404
    log_checkpoints.write_log_checkpoint()
    response = Client().get("/api/v1/log/checkpoint")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/plain")
    assert head(response.content.decode()).size == LogLeaf.objects.count()


def test_it_proves_a_manifest_is_in_the_signed_log(token):
    log_checkpoints.write_log_checkpoint()
    manifest = Manifest.objects.order_by("sequence")[1]
    response = Client().get(f"/api/v1/manifests/{manifest.pk}/inclusion-proof", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert response.status_code == 200, response.content
    answer = response.json()
    signed = head(answer["checkpoint"])
    proof = [base64.b64decode(h) for h in answer["proof"]]
    leaf = merkle.leaf_hash(manifest.body.encode())
    assert merkle.verify_inclusion(leaf, answer["leaf_index"], signed.size, proof, signed.root)


def test_it_says_when_no_checkpoint_holds_a_manifest_yet(token):
    from django.utils import timezone

    from audit.ledger import tlog

    newest, auth = Manifest.objects.order_by("sequence").last(), {"HTTP_AUTHORIZATION": f"Bearer {token}"}
    before = newest.log_leaf.index
    log_checkpoints._signed(before, merkle.root(tlog.leaf_hashes(before)), timezone.now())  # just before the newest
    response = Client().get(f"/api/v1/manifests/{newest.pk}/inclusion-proof", **auth)
    assert response.status_code == 409 and response.json()["error"]["code"] == "not_checkpointed"
    assert 0 < int(response["Retry-After"]) <= log_checkpoints.ON_DEMAND_SECONDS  # a checkpoint was signed just now
    assert LogCheckpoint.objects.count() == 1
    unsigned = f"/api/v1/manifests/{newest.pk}/inclusion-proof?tree_size={before + 1}"
    assert Client().get(unsigned, **auth).status_code == 404


def test_a_checkpoint_that_does_not_hold_the_manifest_is_a_409_with_retry_after(token):
    from django.utils import timezone

    from audit.ledger import tlog

    log_checkpoints._signed(1, merkle.root(tlog.leaf_hashes(1)), timezone.now())  # only the first leaf
    newest = Manifest.objects.order_by("sequence").last()
    path = f"/api/v1/manifests/{newest.pk}/inclusion-proof?tree_size=1"
    response = Client().get(path, HTTP_AUTHORIZATION=f"Bearer {token}")
    assert newest.log_leaf.index >= 1 and response.status_code == 409
    assert response.json()["error"]["code"] == "not_checkpointed"
    assert response["Retry-After"] == str(log_checkpoints.ON_DEMAND_SECONDS)


def test_before_any_checkpoint_asking_for_a_proof_signs_one(token):
    manifest = Manifest.objects.order_by("sequence").last()
    assert not LogCheckpoint.objects.exists()
    response = Client().get(f"/api/v1/manifests/{manifest.pk}/inclusion-proof", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert response.status_code == 200, response.content
    answer, signed = response.json(), head(log_checkpoints.latest().note)
    assert head(answer["checkpoint"]) == signed and signed.size == LogLeaf.objects.count()
    proof = [base64.b64decode(h) for h in answer["proof"]]
    assert merkle.verify_inclusion(
        merkle.leaf_hash(manifest.body.encode()), answer["leaf_index"], signed.size, proof, signed.root
    )


def test_a_minute_after_the_last_checkpoint_asking_signs_one_that_holds_the_manifest(token):
    from datetime import timedelta

    from django.utils import timezone

    from audit.ledger import tlog

    newest, auth = Manifest.objects.order_by("sequence").last(), {"HTTP_AUTHORIZATION": f"Bearer {token}"}
    before = newest.log_leaf.index
    a_minute_ago = timezone.now() - timedelta(seconds=log_checkpoints.ON_DEMAND_SECONDS + 1)
    log_checkpoints._signed(before, merkle.root(tlog.leaf_hashes(before)), a_minute_ago)
    response = Client().get(f"/api/v1/manifests/{newest.pk}/inclusion-proof", **auth)
    assert response.status_code == 200 and response.json()["tree_size"] == LogLeaf.objects.count()
    assert LogCheckpoint.objects.count() == 2


def test_it_answers_another_accounts_manifest_as_missing(token):
    log_checkpoints.write_log_checkpoint()
    other = ServiceAccount.objects.create(name="other").issue_token()
    manifest = Manifest.objects.first()
    response = Client().get(f"/api/v1/manifests/{manifest.pk}/inclusion-proof", HTTP_AUTHORIZATION=f"Bearer {other}")
    assert response.status_code == 404


def test_it_proves_a_later_checkpoint_extends_an_earlier_one(completed):  # noqa: F811
    log_checkpoints.write_log_checkpoint()
    older = head(log_checkpoints.latest().note)
    first = Manifest.objects.order_by("sequence").first().log_leaf.index + 1  # the log up to the first manifest
    response = Client().get(f"/api/v1/log/consistency?first={first}&second={older.size}")
    assert response.status_code == 200
    proof = [base64.b64decode(h) for h in response.json()["proof"]]
    records = LogLeaf.objects.filter(index__lt=first).order_by("index")
    first_root = merkle.root([merkle.leaf_hash(leaf.record_bytes()) for leaf in records])  # from the records' bytes
    assert merkle.verify_consistency(first, older.size, first_root, older.root, proof)
    assert Client().get(f"/api/v1/log/consistency?first={first}&second={older.size + 1}").status_code == 400


@pytest.mark.parametrize("size", [" 1", "+1", "1 ", "01", "1.0", "1e0", "0x1"])
def test_a_tree_size_not_written_in_decimal_digits_alone_is_refused(completed, size):  # noqa: F811
    log_checkpoints.write_log_checkpoint()
    response = Client().get("/api/v1/log/consistency", {"first": size, "second": "2"})
    assert response.status_code == 400 and response.json()["error"]["code"] == "bad_request"
    assert response.json()["error"]["message"].startswith("The query parameter 'first' is not valid: a tree size ")
    assert response.json()["error"]["parameter"] == "first"


@pytest.mark.parametrize("path", ["/api/v1/log/checkpoint?since=1", "/api/v1/log/consistency?first=1&second=2&frist=1"])
def test_the_public_log_endpoints_refuse_a_query_parameter_they_do_not_take(completed, path):  # noqa: F811
    log_checkpoints.write_log_checkpoint()
    response = Client().get(path)
    assert response.status_code == 400 and response.json()["error"]["code"] == "bad_request"
    assert "Unknown query parameter(s)" in response.json()["error"]["message"]


def answers(token: str) -> list[bytes]:
    """Every consistency proof between the log's checkpoints, and each manifest's inclusion proof at each holding it."""
    from audit.models import LogCheckpoint

    sizes, auth = sorted(LogCheckpoint.objects.values_list("tree_size", flat=True)), f"Bearer {token}"
    found = [
        Client().get(f"/api/v1/log/consistency?first={m}&second={n}").content for n in sizes for m in range(1, n + 1)
    ]
    for manifest in Manifest.objects.select_related("log_leaf"):
        for n in (n for n in sizes if n > manifest.log_leaf.index):
            found.append(
                Client()
                .get(f"/api/v1/manifests/{manifest.pk}/inclusion-proof?tree_size={n}", HTTP_AUTHORIZATION=auth)
                .content
            )
    return found


def test_its_proofs_from_stored_subtrees_are_byte_for_byte_the_ones_a_rebuild_gives(token, monkeypatch):
    from django.utils import timezone

    from audit.ledger import tlog

    for size in range(1, LogLeaf.objects.count() + 1):
        log_checkpoints._signed(size, merkle.root(tlog.leaf_hashes(size)), timezone.now())
    served = answers(token)
    monkeypatch.setattr(tlog, "tree", lambda size, **_: merkle.Tree(tlog.leaf_hashes(size)))  # as before 0023
    assert served == answers(token)
    assert [answer for answer in served if b'"error"' in answer] == []
    assert sum(b'"proof": ["' in answer for answer in served) > LogLeaf.objects.count()
