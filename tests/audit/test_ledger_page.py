"""The ledger's page in the portal: Compliance staff read the signed checkpoints, download any manifest's inclusion
proof (the API's answer) and are told how to check both outside the portal; other roles are refused."""

import base64
import json

import pytest
from django.contrib.auth.models import Group, User
from django.urls import reverse

from audit.ledger import checkpoints as log_checkpoints
from audit.ledger import signing
from audit.models import LogCheckpoint, Manifest
from audit.verifier import merkle, notes
from tests.audit.test_verify import completed  # noqa: F401 (a fixture)

pytestmark = pytest.mark.django_db


def staff(client, role: str):
    user = User.objects.create_user(role.replace(" ", "-").lower(), password="x", is_staff=True)
    user.groups.add(Group.objects.get(name=role))
    client.force_login(user)
    return client


def test_compliance_staff_read_a_checkpoint_and_how_to_check_it_outside(client, completed):  # noqa: F811
    checkpoint = log_checkpoints.write_log_checkpoint()
    staff(client, "Compliance staff")
    listing = client.get(reverse("admin:audit_logcheckpoint_changelist")).content.decode()
    assert f">{checkpoint.tree_size}<" in listing
    page = client.get(reverse("admin:audit_logcheckpoint_change", args=[checkpoint.pk])).content.decode()
    assert checkpoint.note.splitlines()[0] in page  # the origin line of the signed note
    assert "none (no TSA configured" in page
    assert "/api/v1/log/checkpoint" in page and "manage.py witness" in page and "verify_evidence.pyz" in page


def test_a_downloaded_inclusion_proof_verifies_against_the_signed_checkpoint(client, completed):  # noqa: F811
    checkpoint = log_checkpoints.write_log_checkpoint()
    manifest = Manifest.objects.order_by("sequence")[1]
    staff(client, "Compliance staff")
    url = reverse("admin:audit_logcheckpoint_inclusion", args=[checkpoint.pk])
    response = client.get(url, {"sequence": manifest.sequence})
    assert response.status_code == 200 and "attachment" in response["Content-Disposition"]
    answer = json.loads(response.content)
    signed = notes.open_checkpoint(answer["checkpoint"], list(signing.configured_keys().values()))
    proof = [base64.b64decode(h) for h in answer["proof"]]
    leaf = merkle.leaf_hash(manifest.body.encode())
    assert answer["manifest"] == manifest.pk
    assert merkle.verify_inclusion(leaf, answer["leaf_index"], signed.size, proof, signed.root)


@pytest.mark.parametrize("sequence, status, code", [("999999", 404, "not_found"), ("x", 404, "not_found")])
def test_an_unknown_manifest_is_refused_in_words(client, completed, sequence, status, code):  # noqa: F811
    checkpoint = log_checkpoints.write_log_checkpoint()
    staff(client, "Compliance staff")
    response = client.get(reverse("admin:audit_logcheckpoint_inclusion", args=[checkpoint.pk]), {"sequence": sequence})
    assert response.status_code == status and response.json()["error"]["code"] == code


def test_a_checkpoint_older_than_the_manifest_says_so(client, completed):  # noqa: F811
    from django.utils import timezone

    from audit.ledger import tlog

    newest = Manifest.objects.order_by("sequence").last()
    before = newest.log_leaf.index
    log_checkpoints._signed(before, merkle.root(tlog.leaf_hashes(before)), timezone.now())
    staff(client, "Compliance staff")
    url = reverse("admin:audit_logcheckpoint_inclusion", args=[LogCheckpoint.objects.get().pk])
    response = client.get(url, {"sequence": newest.sequence})
    assert response.status_code == 409 and response.json()["error"]["code"] == "not_checkpointed"


@pytest.mark.parametrize("role", ["Submitter", "Retention approver"])
def test_other_roles_do_not_see_the_ledger(client, completed, role):  # noqa: F811
    checkpoint = log_checkpoints.write_log_checkpoint()
    staff(client, role)
    assert client.get(reverse("admin:audit_logcheckpoint_changelist")).status_code == 403
    url = reverse("admin:audit_logcheckpoint_inclusion", args=[checkpoint.pk])
    assert client.get(url, {"sequence": Manifest.objects.first().sequence}).status_code == 403
