"""Evidence an outsider checks with a public key: the published key list and the offline verifier."""

import base64
import json
import subprocess
import sys
import zipfile

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from django.test import Client

from audit.ledger import signing
from audit.ledger.signing import key_id_of, public_bytes
from audit.models import Manifest, SigningKey
from tests.audit.test_evidence import activity_carried, chain, export, failed, out, rewrite, verify  # noqa: F401 (fixtures)

pytestmark = pytest.mark.django_db


def published() -> dict:
    response = Client().get("/signing-keys.json")  # no login: public keys are public
    assert response.status_code == 200 and response["Content-Type"] == "application/json"
    return response.json()


def test_it_publishes_both_keys_that_signed_the_manifests(chain):  # noqa: F811
    keys = {k["algorithm"]: k for k in published()["keys"]}
    manifest = chain.first()
    assert keys["ed25519"]["key_id"] == manifest.key_id and keys["ml-dsa-44"]["key_id"] == manifest.mldsa_key_id
    for key in keys.values():
        public = base64.b64decode(key["public_key"])
        assert key_id_of(public) == key["key_id"] and key["valid_until"] is None and key["valid_from"]
    assert len(base64.b64decode(keys["ml-dsa-44"]["public_key"])) == 1312


def test_it_passes_a_package_checked_against_the_published_key_list(chain, out):  # noqa: F811
    package = export(out)  # exported as of yesterday: the period the portal then publishes covers it
    (out / "signing-keys.json").write_text(json.dumps(published()))
    done = verify(package, "--public-keys", str(out / "signing-keys.json"))
    signatures = 3 + activity_carried(package) + 1  # 3 manifests, the activity events and the index
    assert done.returncode == 0 and f" {signatures} signature(s)" in done.stdout, done.stdout


def resigned_by_an_insider(members: dict) -> None:
    """Every manifest re-signed with the insider's own key, which the package's keys.json now carries."""
    insider = Ed25519PrivateKey.generate()
    public = public_bytes(insider.public_key())
    key_id = key_id_of(public)
    index = json.loads(members["index.json"])
    for entry in index["manifests"]:
        entry["signature"], entry["key_id"] = insider.sign(members[entry["file"]]).hex(), key_id
    members["index.json"] = json.dumps(index).encode()
    members["keys.json"] = json.dumps(
        {"keys": [{"key_id": key_id, "public_key": base64.b64encode(public).decode(), "algorithm": "ed25519"}]}
    ).encode()


def test_it_fails_a_package_re_signed_with_another_key_when_given_the_published_keys(chain, out):  # noqa: F811
    (out / "signing-keys.json").write_text(json.dumps(published()))
    package = rewrite(export(out), resigned_by_an_insider)
    failed(
        verify(package, "--public-keys", str(out / "signing-keys.json")),
        "keys.json",
        "is not in the published key list",
    )


def test_it_refuses_a_public_key_filed_under_another_keys_id(chain, out):  # noqa: F811
    def swap(members):
        keys = json.loads(members["keys.json"])
        keys["keys"][0]["public_key"] = base64.b64encode(bytes(32)).decode()
        members["keys.json"] = json.dumps(keys).encode()

    failed(verify(rewrite(export(out), swap)), "keys.json", "is not the public key its id names")


def test_it_says_what_to_install_when_cryptography_is_missing(chain, out):  # noqa: F811
    package = export(out)
    script = out / "verify_evidence.pyz"
    with zipfile.ZipFile(package) as zf:
        script.write_bytes(zf.read("verify_evidence.pyz"))
    without = (
        "import runpy, sys; sys.modules['cryptography'] = None; "
        f"sys.argv = ['verify_evidence.pyz', {str(package)!r}]; runpy.run_path({str(script)!r}, run_name='__main__')"
    )
    done = subprocess.run([sys.executable, "-I", "-c", without], capture_output=True, text=True, timeout=60)
    failed(done, "Ed25519 signatures need the cryptography package: pip install cryptography")


def test_the_signature_column_holds_an_ed25519_signature(chain):  # noqa: F811
    manifest = Manifest.objects.first()
    assert len(bytes.fromhex(manifest.signature)) == 64 and SigningKey.objects.filter(key_id=manifest.key_id).exists()


def test_the_verifier_runs_without_django_or_pagetrail(chain, out):  # noqa: F811
    package = export(out)
    script = out / "verify_evidence.pyz"
    with zipfile.ZipFile(package) as zf:
        script.write_bytes(zf.read("verify_evidence.pyz"))
    without = (
        "import runpy, sys; sys.modules.update(django=None, audit=None, extraction=None, portal=None); "
        f"sys.argv = ['verify_evidence.pyz', {str(package)!r}, '--trust-package-keys']; "
        f"runpy.run_path({str(script)!r}, run_name='__main__')"
    )
    done = subprocess.run([sys.executable, "-I", "-c", without], capture_output=True, text=True, timeout=60, cwd=out)
    assert done.returncode == 0 and done.stdout.splitlines()[-1] == "PASS", done.stdout + done.stderr


def test_it_does_not_publish_a_key_row_the_configuration_does_not_hold(chain):  # noqa: F811
    public = public_bytes(Ed25519PrivateKey.generate().public_key())
    SigningKey.objects.create(key_id=key_id_of(public), public_key=base64.b64encode(public).decode())
    assert {k["key_id"] for k in published()["keys"]} == {chain.first().key_id, chain.first().mldsa_key_id}


def test_the_signing_key_is_published_from_the_first_start(client):
    """Before any manifest, checkpoint or export: migrate (or a flush) publishes it."""
    assert not Manifest.objects.exists()
    keys = client.get("/signing-keys.json").json()["keys"]
    assert sorted(k["key_id"] for k in keys) == [signing.current_key_id(), signing.current_mldsa_key_id()]
