"""RFC 3161 timestamps of log checkpoints from a TSA run locally (OpenSSL's `ts`), checked by verification runs
and by the offline verifier against the TSA's certificate only."""

import base64
import subprocess

import pytest
from cryptography import x509

from audit.ledger import checkpoints as log_checkpoints
from audit.ledger import timestamps
from audit.models import LogCheckpoint
from tests import tsa
from tests.audit.test_evidence import chain, edit_index, export, failed, index_of, out, rewrite, verify  # noqa: F401
from tests.audit.test_verify import kinds

pytestmark = pytest.mark.django_db


@pytest.fixture
def authority(tmp_path, settings):
    server = tsa.serve(tsa.make_authority(tmp_path / "tsa"))
    settings.PAGETRAIL_TSA_URL = server.url
    yield server
    server.shutdown()
    server.server_close()


def certificate(server) -> x509.Certificate:
    return x509.load_pem_x509_certificate((server.root / "tsa.crt").read_bytes())


def test_it_checks_a_token_for_the_bytes_it_was_asked_for(authority):
    token = timestamps.ask(authority.url, b"a checkpoint\n")
    for check in (timestamps.check,):
        assert check(token, b"a checkpoint\n", certificate(authority)).year >= 2026
        with pytest.raises(timestamps.TimestampError, match="other bytes"):
            check(token, b"another checkpoint\n", certificate(authority))


def test_it_refuses_a_token_checked_against_another_tsa(authority, tmp_path):
    other = x509.load_pem_x509_certificate((tsa.make_authority(tmp_path / "other") / "tsa.crt").read_bytes())
    token = timestamps.ask(authority.url, b"a checkpoint\n")
    for check in (timestamps.check,):
        with pytest.raises(timestamps.TimestampError, match="does not verify"):
            check(token, b"a checkpoint\n", other)


def test_it_stamps_each_checkpoint_and_keeps_the_token_beside_it(chain, authority, settings):  # noqa: F811
    checkpoint = log_checkpoints.write_log_checkpoint()
    assert authority.replies == 1 and checkpoint.timestamp_token
    assert checkpoint.storage_name + ".tsr" in log_checkpoints.stored_names()
    timestamps.check(bytes(checkpoint.timestamp_token), checkpoint.note.encode(), certificate(authority))
    settings.PAGETRAIL_TSA_CERTIFICATE = str(authority.root / "tsa.crt")
    assert kinds() == []


def test_a_run_finds_a_token_of_other_bytes(chain, authority, settings):  # noqa: F811
    checkpoint = log_checkpoints.write_log_checkpoint()
    LogCheckpoint.objects.filter(pk=checkpoint.pk).update(timestamp_token=timestamps.ask(authority.url, b"other"))
    settings.PAGETRAIL_TSA_CERTIFICATE = str(authority.root / "tsa.crt")
    assert "log_checkpoint_invalid" in kinds()


def test_without_a_tsa_a_checkpoint_is_signed_without_a_token(chain, settings):  # noqa: F811
    settings.PAGETRAIL_TSA_URL = ""
    assert bytes(log_checkpoints.write_log_checkpoint().timestamp_token) == b""


def test_a_tsa_that_fails_leaves_the_checkpoint_signed_without_a_token(chain, settings):  # noqa: F811
    settings.PAGETRAIL_TSA_URL = "http://127.0.0.1:9/tsa"  # nothing listens on the discard port
    assert bytes(log_checkpoints.write_log_checkpoint().timestamp_token) == b""


def test_the_offline_verifier_checks_the_packaged_timestamp_with_the_tsa_certificate(chain, authority, out):  # noqa: F811
    package = export(out)
    done = verify(package, "--tsa-certificate", str(authority.root / "tsa.crt"))
    assert done.returncode == 0 and "1 timestamp(s)" in done.stdout and "timestamped: " in done.stdout, done.stdout
    assert "timestamp was not checked" in verify(package).stdout


def test_the_offline_verifier_refuses_a_timestamp_of_other_bytes(chain, authority, out):  # noqa: F811
    package = export(out)
    other = base64.b64encode(timestamps.ask(authority.url, b"other bytes")).decode()
    tampered = rewrite(package, edit_index(lambda index: index["log"].update(timestamp=other)))
    done = verify(tampered, "--tsa-certificate", str(authority.root / "tsa.crt"), "--trust-package-keys", pin=False)
    failed(done, "RFC 3161 timestamp does not count", "other bytes")
    assert index_of(package)["log"]["timestamp"]


def test_a_run_finds_a_checkpoint_whose_token_was_dropped(chain, authority, settings):  # noqa: F811
    checkpoint = log_checkpoints.write_log_checkpoint()
    LogCheckpoint.objects.filter(pk=checkpoint.pk).update(timestamp_token=b"")
    settings.PAGETRAIL_TSA_CERTIFICATE = str(authority.root / "tsa.crt")
    assert kinds() == ["timestamp_missing"]


def reissued(server, usage: str) -> x509.Certificate:
    """Another self-signed certificate for the TSA's own key: the token's signature verifies with it."""
    done = subprocess.run(
        ["openssl", "req", "-x509", "-key", str(server.root / "tsa.key"), "-days", "2", "-subj", "/CN=Other"]
        + ["-addext", f"extendedKeyUsage=critical,{usage}"],
        check=True,
        capture_output=True,
    )
    return x509.load_pem_x509_certificate(done.stdout)


def test_it_refuses_a_token_checked_with_a_certificate_not_for_time_stamping(authority):
    token = timestamps.ask(authority.url, b"a checkpoint\n")
    with pytest.raises(timestamps.TimestampError, match="not for time stamping"):
        timestamps.check(token, b"a checkpoint\n", reissued(authority, "serverAuth"))


def test_it_refuses_a_token_that_names_another_certificate_than_the_one_given(authority):
    token = timestamps.ask(authority.url, b"a checkpoint\n")
    with pytest.raises(timestamps.TimestampError, match="does not name its signing certificate"):
        timestamps.check(token, b"a checkpoint\n", reissued(authority, "timeStamping"))
