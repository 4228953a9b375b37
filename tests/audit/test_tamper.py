"""The tamper suite: what an insider with database and store access, or whoever holds an exported package,
could change, each expected to be found by the right finding kind (verification) or offline message
(verify_evidence.pyz). The README's tampering table lists them; signatures are tested in test_public_keys.py."""

import base64
import hashlib
import json
from datetime import timedelta

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from django.core.management import call_command
from django.db import connection
from django.utils import timezone

from audit.ledger import activity_records, signing, store_witness
from audit.ledger.signing import key_id_of, public_bytes
from audit.models import ActivityEvent, Asset, Case, LogLeaf, Manifest, PagePreview, RetentionEvent
from audit.retention import enforcement as retention
from audit.retention import events as retention_events
from audit.review import cases
from audit.verification.verify import verify_all
from extraction.models import Bundle
from tests.audit.chained import make_chained, write_chain_checkpoint
from tests.audit.test_cases import manifest  # noqa: F401 (a fixture)
from tests.audit.test_evidence import (  # chain and out are fixtures
    chain,  # noqa: F401
    edit_index,
    export,
    failed,
    index_of,
    out,  # noqa: F401
    rewrite,
    verify,
)
from tests.audit.test_tlog import forget_subtrees_completed_by, rewrite_manifest_row
from tests.audit.test_verify import completed, kinds  # noqa: F401 (a fixture)
from tests.conftest import approved_policy, delete_stored, read_stored, write_stored

pytestmark = pytest.mark.django_db
CHANGED = "changed after export"


# --- a deployment: verification finds each ------------------------------------------------------------


def test_it_finds_one_changed_byte_of_a_stored_input(completed):  # noqa: F811
    bundle = Bundle.objects.first()
    original = bytearray(read_stored("inputs", bundle.input_name))
    original[len(original) // 2] ^= 0x01
    write_stored("inputs", bundle.input_name, bytes(original))
    assert kinds() == ["input_changed"]


def test_it_finds_an_input_deleted_without_a_retention_event(completed):  # noqa: F811
    delete_stored("inputs", Bundle.objects.first().input_name)
    assert kinds() == ["missing_input"]


def test_it_finds_an_input_marked_deleted_without_a_retention_event(completed):  # noqa: F811
    bundle = Bundle.objects.first()
    Bundle.objects.filter(pk=bundle.pk).update(input_deleted_at=bundle.created_at)
    delete_stored("inputs", bundle.input_name)
    assert kinds() == ["missing_input"]


def events(count: int) -> list[ActivityEvent]:
    manifest = Manifest.objects.first()
    return [activity_records.record(f"reviewer{n}", "flag_raised", manifest, after={"n": n}) for n in range(count)]


def test_it_finds_a_rewritten_activity_actor(completed):  # noqa: F811
    middle = events(3)[1]
    ActivityEvent.objects.filter(pk=middle.pk).update(actor="someone else")
    assert kinds() == ["activity_chain_break", "activity_invalid"]  # its hash and its signed body both differ


def test_it_finds_a_deleted_activity_event(completed):  # noqa: F811
    middle = events(3)[1]
    with connection.cursor() as cursor:  # past the model's write-once guard, as an insider would be
        cursor.execute("DELETE FROM audit_logleaf WHERE activity_id = %s", [middle.pk])  # its leaf first (PROTECT)
        cursor.execute(f"DELETE FROM {ActivityEvent._meta.db_table} WHERE id = %s", [middle.pk])
    assert kinds() == ["activity_chain_break", "log_mismatch"]  # the chain breaks and the ledger has a gap


def test_it_finds_the_newest_chain_checkpoint_file_deleted(completed):  # noqa: F811
    make_chained(completed)  # an upgraded deployment's chain checkpoints (schemas 1-3) stay checked
    delete_stored("outputs", write_chain_checkpoint().storage_name)
    assert kinds() == ["checkpoint_missing"]


def delete_newest_manifest_with_its_rows_and_files() -> None:
    newest = Manifest.objects.order_by("-sequence").select_related("job__bundle", "log_leaf").first()
    assert newest.log_leaf.index == LogLeaf.objects.count() - 1  # the ledger's newest record: no gap is left
    job, bundle = newest.job, newest.job.bundle
    for asset in newest.assets.all():
        delete_stored("outputs", asset.name)
    delete_stored("outputs", newest.storage_name)
    delete_stored("inputs", bundle.input_name)
    with connection.cursor() as cursor:
        for table, column, value in (
            ("audit_placement", "manifest_id", newest.pk),
            ("audit_previewrequest", "manifest_id", newest.pk),
            ("audit_pagehint", "manifest_id", newest.pk),
            ("audit_hintrun", "manifest_id", newest.pk),
            ("audit_logleaf", "manifest_id", newest.pk),  # and its log leaf, which no signed checkpoint holds yet
            ("audit_asset", "manifest_id", newest.pk),
            ("audit_manifest", "id", newest.pk),
            ("extraction_attempt", "job_id", job.pk),
            ("extraction_intake_submission", "job_id", job.pk),
            ("extraction_job", "id", job.pk),
            ("extraction_bundle", "id", bundle.pk),
        ):
            cursor.execute(f"DELETE FROM {table} WHERE {column} = %s", [value])
    forget_subtrees_completed_by(newest.log_leaf.index)


def test_it_finds_the_newest_manifest_deleted_with_its_rows_and_files(completed):  # noqa: F811
    for leaf in LogLeaf.objects.select_related(*LogLeaf.RECORDS):  # as each commit left them (on_commit)
        store_witness.write_marker(leaf)
    delete_newest_manifest_with_its_rows_and_files()
    assert kinds() == ["ledger_rollback"]  # the output store's marker of that position outlives the rows


def test_it_finds_the_newest_manifest_of_a_chain_of_schemas_before_4_deleted(completed):  # noqa: F811
    make_chained(completed)
    delete_newest_manifest_with_its_rows_and_files()
    assert kinds() == ["chain_truncated"]  # the frozen chain's head names it


def test_it_finds_a_stray_file_among_a_manifests_previews(completed):  # noqa: F811
    prefix = Manifest.objects.first().storage_name.rsplit("/", 1)[0]
    write_stored("outputs", f"{prefix}/previews/payload.html", b"<script>alert(1)</script>")
    assert kinds() == ["unexpected_output"]


def test_it_finds_a_preview_named_file_for_a_page_the_bundle_lacks(completed):  # noqa: F811
    prefix = Manifest.objects.first().storage_name.rsplit("/", 1)[0]
    write_stored("outputs", f"{prefix}/previews/p00999-w200.png", b"\x89PNG")
    assert kinds() == ["unexpected_output"]


def test_it_finds_a_stray_file_in_the_input_store(completed):  # noqa: F811
    write_stored("inputs", "ab/planted.pdf", b"%PDF-1.7 not a bundle's")
    assert kinds() == ["unexpected_input"]


def test_it_finds_an_altered_chain_checkpoint_file(completed):  # noqa: F811
    make_chained(completed)
    name = write_chain_checkpoint().storage_name
    document = json.loads(read_stored("outputs", name))
    document["checkpoint"]["created_at"] = "2020-01-01T00:00:00.000000Z"
    write_stored("outputs", name, json.dumps(document).encode())
    assert kinds() == ["checkpoint_mismatch"]


def test_it_finds_a_changed_page_preview(completed):  # noqa: F811
    manifest = Manifest.objects.first()
    preview = PagePreview.objects.create(
        manifest=manifest,
        page=1,
        max_width=200,
        content_type="image/png",
        storage_name=manifest.storage_name.rsplit("/", 1)[0] + "/previews/p00001-w200.png",
        sha256=hashlib.sha256(b"\x89PNG preview").hexdigest(),
        size=13,
        width=1,
        height=1,
    )
    write_stored("outputs", preview.storage_name, b"\x89PNG preview")
    assert "hash_mismatch" not in kinds()
    write_stored("outputs", preview.storage_name, b"\x89PNG changed")
    assert "hash_mismatch" in kinds()


def made_up_deletion(bundle, **fields) -> RetentionEvent:
    """A retention event row inserted by hand, as an insider with database access would."""
    policy = approved_policy(is_default=True, contract_owner="Claims Ltd", decision_note="x")
    return RetentionEvent.objects.create(
        bundle=bundle,
        policy=policy,
        what="input",
        outcome="deleted",
        files=1,
        bytes_freed=bundle.size,
        at=bundle.created_at,
        **fields,
    )


def test_it_finds_an_input_deleted_and_explained_by_a_made_up_retention_event(completed):  # noqa: F811
    bundle = Bundle.objects.first()
    delete_stored("inputs", bundle.input_name)
    made_up_deletion(bundle)
    assert kinds() == ["log_mismatch", "missing_input", "retention_event_invalid"]  # and the ledger lacks it


def test_it_finds_an_edited_retention_event(completed):  # noqa: F811
    approved_policy(is_default=True, input_days=1, contract_owner="Claims Ltd", decision_note="x")
    retention.apply_retention(at=timezone.now() + timedelta(days=2))
    assert kinds() == []
    event = RetentionEvent.objects.get(what="input", bundle=Bundle.objects.first())
    RetentionEvent.objects.filter(pk=event.pk).update(bytes_freed=1)
    assert kinds() == ["missing_input", "retention_event_invalid"]  # and it no longer excuses the deleted input


def test_it_finds_assets_hidden_behind_a_signed_event_of_another_manifest(completed):  # noqa: F811
    first, second = Manifest.objects.order_by("sequence")[:2]
    approved_policy(is_default=True, output_days=1, contract_owner="Claims Ltd", decision_note="x")
    retention.apply_retention(at=timezone.now() + timedelta(days=2))
    event = RetentionEvent.objects.filter(what="outputs", manifest=first).get()
    RetentionEvent.objects.filter(pk=event.pk).update(manifest=second)  # now "explains" the second's assets
    assert "retention_event_invalid" in kinds()


def flip_middle_byte(alias, name):
    data = bytearray(read_stored(alias, name))
    data[len(data) // 2] ^= 0x01
    write_stored(alias, name, bytes(data))


def swap_sequences():
    first, second = Manifest.objects.order_by("sequence")[:2]
    with connection.cursor() as cursor:  # past the unique constraint: through a free number
        for old, new in ((first.sequence, 10**9), (second.sequence, first.sequence), (10**9, second.sequence)):
            cursor.execute(f"UPDATE {Manifest._meta.db_table} SET sequence = %s WHERE sequence = %s", [new, old])


def nth_manifest(n: int):
    return Manifest.objects.filter(pk=Manifest.objects.order_by("sequence")[n].pk)


def swap_chained_sequences():
    make_chained(Manifest.objects.all())
    swap_sequences()


# The tamperings verification caught before the table above; the detailed tests are in test_verify.py.
ALREADY_CAUGHT = {
    "an asset's byte flipped": (lambda: flip_middle_byte("outputs", Asset.objects.first().name), "hash_mismatch"),
    "an asset deleted": (lambda: delete_stored("outputs", Asset.objects.first().name), "missing_output"),
    "a stray output file": (lambda: write_stored("outputs", "stray.bin", b"x"), "unexpected_output"),
    "a manifest row's hash edited": (lambda: nth_manifest(1).update(sha256="0" * 64), "manifest_changed"),
    "a manifest row's body edited": (lambda: nth_manifest(0).update(body="{}"), "manifest_changed"),
    "two manifests' sequences swapped": (swap_sequences, "position_mismatch"),
    "two manifests' sequences swapped in a chain of schemas before 4": (swap_chained_sequences, "chain_break"),
}


@pytest.mark.parametrize("tampering", ALREADY_CAUGHT)
def test_it_still_finds_what_it_found_before(completed, tampering):  # noqa: F811
    tamper, kind = ALREADY_CAUGHT[tampering]
    tamper()
    assert kind in kinds()


def test_it_fails_a_package_whose_asset_byte_was_flipped_or_signature_zeroed(chain, out):  # noqa: F811
    package = export(out)
    index = index_of(package)
    asset, manifest = next(a["file"] for a in index["assets"] if a["file"]), index["manifests"][0]

    def flip(members):
        data = bytearray(members[asset])
        data[len(data) // 2] ^= 0x01
        members[asset] = bytes(data)

    failed(verify(rewrite(package, flip)), asset, "bytes hash to")

    def zero(entry_index):
        entry_index["manifests"][0]["signature"] = "00" * 64

    failed(
        verify(rewrite(package, lambda members: (edit_index(zero)(members), resign(members)))),
        manifest["file"],
        "Ed25519 signature does not verify",
    )


# --- exported packages: the offline verifier fails each ------------------------------------------------


def test_it_fails_an_asset_removed_and_explained_by_a_made_up_retention_event(chain, out):  # noqa: F811
    package = export(out)
    gone = next(a for a in index_of(package)["assets"] if a["file"])

    def strip(members):
        del members[gone["file"]]
        index = json.loads(members["index.json"])
        entry = next(a for a in index["assets"] if a["name"] == gone["name"])
        entry.update(file=None, omitted="deleted_by_retention")
        index["retention_events"].append(
            {
                "manifest": gone["manifest_sequence"],
                "what": "outputs",
                "outcome": "deleted",
                "at": "2026-11-30T00:00:00Z",
            }
        )
        members["index.json"] = json.dumps(index).encode()

    failed(verify(rewrite(package, strip)), "index.json", CHANGED)


def test_it_fails_a_package_whose_assets_were_all_removed_and_declared_not_requested(chain, out):  # noqa: F811
    package = export(out)

    def strip(members):
        for name in [n for n in members if n.startswith("assets/")]:
            del members[name]
        index = json.loads(members["index.json"])
        index["includes_assets"] = False
        for entry in index["assets"]:
            entry.update(file=None, omitted="not_exported")
        members["index.json"] = json.dumps(index).encode()

    failed(verify(rewrite(package, strip)), "index.json", CHANGED)


def test_it_fails_a_date_range_package_with_its_newest_manifest_dropped(chain, out):  # noqa: F811
    package = export(out)

    failed(verify(rewrite(package, drop_manifest)), "index.json", CHANGED)


def test_it_fails_a_package_whose_index_signature_was_removed(chain, out):  # noqa: F811
    def unsign(members):
        del members["index.sig.json"]

    failed(verify(rewrite(export(out), unsign)), "index.json", "is not signed")


def test_it_fails_a_date_range_index_that_leaves_out_a_manifest_of_its_range(chain, out):  # noqa: F811
    def leave_out(index):
        index["manifests"].pop(1)

    left_out = chain[1].log_leaf.index
    failed(
        verify(rewrite(export(out), edit_index(leave_out))),
        "index.json",
        f"log leaf {left_out} lies inside the range's records",
    )


def test_it_fails_a_case_package_missing_an_asset_its_signed_case_map_names(manifest, tmp_path):  # noqa: F811
    cases.split(manifest, [("claim A", 1, 60)], "rita")
    package = tmp_path / "case.zip"
    call_command("export_evidence", "--out", package, "--case", Case.objects.get().pk, "--with-assets")
    taken = next(a for a in index_of(package)["assets"] if a["file"])

    def relabel(members):
        del members[taken["file"]]
        index = json.loads(members["index.json"])
        next(a for a in index["assets"] if a["name"] == taken["name"]).update(file=None, omitted="outside_case")
        members["index.json"] = json.dumps(index).encode()

    problems = failed(verify(rewrite(package, relabel)), "cases/case-map-", taken["name"], "does not hold")
    assert any(CHANGED in line for line in problems)


def test_it_finds_an_asset_deleted_beside_a_signed_event_that_does_not_name_it(completed):  # noqa: F811
    manifest = Manifest.objects.order_by("sequence").first()
    kept, taken = list(manifest.assets.order_by("name"))[:2]
    policy = approved_policy(is_default=True, contract_owner="Claims Ltd", decision_note="x")
    at = timezone.now()
    retention_events.record(  # as retention records a deletion: signed, and in the ledger
        bundle=manifest.job.bundle,
        manifest=manifest,
        policy=policy,
        what="outputs",
        outcome="deleted",
        files=1,
        bytes_freed=kept.size,
        at=at,
        **retention_events.signed_fields(
            manifest.job.bundle, manifest, policy, "outputs", "deleted", [(kept.name, kept.size)], at
        ),
    )
    delete_stored("outputs", kept.name)
    delete_stored("outputs", taken.name)
    found = verify_all()[0]
    assert [(f.kind, f.name) for f in found] == [("missing_output", taken.name)]


# --- packages re-signed after tampering: with the portal's key, or with a key the auditor does not pin ----

INSIDER = Ed25519PrivateKey.generate()


def insider_key_entry(key) -> dict:
    public = public_bytes(key.public_key())
    return {
        "key_id": key_id_of(public),
        "algorithm": "ed25519",
        "public_key": base64.b64encode(public).decode(),
        "valid_from": "2000-01-01T00:00:00Z",
        "valid_until": None,
    }


def resign(members: dict, key=None) -> None:
    """Sign index.json again after a change: with the portal's key (whoever holds it re-signs consistently),
    or with `key`, an insider's, which keys.json then carries beside the portal's."""
    index = json.loads(members["index.json"])
    if key is not None:
        keys = json.loads(members["keys.json"])
        keys["keys"].append(insider_key_entry(key))
        members["keys.json"] = json.dumps(keys).encode()
    index["keys"]["sha256"] = hashlib.sha256(members["keys.json"]).hexdigest()
    members["index.json"] = data = json.dumps(index).encode()
    signer = key or signing.private_key()
    members["index.sig.json"] = json.dumps(
        {"key_id": key_id_of(public_bytes(signer.public_key())), "signature": signer.sign(data).hex()}
    ).encode()


def explained_by_a_made_up_event(package, key=None, carry_key=True):
    gone = next(a for a in index_of(package)["assets"] if a["file"])

    def strip(members):
        del members[gone["file"]]
        index = json.loads(members["index.json"])
        next(a for a in index["assets"] if a["name"] == gone["name"]).update(file=None, omitted="deleted_by_retention")
        event = {
            "id": 999,
            "bundle": index["manifests"][0]["correlation_id"],
            "manifest": gone["manifest_sequence"],
            "what": "outputs",
            "outcome": "deleted",
            "files": 1,
            "bytes_freed": gone["size"],
            "at": "2026-11-30T12:00:00Z",  # the export's own time: inside the portal key's published period
            "body": "",
        }
        if key is not None:  # signed with the insider's key, naming the asset
            body = json.dumps(
                {
                    "bundle": event["bundle"],
                    "manifest_sequence": event["manifest"],
                    "what": "outputs",
                    "outcome": "deleted",
                    "files": [gone["name"]],
                    "file_count": 1,
                    "bytes_freed": gone["size"],
                    "at": event["at"],
                    "signed_at": event["at"],
                }
            )
            event.update(body=body, signature=key.sign(body.encode()).hex(), key_id=insider_key_entry(key)["key_id"])
        index["retention_events"].append(event)
        members["index.json"] = json.dumps(index).encode()
        resign(members, key if carry_key else None)

    return rewrite(package, strip), gone


def test_a_made_up_retention_event_fails_even_in_an_index_re_signed_with_the_portals_key(chain, out):  # noqa: F811
    tampered, gone = explained_by_a_made_up_event(export(out))
    done = verify(tampered)
    failed(done, "retention event 999", "is not signed")
    failed(done, gone["name"], "no signed retention event in the package names")


def test_a_made_up_retention_event_signed_with_the_portals_own_key_is_not_in_the_ledger(chain, out):  # noqa: F811
    """The insider holds the signing key: the event and the index verify, but no proof puts it in the ledger."""
    tampered, gone = explained_by_a_made_up_event(export(out), signing.private_key(), carry_key=False)
    done = verify(tampered)
    failed(done, "retention event 999", "is not in the ledger")
    failed(done, gone["name"], "no signed retention event in the package names")
    assert "signature does not verify" not in done.stdout  # every signature is the portal's own,
    assert "outside the validity period" not in done.stdout  # made inside its key's period


def test_a_package_re_signed_throughout_with_an_insiders_key_fails_against_the_pinned_keys(chain, out):  # noqa: F811
    tampered, _ = explained_by_a_made_up_event(export(out), INSIDER)
    failed(verify(tampered), "keys.json", "is not in the published key list")
    unpinned = verify(tampered, pin=False)  # only the package's own keys: it says so and does not pass
    assert unpinned.returncode == 1 and "WARNING: no --public-keys given" in unpinned.stdout, unpinned.stdout
    assert "retention event 999: is not in the ledger" in unpinned.stdout  # no key makes a proof for it
    assert "PASS" not in unpinned.stdout.splitlines()


def test_an_untouched_package_checked_without_pinned_keys_says_where_trust_rests(chain, out):  # noqa: F811
    package = export(out)
    done = verify(package, pin=False)
    assert done.returncode == 3 and done.stdout.splitlines()[-1].startswith("UNPINNED"), done.stdout
    accepted = verify(package, "--trust-package-keys")
    assert accepted.returncode == 0 and accepted.stdout.splitlines()[-1] == "PASS", accepted.stdout
    assert "trust rests on the package itself" in accepted.stdout


def test_it_fails_a_keys_json_edited_after_export(chain, out):  # noqa: F811
    def widen(members):
        keys = json.loads(members["keys.json"])
        keys["keys"][0]["valid_until"] = None
        keys["keys"][0]["valid_from"] = "2000-01-01T00:00:00Z"
        members["keys.json"] = json.dumps(keys).encode()

    failed(verify(rewrite(export(out), widen), "--trust-package-keys"), "keys.json", "is not the key list the index")


def test_it_fails_a_signature_dated_outside_its_keys_published_validity(chain, out):  # noqa: F811
    package = export(out)
    keys = signing.published_document()
    keys["keys"][0]["valid_until"] = "2026-11-29T00:00:00Z"  # retired, as the auditor's list says, before the export
    (out / "signing-keys.json").write_text(json.dumps(keys))
    failed(
        verify(package, "--public-keys", str(out / "signing-keys.json")),
        "manifests/",
        "outside the validity period of key",
    )


def drop_manifest(members, position=-1):
    """The tamperer's cut: a manifest, its assets and its inclusion proof out of a package's members."""
    index = json.loads(members["index.json"])
    dropped = index["manifests"].pop(position)
    del members[dropped["file"]]
    for asset in [a for a in index["assets"] if a["manifest_sequence"] == dropped["sequence"]]:
        index["assets"].remove(asset)
        members.pop(asset["file"], None)
    index["log"]["inclusion"] = [p for p in index["log"]["inclusion"] if p["sequence"] != dropped["sequence"]]
    members["index.json"] = json.dumps(index).encode()


def dropped(package, key=None, position=-1):
    def drop(members):
        drop_manifest(members, position)
        resign(members, key)

    return rewrite(package, drop)


def test_a_date_range_package_trimmed_and_re_signed_with_the_portals_key_leaves_a_covered_leaf(chain, out):  # noqa: F811
    failed(
        verify(dropped(export(out))),
        "index.json",
        f"the log checkpoint holds leaf {chain[2].log_leaf.index}, after the package's last record",
        "records of the range are missing",
    )


def test_a_date_range_package_with_a_record_cut_from_its_middle_has_a_gap(chain, out):  # noqa: F811
    cut = chain[1].log_leaf.index
    failed(verify(dropped(export(out), position=1)), "index.json", f"log leaf {cut} lies inside the range's records")


def test_a_date_range_package_trimmed_and_re_signed_with_an_insiders_key_fails_pinned(chain, out):  # noqa: F811
    failed(verify(dropped(export(out), INSIDER)), "keys.json", "is not in the published key list")


def test_a_boundary_record_inside_the_range_does_not_close_it(chain, out):  # noqa: F811
    """The newest record of the range passed off as the boundary after it: its own signed time is in the range."""
    package = export(out, date_from=chain[0].created_at, date_to=chain[2].created_at)
    newest, after = (chain[n].log_leaf.index for n in (1, 2))

    def relabel(members):
        index = json.loads(members["index.json"])
        newest = index["manifests"].pop()
        index["assets"] = [a for a in index["assets"] if a["manifest_sequence"] != newest["sequence"]]
        proof = next(p for p in index["log"]["inclusion"] if p["sequence"] == newest["sequence"])
        index["log"]["inclusion"].remove(proof)
        index["log"]["boundaries"] = [b for b in index["log"]["boundaries"] if b["leaf_index"] != after]
        index["log"]["boundaries"].append({**proof, "file": newest["file"]})
        members["index.json"] = json.dumps(index).encode()
        for name in [n for n in members if n.startswith("assets/")]:
            if name[len("assets/") :] not in {a["name"] for a in index["assets"]}:
                del members[name]
        resign(members)

    failed(verify(rewrite(package, relabel)), "index.json", f"the log checkpoint holds leaf {newest}")


def test_it_fails_a_package_log_checkpoint_whose_signed_text_was_altered(chain, out):  # noqa: F811
    def alter(index):
        lines = index["log"]["checkpoint"].split("\n")
        lines[1] = str(int(lines[1]) + 1)
        index["log"]["checkpoint"] = "\n".join(lines)

    tampered = rewrite(export(out), lambda members: (edit_index(alter)(members), resign(members)))
    failed(verify(tampered), "index.json: log checkpoint", "no signature on the checkpoint verifies")


def test_evidence_whose_manifest_files_and_outputs_retention_deleted_still_verifies(chain, out):  # noqa: F811
    approved_policy(is_default=True, output_days=1, manifest_days=1, contract_owner="Claims Ltd", decision_note="x")
    retention.apply_retention(at=timezone.now() + timedelta(days=2))
    assert verify_all()[0] == []
    done = verify(export(out))
    assert done.returncode == 0 and done.stdout.splitlines()[-1] == "PASS", done.stdout
    assert "file(s) deleted under retention" in done.stdout


def test_a_made_up_retention_event_under_an_hmac_key_id_is_not_left_unchecked(chain, out):  # noqa: F811
    package = export(out)
    gone = next(a for a in index_of(package)["assets"] if a["file"])

    def strip(members):
        del members[gone["file"]]
        index = json.loads(members["index.json"])
        next(a for a in index["assets"] if a["name"] == gone["name"]).update(file=None, omitted="deleted_by_retention")
        body = {
            "manifest_sequence": gone["manifest_sequence"],
            "what": "outputs",
            "outcome": "deleted",
            "files": [gone["name"]],
            "file_count": 1,
            "bytes_freed": gone["size"],
            "at": None,
            "bundle": None,
        }
        index["retention_events"].append(
            {
                "id": 998,
                "manifest": gone["manifest_sequence"],
                "what": "outputs",
                "outcome": "deleted",
                "files": 1,
                "bytes_freed": gone["size"],
                "at": None,
                "bundle": None,
                "body": json.dumps(body),
                "signature": "00" * 32,
                "key_id": "local-1",
            }
        )
        members["index.json"] = json.dumps(index).encode()
        resign(members)

    done = verify(rewrite(package, strip))
    failed(done, "retention event 998", "must be signed with an Ed25519 key")
    failed(done, gone["name"], "no signed retention event in the package names")


def test_rows_edited_into_non_ascii_are_findings_not_a_crash(completed):  # noqa: F811
    approved_policy(is_default=True, input_days=1, contract_owner="Claims Ltd", decision_note="x")
    retention.apply_retention(at=timezone.now() + timedelta(days=2))
    RetentionEvent.objects.filter(what="input").update(body='{"signed_at": "2026-12-01T00:00:00Z", "\u00e9": 1}')
    nth_manifest(0).update(body="{\u00e9}")
    assert {"manifest_changed", "retention_event_invalid"} <= set(kinds())


def test_a_package_whose_own_findings_say_failed_never_passes(chain, out):  # noqa: F811
    """Manifests exported, without assets, after a run found their outputs changed and missing."""
    changed, gone = Asset.objects.filter(manifest=Manifest.objects.order_by("sequence").first())[:2]
    write_stored("outputs", changed.name, read_stored("outputs", changed.name) + b"\0")
    delete_stored("outputs", gone.name)
    verify_all()
    done = verify(export(out, include_assets=False, manifest=chain[0].sequence))
    assert done.returncode == 4 and done.stdout.splitlines()[-3].startswith("FINDINGS (2)"), done.stdout
    assert f"hash_mismatch: {changed.name}" in done.stdout and f"missing_output: {gone.name}" in done.stdout
    assert "PASS" not in done.stdout


def test_a_retention_event_cut_from_a_date_range_leaves_its_leaf_unaccounted(chain, out):  # noqa: F811
    """Retention events are records of the range they were signed in: the package holds each, proven."""
    approved_policy(is_default=True, input_days=1, contract_owner="Claims Ltd", decision_note="x")
    retention.apply_retention(at=timezone.now() + timedelta(days=2))
    package, size = export(out), LogLeaf.objects.count()
    assert len(index_of(package)["retention_events"]) == 3
    done = verify(package)
    # every record of the ledger is of the range: 3 manifests, 3 retention events, and the activity around them
    assert done.returncode == 0 and f"{size} log inclusion proof(s)" in done.stdout, done.stdout
    taken = RetentionEvent.objects.get(pk=index_of(package)["retention_events"][1]["id"]).log_leaf.index

    def cut(members):
        index = json.loads(members["index.json"])
        event = index["retention_events"].pop(1)
        index["log"]["retention_inclusion"] = [p for p in index["log"]["retention_inclusion"] if p["id"] != event["id"]]
        members["index.json"] = json.dumps(index).encode()
        resign(members)

    failed(verify(rewrite(package, cut)), "index.json", f"log leaf {taken} lies inside the range's records")


def test_a_case_map_made_up_and_signed_with_the_portals_own_key_is_not_in_the_ledger(manifest, tmp_path):  # noqa: F811
    """The insider narrows a case to fewer pages with a new map, signed and re-signed with the real key."""
    cases.split(manifest, [("claim A", 1, 60)], "rita")
    package = tmp_path / "case.zip"
    call_command("export_evidence", "--out", package, "--case", Case.objects.get().pk, "--with-assets")
    assert verify(package).returncode == 0

    def narrow(members):
        index = json.loads(members["index.json"])
        entry = index["case_map"]
        body = json.loads(members[entry["file"]])
        body["cases"][0]["pages"] = [1, 1]
        data = json.dumps(body, sort_keys=True, separators=(",", ":")).encode()
        del members[entry["file"]]
        entry.update(
            sha256=hashlib.sha256(data).hexdigest(),
            file=f"cases/case-map-{hashlib.sha256(data).hexdigest()}.json",
            signature=signing.private_key().sign(data).hex(),
            **signing.mldsa_fields(data),
        )
        members[entry["file"]] = data
        members["index.json"] = json.dumps(index).encode()
        resign(members)

    done = verify(rewrite(package, narrow))
    failed(done, "cases/case-map-", "is not in the ledger")
    assert "signature does not verify" not in done.stdout


def test_a_case_map_made_within_a_date_range_travels_in_it_and_cannot_be_cut(chain, out):  # noqa: F811
    cases.split(chain[1], [("claim A", 1, 1)], "rita")
    package = export(out)
    index = index_of(package)
    assert [m["sha256"] for m in index["case_maps"]] == [Case.objects.get().case_map.sha256]
    assert verify(package).returncode == 0

    def cut(members):
        index = json.loads(members["index.json"])
        del members[index.pop("case_maps")[0]["file"]]
        index["log"]["case_map_inclusion"] = []
        members["index.json"] = json.dumps(index).encode()
        resign(members)

    # the split's own activity event follows the map in the ledger: the cut leaves a gap
    cut_leaf = Case.objects.get().case_map.log_leaf.index
    failed(verify(rewrite(package, cut)), "index.json", f"log leaf {cut_leaf} lies inside the range's records")


def test_a_manifest_re_signed_under_another_sequence_than_its_leaf_fails_online_and_offline(chain, out):  # noqa: F811
    """An insider with the key gives a manifest another place (its row and its signed body agree): the leaf it is
    in the ledger still says where it stands."""
    moved, leaf = chain[1], chain[1].log_leaf.index
    claimed = chain[2].sequence + 100
    rewrite_manifest_row(moved, sequence=claimed)
    Manifest.objects.filter(pk=moved.pk).update(sequence=claimed)
    moved.refresh_from_db()
    write_stored("outputs", moved.storage_name, moved.body.encode())
    assert kinds() == ["position_mismatch"]
    done = verify(export(out))
    assert done.returncode == 1, done.stdout
    assert f"the manifest says sequence {claimed}, but it is leaf {leaf} of the log" in done.stdout
