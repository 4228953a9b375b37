"""Uploads refused for a fault of this machine (a store, the validator, the host's temp) are a warning in the log
and an alert, one per code however many uploads a burst refuses; a refusal of the file itself is neither."""

import logging
import uuid

import pytest

from audit.models import Alert
from extraction.intake import decision
from extraction.models import Submission
from tests import pdfs
from tests.conftest import PRODUCTION
from tests.extraction.test_submissions import child_that_quits, fresh_children, received  # noqa: F401 (a fixture)

pytestmark = pytest.mark.django_db


def inputs_store_down(settings, tmp_path) -> None:
    """The inputs store cannot take a file: its bucket is gone, or a file stands where its directory belongs."""
    options = dict(settings.STORAGES["inputs"]["OPTIONS"])
    if PRODUCTION:
        options["bucket_name"] = f"pagetrail-missing-{uuid.uuid4().hex[:12]}"
    else:
        (tmp_path / "a-file").write_bytes(b"")
        options["location"] = tmp_path / "a-file" / "inputs"
    settings.STORAGES = {**settings.STORAGES, "inputs": {**settings.STORAGES["inputs"], "OPTIONS": options}}


def decided(path) -> Submission:
    submission = received(path)
    decision.decide(submission.pk)
    submission.refresh_from_db()
    return submission


def test_a_burst_of_uploads_refused_while_the_input_store_is_down_is_one_alert(settings, tmp_path, caplog):
    inputs_store_down(settings, tmp_path)
    with caplog.at_level(logging.INFO, logger="extraction.intake.decision"):
        refused = [decided(factory(tmp_path)) for factory in (pdfs.jpeg_rgb, pdfs.mixed, pdfs.cmyk)]

    assert {(s.error_code, s.retryable) for s in refused} == {("storage_unavailable", True)}
    alert = Alert.objects.get()
    assert (alert.kind, alert.key, alert.occurrences) == ("intake_failing", "intake-failing-storage_unavailable", 3)
    assert "fault of this machine (storage_unavailable)" in alert.message and "The input store" in alert.message
    warned = [r for r in caplog.records if r.levelno == logging.WARNING and "rejected" in r.getMessage()]
    assert len(warned) == 3 and all("storage_unavailable" in r.getMessage() for r in warned)


def test_the_alert_links_to_the_submissions_refused_with_its_code(settings, tmp_path, admin_client):
    inputs_store_down(settings, tmp_path)
    decided(pdfs.jpeg_rgb(tmp_path))

    page = admin_client.get(Alert.objects.get().link)
    assert page.status_code == 200 and "storage_unavailable" in page.content.decode()
    assert "0 submissions" not in page.content.decode()


def test_each_code_of_a_machine_fault_has_its_own_alert(settings, tmp_path):
    lost = received(pdfs.jpeg_rgb(tmp_path))
    lost.staged_path.unlink()  # the host's temp was cleared
    decision.decide(lost.pk)
    inputs_store_down(settings, tmp_path)
    decided(pdfs.mixed(tmp_path))

    assert sorted(Alert.objects.values_list("key", "occurrences")) == [
        ("intake-failing-staged_upload_lost", 1),
        ("intake-failing-storage_unavailable", 1),
    ]


def test_a_validator_that_crashed_twice_raises_the_alert(tmp_path, monkeypatch, fresh_children):  # noqa: F811
    child_that_quits(tmp_path, monkeypatch, times=5)
    submission = decision.decide_here(received(pdfs.jpeg_rgb(tmp_path)))

    assert (submission.error_code, submission.retryable) == ("validator_crashed", True)
    assert Alert.objects.get().key == "intake-failing-validator_crashed"


def test_a_file_refused_for_itself_raises_no_alert_and_logs_at_info(tmp_path, caplog):
    (tmp_path / "notes.pdf").write_bytes(b"not a pdf at all")
    with caplog.at_level(logging.INFO, logger="extraction.intake.decision"):
        assert decided(tmp_path / "notes.pdf").error_code == "not_pdf"

    assert not Alert.objects.exists()
    assert [r.levelno for r in caplog.records if "rejected" in r.getMessage()] == [logging.INFO]


def temp_area_that_cannot_take_uploads(settings, tmp_path) -> None:
    settings.TEMP_ROOT = tmp_path / "broken"
    settings.TEMP_ROOT.mkdir()
    (settings.TEMP_ROOT / "uploads").write_bytes(b"")  # a file where the uploads directory belongs


def test_the_web_tiers_refusals_for_lack_of_space_are_counted_and_one_alert(settings, tmp_path, admin_client, client):
    from audit.operations.totals import refusals
    from extraction.accounts import ServiceAccount
    from extraction.models import Rejection
    from tests.extraction.test_admin import upload
    from tests.extraction.test_api import post_pdf

    secret = ServiceAccount.objects.create(name="claims-ingest").issue_token()
    temp_area_that_cannot_take_uploads(settings, tmp_path)
    assert post_pdf(client, secret, pdfs.mixed(tmp_path).read_bytes()).status_code == 507
    assert upload(admin_client, pdfs.jpeg_rgb(tmp_path)).status_code == 507

    assert sorted(Rejection.objects.values_list("code", "submitted_by")) == [
        ("storage_unavailable", "admin"),
        ("storage_unavailable", "api:claims-ingest"),
    ]
    assert refusals() == [(["storage_unavailable"], 2)]  # pagetrail_submissions_refused_total{code=...}
    alert = Alert.objects.get()
    assert (alert.kind, alert.key, alert.occurrences) == ("intake_failing", "intake-failing-web-storage_unavailable", 2)
    assert alert.message.startswith("Uploads are refused by the web server for lack of space (507 storage_unavailable)")
    assert admin_client.get(alert.link).status_code == 200
