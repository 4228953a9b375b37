"""The activity trail is in the ledger: each event a signed leaf, so an insider with the database and the key
cannot rewrite it consistently; verification runs and signing-key rotations are activity records too."""

import base64
import hashlib
import importlib
import json
import os

import pytest
from django.apps import apps
from django.db import connection

from audit.ledger import activity_records, signing
from audit.ledger import checkpoints as log_checkpoints
from audit.models import ActivityEvent, Alert, LogLeaf, Manifest
from audit.models.evidence import GENESIS
from audit.verification.verify import verify_all
from audit.verifier import merkle
from extraction.intake.staging import submit_bundle
from extraction.models import SubmissionSwitch
from extraction.runner import run_job
from tests import pdfs
from tests.audit.chained import make_chained
from tests.audit.test_evidence import chain, export, failed, index_of, out, rewrite, verify  # noqa: F401
from tests.audit.test_store_witness import lose_the_newest_append, witnessed  # noqa: F401 (a fixture)
from tests.audit.test_tamper import resign
from tests.audit.test_tlog import rehash_subtrees
from tests.audit.test_verify import completed, kinds  # noqa: F401 (a fixture)

pytestmark = pytest.mark.django_db


def flag(manifest: Manifest, by: str = "rita", n: int = 0) -> ActivityEvent:
    return activity_records.record(by, "flag_raised", manifest, after={"pages": [1], "n": n})


def test_each_event_is_a_leaf_of_its_signed_body_which_states_the_row(completed):  # noqa: F811
    event = flag(completed.first())
    leaf = LogLeaf.objects.get(activity=event)
    assert leaf.kind == "activity" and leaf.index == LogLeaf.objects.count() - 1
    assert leaf.leaf_hash == merkle.leaf_hash(event.body.encode()).hex()
    body = json.loads(event.body)
    assert (body["kind"], body["actor"], body["action"], body["after"]) == (
        "activity",
        "rita",
        "flag_raised",
        event.after,
    )
    assert (
        signing.signature_problem(event.body.encode(), event.signature, event.key_id, signing.trust(), event.at) is None
    )


def rechain_after(event_pk: int) -> None:
    """An insider recomputes the activity hash chain from `event_pk` on, so the chain alone proves nothing."""
    previous = ActivityEvent.objects.filter(pk__lt=event_pk).order_by("-pk").values_list("sha256", flat=True).first()
    previous = previous or GENESIS
    for event in ActivityEvent.objects.filter(pk__gte=event_pk).order_by("pk"):
        event.previous_sha256 = previous
        previous = hashlib.sha256(event.content()).hexdigest()
        ActivityEvent.objects.filter(pk=event.pk).update(previous_sha256=event.previous_sha256, sha256=previous)


def test_an_event_rewritten_with_its_chain_recomputed_is_found(completed):  # noqa: F811
    middle = [flag(completed.first(), n=n) for n in range(3)][1]
    ActivityEvent.objects.filter(pk=middle.pk).update(actor="someone else")
    rechain_after(middle.pk)
    assert kinds() == ["activity_invalid"]  # the chain holds; the signed body (the leaf) says rita


def test_an_event_rewritten_re_signed_and_re_leafed_breaks_the_signed_checkpoint(completed):  # noqa: F811
    middle = [flag(completed.first(), n=n) for n in range(3)][1]
    log_checkpoints.write_log_checkpoint()
    body = json.loads(middle.body) | {"actor": "someone else"}
    raw = activity_records.canonical_bytes(body)
    ActivityEvent.objects.filter(pk=middle.pk).update(
        actor="someone else", body=raw.decode(), signature=signing.sign(raw), **signing.mldsa_fields(raw)
    )
    rechain_after(middle.pk)
    LogLeaf.objects.filter(activity=middle).update(leaf_hash=merkle.leaf_hash(raw).hex())
    rehash_subtrees()
    assert kinds() == ["log_checkpoint_invalid"]


def test_a_verification_run_records_its_result_in_the_ledger(completed):  # noqa: F811
    Manifest.objects.filter(pk=completed.first().pk).update(body=completed.first().body + " ")
    found = kinds()
    event = ActivityEvent.objects.filter(action="verification_finished").latest("pk")
    assert LogLeaf.objects.filter(activity=event).exists()
    result = json.loads(event.body)["after"]
    assert result["status"] == "failed" and result["findings_count"] == len(found)
    assert sorted(kind for kind, _, _ in result["findings"]) == found
    assert result["findings_sha256"] == hashlib.sha256(activity_records.canonical_bytes(result["findings"])).hexdigest()


def test_a_key_rotation_is_a_ledger_record_naming_the_key_it_retires(completed, settings, tmp_path):  # noqa: F811
    before = signing.current_key_id()
    settings.PAGETRAIL_SIGNING_KEY = base64.b64encode(os.urandom(32)).decode()
    with open(pdfs.jpeg_rgb(tmp_path), "rb") as fh:
        run_job(submit_bundle(fh, filename="y.pdf", submitted_by="t").job_id)
    event = ActivityEvent.objects.get(action="signing_key_published", after__retires=[before])
    body = json.loads(event.body)
    assert body["after"]["key_id"] == signing.current_key_id() and body["key_id"] == signing.current_key_id()
    assert LogLeaf.objects.filter(activity=event).exists()


def test_the_upgrade_signs_and_logs_every_event_recorded_before_the_ledger(completed):  # noqa: F811
    make_chained(completed)  # the manifests of a deployment before the ledger: schemas 1-3, in a hash chain
    flag(completed.first())
    with connection.cursor() as cursor:  # as the database stood before the upgrade
        cursor.execute("DELETE FROM audit_logleaf WHERE kind = 'activity'")
        cursor.execute(
            "UPDATE audit_activityevent SET body = '', signature = '', key_id = '', "
            "mldsa_signature = '', mldsa_key_id = ''"
        )
        cursor.execute("DELETE FROM audit_logsubtree")  # 0023 stores them after 0021
    # the leaves after the removed ones close up, as they had not been appended yet before the upgrade
    for i, leaf in enumerate(LogLeaf.objects.order_by("index")):
        LogLeaf.objects.filter(pk=leaf.pk).update(index=i)
    importlib.import_module("audit.migrations.0021_ledger_activity").sign_and_log_every_event_so_far(apps, None)
    importlib.import_module("audit.migrations.0023_ledger_subtrees").store_the_subtrees_of_every_leaf_so_far(apps, None)
    events = ActivityEvent.objects.order_by("pk")
    leaves = LogLeaf.objects.filter(kind="activity").order_by("index")
    assert [leaf.activity_id for leaf in leaves] == [e.pk for e in events]
    assert all(json.loads(e.body)["recorded_before_ledger"] for e in events)
    assert kinds() == []


def test_a_date_range_carries_its_activity_and_an_event_cut_from_it_leaves_a_gap(chain, out):  # noqa: F811
    cut_one = flag(chain[1], n=1)
    flag(chain[1], n=2)  # so the one cut is inside the range's records, not its last
    package = export(out)
    index = index_of(package)
    flagged = next(e for e in index["activity"] if e["id"] == cut_one.pk)
    assert verify(package).returncode == 0

    def cut(members):
        index = json.loads(members["index.json"])
        index["activity"] = [e for e in index["activity"] if e["id"] != flagged["id"]]
        index["log"]["activity_inclusion"] = [p for p in index["log"]["activity_inclusion"] if p["id"] != flagged["id"]]
        del members[flagged["file"]]
        members["index.json"] = json.dumps(index).encode()
        resign(members)

    leaf = LogLeaf.objects.get(activity_id=flagged["id"]).index
    failed(verify(rewrite(package, cut)), "index.json", f"log leaf {leaf} lies inside the range's records")


def test_an_activity_file_edited_in_a_package_fails(chain, out):  # noqa: F811
    flag(chain[1])
    package = export(out)
    name = next(e["file"] for e in index_of(package)["activity"] if '"flag_raised"' in open_member(package, e["file"]))

    def edit(members):
        members[name] = members[name].replace(b'"rita"', b'"omar"')

    failed(verify(rewrite(package, edit)), name, "bytes do not match the sha256")


def open_member(package, name) -> str:
    import zipfile

    with zipfile.ZipFile(package) as zf:
        return zf.read(name).decode()


def test_activity_while_the_store_is_ahead_is_kept_unlogged_and_named(witnessed):  # noqa: F811
    lose_the_newest_append()
    event = flag(witnessed.first())
    assert event.pk and not LogLeaf.objects.filter(activity=event).exists()  # the action itself is not refused
    assert Alert.objects.filter(kind="ledger_rollback", status=Alert.Status.OPEN).exists()
    assert not SubmissionSwitch.submissions_open()
    assert any(f.name == f"activity event {event.pk}" and f.kind == "log_mismatch" for f in verify_all()[0])


def test_openssl_verifies_an_activity_file_as_docs_evidence_md_shows(chain, out):  # noqa: F811
    import base64 as b64
    import subprocess
    import zipfile

    flag(chain[1])
    package = export(out)
    index = index_of(package)
    entry = index["activity"][-1]
    with zipfile.ZipFile(package) as zf:
        (out / "A.json").write_bytes(zf.read(entry["file"]))
        keys = json.loads(zf.read("keys.json"))["keys"]
    public = b64.b64decode(next(k["public_key"] for k in keys if k["key_id"] == entry["key_id"]))
    (out / "pub.der").write_bytes(bytes.fromhex("302a300506032b6570032100") + public)
    (out / "asig.bin").write_bytes(bytes.fromhex(entry["signature"]))
    run = lambda *args: subprocess.run(["openssl", *args], cwd=out, capture_output=True, text=True)  # noqa: E731
    assert run("pkey", "-pubin", "-inform", "DER", "-in", "pub.der", "-out", "pub.pem").returncode == 0
    done = run("pkeyutl", "-verify", "-pubin", "-inkey", "pub.pem", "-rawin", "-in", "A.json", "-sigfile", "asig.bin")
    assert "Signature Verified Successfully" in done.stdout, done.stdout + done.stderr
