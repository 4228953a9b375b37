"""Each alert kind end to end: Django's mail outbox, and a webhook receiver over real HTTP on loopback."""

import hashlib
import hmac
import json
import random
import threading
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.core import mail
from django.urls import reverse
from django.utils import timezone

from audit.models import Alert, Asset, WebhookDelivery
from audit.operations import alerts
from audit.retention import enforcement as retention
from audit.verification.verify import verify_all
from extraction.intake.staging import submit_bundle
from extraction.kill_switch import set_submissions
from extraction.models import Job
from extraction.reconciler import reconcile
from tests import pdfs
from tests.conftest import approved_policy, write_stored

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def recipients(settings):
    settings.PAGETRAIL_ALERT_DEFAULT_EMAILS = ["oncall@example.org"]
    settings.PAGETRAIL_ALERT_EMAILS = {"verification_findings": "dpo@example.org;audit@example.org"}


class Receiver(BaseHTTPRequestHandler):
    answers: list = []
    received: list = []

    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        Receiver.received.append((dict(self.headers), body))
        self.send_response(Receiver.answers.pop(0) if Receiver.answers else 200)
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture
def webhook(settings):
    server = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
    Receiver.received, Receiver.answers = [], []
    settings.PAGETRAIL_ALERT_WEBHOOK_URL = f"http://127.0.0.1:{server.server_address[1]}/hooks/pagetrail"
    settings.PAGETRAIL_ALERT_WEBHOOK_SECRET = "webhook-secret"
    yield Receiver
    server.shutdown()


def test_a_verification_run_with_findings_mails_its_list(completed, django_capture_on_commit_callbacks):
    write_stored("outputs", Asset.objects.first().name, b"tampered")
    with django_capture_on_commit_callbacks(execute=True):
        verify_all()
    [message] = mail.outbox
    assert message.to == ["dpo@example.org", "audit@example.org"] and "found 1 problem" in message.body
    assert "/admin/audit/verificationrun/" in message.body


def test_an_open_alert_is_not_sent_twice_until_acknowledged(completed, django_capture_on_commit_callbacks):
    write_stored("outputs", Asset.objects.first().name, b"tampered")
    with django_capture_on_commit_callbacks(execute=True):
        verify_all(), verify_all()
    alert = Alert.objects.get()
    assert (len(mail.outbox), alert.occurrences) == (1, 2)
    alert.acknowledge("dpo")
    with django_capture_on_commit_callbacks(execute=True):
        verify_all()
    assert len(mail.outbox) == 2 and Alert.objects.count() == 2


def test_a_job_becoming_unknown_alerts_with_a_link_to_it(tmp_path, django_capture_on_commit_callbacks):
    from extraction.runner import _mark_unknown

    with open(pdfs.jpeg_rgb(tmp_path), "rb") as fh:
        job = Job.objects.get(pk=submit_bundle(fh, filename="x.pdf", submitted_by="t").job_id)
    Job.objects.filter(pk=job.pk).update(status="running")
    job.refresh_from_db()
    with django_capture_on_commit_callbacks(execute=True):
        _mark_unknown(job, "deadline_passed", "The provider had not finished.")
    alert = Alert.objects.get()
    assert (alert.kind, alert.link) == ("job_unknown", f"/admin/extraction/job/{job.pk}/change/")
    assert mail.outbox[0].to == ["oncall@example.org"]


def test_a_job_passing_its_deadline_alerts_once(tmp_path, django_capture_on_commit_callbacks):
    with open(pdfs.jpeg_rgb(tmp_path), "rb") as fh:
        job_id = submit_bundle(fh, filename="x.pdf", submitted_by="t").job_id
    Job.objects.filter(pk=job_id).update(deadline=timezone.now() - timedelta(seconds=10))
    with django_capture_on_commit_callbacks(execute=True):
        reconcile(), reconcile()
    assert Alert.objects.get().kind == "job_past_deadline" and len(mail.outbox) == 1


def test_a_retention_run_blocked_by_legal_hold_alerts(completed, django_capture_on_commit_callbacks):
    approved_policy(
        is_default=True, input_days=1, output_days=1, legal_hold=True, contract_owner="x", decision_note="z"
    )
    with django_capture_on_commit_callbacks(execute=True):
        retention.apply_retention(at=timezone.now() + timedelta(days=5))
    alert = Alert.objects.get()
    assert alert.kind == "retention_blocked" and "legal hold on claims" in alert.message


def test_a_kill_switch_change_alerts(django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        set_submissions(False, by="admin", reason="provider incident")
    assert "Submissions stopped by admin: provider incident" in mail.outbox[0].body


def test_the_webhook_receives_a_signed_alert(webhook, django_capture_on_commit_callbacks):
    alert, _ = alerts.raise_alert("kill_switch", "kill-switch", "Submissions stopped", "/admin/")
    assert alerts.deliver_webhook(alert.pk, 1)
    headers, body = webhook.received[0]
    expected = "sha256=" + hmac.new(b"webhook-secret", body, hashlib.sha256).hexdigest()
    assert headers["X-Pagetrail-Signature"] == expected
    assert json.loads(body)["link"].endswith("/admin/")
    assert WebhookDelivery.objects.get().delivered


def test_a_failed_webhook_delivery_is_logged_and_retried_later(webhook):
    from django_q.models import Schedule

    webhook.answers = [503]
    alert, _ = alerts.raise_alert("kill_switch", "kill-switch", "Submissions stopped", "/admin/")
    assert not alerts.deliver_webhook(alert.pk, 1, rng=random.Random(0))
    delivery = WebhookDelivery.objects.get()
    assert (delivery.status_code, delivery.error, delivery.delivered) == (503, "HTTP 503", False)
    retry = Schedule.objects.get(name__startswith=f"webhook-{alert.pk}-2-")
    assert retry.func == "audit.tasks.deliver_webhook" and retry.next_run > timezone.now()
    assert alerts.deliver_webhook(alert.pk, 2) and WebhookDelivery.objects.filter(delivered=True).count() == 1


def test_alerts_are_acknowledged_in_the_admin(admin_client):
    alerts.raise_alert("kill_switch", "kill-switch", "Submissions stopped", "/admin/")
    admin_client.post(
        reverse("admin:audit_alert_changelist"),
        {"action": "acknowledge", "_selected_action": list(Alert.objects.values_list("pk", flat=True))},
    )
    assert Alert.objects.get().status == "acknowledged" and Alert.objects.get().acknowledged_by == "admin"


def test_an_alert_whose_webhook_task_was_lost_reaches_the_webhook_after_the_reconciler(
    webhook, settings, django_capture_on_commit_callbacks
):
    from django_q.brokers import get_broker
    from django_q.signing import SignedPackage

    from audit import tasks
    from tests.conftest import lose_the_queue

    with django_capture_on_commit_callbacks(execute=True):
        alert, _ = alerts.raise_alert("kill_switch", "kill-switch", "Submissions stopped", "/admin/")
    lose_the_queue()
    later = alert.webhook_woken_at + timedelta(seconds=600 + settings.PAGETRAIL_REQUEUE_AFTER_SECONDS + 1)
    assert reconcile()["alert_webhooks_redriven"] == 0  # a retry may still be waiting its turn

    assert [reconcile(at=later)["alert_webhooks_redriven"] for _ in range(2)] == [1, 0]  # once, however many pass
    broker = get_broker()
    [[(_, payload)]] = [broker.dequeue()]
    task = SignedPackage.loads(payload)
    assert (task["func"], task["args"]) == ("audit.tasks.deliver_webhook", (alert.pk, 1))
    assert tasks.deliver_webhook(*task["args"]) and len(webhook.received) == 1
    assert reconcile(at=later + timedelta(hours=1))["alert_webhooks_redriven"] == 0  # delivered: never again
