"""Every management command's `--json` is one JSON document on stdout and nothing else, also when what it does
raises an alert whose mail goes to the default console backend (on stderr: core/mail.py)."""

import json

import pytest

from tests import pdfs
from tests.procs import Portal

pytestmark = pytest.mark.slow  # real manage.py processes

# A deployment with something for each command to alert about: a completed job whose stored asset was altered
# (verify_manifests), a policy in force whose windows ended under a legal hold (apply_retention), and an input store
# that takes no file (submit_bundle: intake_failing).
SETUP = """
from pathlib import Path
from audit.models import Asset
from extraction.intake.staging import submit_bundle
from extraction.runner import run_job
from tests import pdfs
from tests.conftest import approved_policy, write_stored
with open(pdfs.jpeg_rgb(Path("{tmp}")), "rb") as fh:
    run_job(submit_bundle(fh, filename="claim.pdf", submitted_by="t").job_id)
write_stored("outputs", Asset.objects.get().name, b"not the image")
approved_policy(is_default=True, input_days=0, output_days=0, legal_hold=True, contract_owner="x", decision_note="z")
"""


@pytest.fixture
def alerting_portal(tmp_path):
    portal = Portal(tmp_path / "portal", PAGETRAIL_ALERT_DEFAULT_EMAILS="ops@example.org")
    portal.manage("migrate", "--noinput")
    portal.manage("shell", "-c", SETUP.format(tmp=tmp_path))
    yield portal
    portal.stop()


def document(done) -> object:
    try:
        return json.loads(done.stdout)
    except json.JSONDecodeError as exc:
        raise AssertionError(f"stdout is not one JSON document ({exc}):\n{done.stdout[:2000]}") from exc


def test_each_json_command_writes_only_its_document_on_stdout_and_the_alert_mail_on_stderr(alerting_portal, tmp_path):
    verified = alerting_portal.manage("verify_manifests", "--json", check=False)
    assert verified.returncode == 1 and [f["kind"] for f in document(verified)["findings"]] == ["hash_mismatch"]
    assert "[Pagetrail] Verification Findings" in verified.stderr  # the mail was sent, to the log

    retained = alerting_portal.manage("apply_retention", "--json")
    assert {entry["outcome"] for entry in document(retained)} == {"blocked_by_legal_hold"}
    assert "[Pagetrail] Retention Blocked" in retained.stderr

    assert [job["state"] for job in document(alerting_portal.manage("job_status", "--json"))] == ["completed"]

    (tmp_path / "notes.txt").write_bytes(b"not a pdf")
    inputs = alerting_portal.data_dir / "inputs"
    inputs.rename(inputs.with_name("inputs-moved"))
    inputs.write_bytes(b"")  # a file where the input store's directory belongs: it takes no file
    submitted = alerting_portal.manage(
        "submit_bundle", "--here", "--json", tmp_path / "notes.txt", pdfs.mixed(tmp_path), timeout=300
    )
    assert [r["error_code"] for r in document(submitted)] == ["not_pdf", "storage_unavailable"]
    assert "[Pagetrail] Intake Failing" in submitted.stderr
