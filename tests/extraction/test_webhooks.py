"""Signed webhooks to service accounts: a real receiver on loopback, jobs driven through the real pipeline."""

import json
import random
import re
import threading
import time
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from django.test import TestCase
from django.utils import timezone

from extraction.accounts import ServiceAccount
from extraction.models import Job
from extraction.reconciler import reconcile
from extraction.runner import run_job
from extraction.webhooks import delivery, signing
from extraction.webhooks.events import WebhookAttempt, WebhookEvent
from tests import pdfs
from tests.conftest import PRODUCTION, run_intake_tasks, write_stored
from tests.procs import Portal

pytestmark = pytest.mark.django_db
API_DOC = Path(__file__).resolve().parents[2] / "docs" / "api.md"
# Published with the Standard Webhooks specification (and svix's libraries' tests).
VECTOR = {
    "secret": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
    "id": "msg_p5jXN8AQM9LWM0D4loKWxJek",
    "timestamp": 1614265330,
    "body": b'{"test": 2432232314}',
    "signature": "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
}


def documented_verify():
    """The `verify` of docs/api.md's Webhooks section, run as a receiver would copy it."""
    section = API_DOC.read_text().split("## Webhooks", 1)[1]
    source = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    namespace: dict = {}
    exec(source, namespace)
    return namespace["verify"]


class Receiver(BaseHTTPRequestHandler):
    """Records every POST; answers the queued (status, headers, delay) in turn, then 200."""

    answers: list = []
    received: list = []

    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        Receiver.received.append(({k.lower(): v for k, v in self.headers.items()}, body))
        status, headers, delay = Receiver.answers.pop(0) if Receiver.answers else (200, {}, 0)
        time.sleep(delay)
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture
def receiver():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
    Receiver.received, Receiver.answers = [], []
    Receiver.url = f"http://127.0.0.1:{server.server_address[1]}/hooks/pagetrail"
    yield Receiver
    server.shutdown()
    server.server_close()


@pytest.fixture
def account(receiver):
    from django.core.cache import cache

    cache.clear()  # rate-limit history of earlier tests
    account = ServiceAccount.objects.create(name="claims-ingest", webhook_url=receiver.url)
    account.issue_webhook_secret()
    account.token = account.issue_token()
    return account


def run_webhook_tasks() -> int:
    """Deliver what the jobs' queue holds for webhooks in this process, as its worker would (other tasks dropped)."""
    from django_q.brokers import get_broker
    from django_q.signing import SignedPackage

    from extraction import tasks

    broker, ran = get_broker(), 0
    while batch := broker.dequeue():
        for ack_id, payload in batch:
            task = SignedPackage.loads(payload)
            if task["func"] == "extraction.tasks.deliver_webhook":
                tasks.deliver_webhook(*task["args"])
                ran += 1
            broker.acknowledge(ack_id)
    return ran


def submit(client, account, data: bytes) -> dict:
    """Through the API and the intake worker; the intake's commits run their on-commit hooks."""
    auth = {"HTTP_AUTHORIZATION": f"Bearer {account.token}"}
    with TestCase.captureOnCommitCallbacks(execute=True):
        posted = client.post("/api/v1/bundles", data=data, content_type="application/pdf", **auth)
    assert posted.status_code == 202, posted.content
    with TestCase.captureOnCommitCallbacks(execute=True):
        run_intake_tasks()
    return client.get(posted.json()["status_url"], **auth).json()


def an_event(account, at=None) -> WebhookEvent:
    return WebhookEvent.objects.create(
        account=account, type="job.completed", body='{"id": "x"}', next_attempt_at=at or timezone.now()
    )


def test_it_signs_the_published_standard_webhooks_example():
    v = VECTOR
    assert signing.sign(v["secret"], v["id"], v["timestamp"], v["body"]) == v["signature"]
    headers = {"webhook-id": v["id"], "webhook-timestamp": str(v["timestamp"]), "webhook-signature": v["signature"]}
    assert documented_verify()(v["secret"], headers, v["body"], tolerance=10**10)
    assert not documented_verify()(v["secret"], headers, v["body"] + b" ", tolerance=10**10)


def test_a_job_completed_through_the_pipeline_is_posted_signed_with_the_apis_document(client, account, tmp_path):
    job_id = submit(client, account, pdfs.mixed(tmp_path).read_bytes())["job"]["id"]
    with TestCase.captureOnCommitCallbacks(execute=True):
        assert run_job(job_id) == "completed"
    assert run_webhook_tasks() == 1
    [(headers, body)] = Receiver.received
    assert documented_verify()(account.webhook_secret, headers, body)
    event = json.loads(body)
    api = client.get(f"/api/v1/jobs/{job_id}", HTTP_AUTHORIZATION=f"Bearer {account.token}").json()
    assert (event["type"], event["id"], event["data"]) == ("job.completed", headers["webhook-id"], api)
    assert event["data"]["manifest_id"] and event["data"]["assets"]  # no second call needed
    assert WebhookEvent.objects.get().state == "delivered"


def test_a_job_that_fails_is_posted_as_job_failed(client, account, tmp_path):
    job_id = submit(client, account, pdfs.jpeg_rgb(tmp_path).read_bytes())["job"]["id"]
    job = Job.objects.get(pk=job_id)
    name = f"{job.bundle.correlation_id}/{job.extractor_version.replace('+', '_')}/p00001-000.jpg"
    write_stored("outputs", name, b"someone else's bytes")
    with TestCase.captureOnCommitCallbacks(execute=True):
        assert run_job(job_id) == "failed"
    run_webhook_tasks()
    [(headers, body)] = Receiver.received
    event = json.loads(body)
    assert (event["type"], event["data"]["state"], event["data"]["error"]["code"]) == (
        "job.failed",
        "failed",
        "output_conflict",
    )


def test_a_refused_submission_is_posted_to_the_account_that_made_it(client, account):
    document = submit(client, account, b"PK\x03\x04" + b"\x00" * 64)
    run_webhook_tasks()
    [(headers, body)] = Receiver.received
    event = json.loads(body)
    assert (event["type"], event["data"]) == ("submission.refused", document)
    assert document["error"]["code"] == "not_pdf" and documented_verify()(account.webhook_secret, headers, body)


def test_a_staff_upload_or_an_account_that_cannot_see_the_job_is_not_told(account, tmp_path):
    from tests.conftest import complete

    ServiceAccount.objects.create(name="other", webhook_url=Receiver.url).issue_webhook_secret()
    with TestCase.captureOnCommitCallbacks(execute=True):
        complete(pdfs.jpeg_rgb(tmp_path))
    assert Job.objects.get().status == "completed" and not WebhookEvent.objects.exists()


def test_a_receiver_answering_500_is_tried_again_later_and_then_delivered(account):
    Receiver.answers = [(500, {}, 0)]
    event = an_event(account)
    assert delivery.deliver(event.pk, rng=random.Random(1)) == "retry"
    event.refresh_from_db()
    assert event.state == "pending" and event.next_attempt_at > timezone.now()
    from django_q.models import Schedule

    [retry] = Schedule.objects.filter(func="extraction.tasks.deliver_webhook")
    assert retry.args == f"({event.pk},)" and retry.next_run == event.next_attempt_at
    assert delivery.deliver(event.pk) == "not-due"  # a duplicate task before its time sends nothing
    assert delivery.deliver(event.pk, at=event.next_attempt_at) == "delivered"
    first, second = Receiver.received
    assert first[0]["webhook-id"] == second[0]["webhook-id"] == event.webhook_id and first[1] == second[1]
    statuses = list(WebhookAttempt.objects.values_list("number", "status_code", "delivered"))
    assert statuses == [(1, 500, False), (2, 200, True)]


def test_a_410_stops_at_once(account):
    Receiver.answers = [(410, {}, 0)]
    event = an_event(account)
    assert delivery.deliver(event.pk) == "given_up"
    event.refresh_from_db()
    assert (event.state, event.next_attempt_at, len(Receiver.received)) == ("given_up", None, 1)
    assert WebhookAttempt.objects.get().error == "The receiver answered HTTP 410."


def test_a_429s_retry_after_is_honoured_up_to_the_cap(account, settings):
    settings.PAGETRAIL_RETRY_AFTER_CAP_SECONDS = 600
    Receiver.answers = [(429, {"Retry-After": "120"}, 0), (503, {"Retry-After": "86400"}, 0)]
    event, now = an_event(account), timezone.now()
    delivery.deliver(event.pk, at=now, rng=random.Random(0))
    event.refresh_from_db()
    assert event.next_attempt_at >= now + timedelta(seconds=120)
    later = event.next_attempt_at
    delivery.deliver(event.pk, at=later, rng=random.Random(0))
    event.refresh_from_db()
    assert later + timedelta(seconds=600) <= event.next_attempt_at < later + timedelta(seconds=601)


def test_a_receiver_that_does_not_answer_in_time_is_tried_again(account, settings):
    settings.PAGETRAIL_WEBHOOK_TIMEOUT_SECONDS = 0.3
    Receiver.answers = [(200, {}, 1.5)]
    event = an_event(account)
    assert delivery.deliver(event.pk) == "retry"
    assert WebhookAttempt.objects.get().error == "No answer: ReadTimeout."


def test_it_gives_up_after_the_configured_tries(account, settings):
    settings.PAGETRAIL_WEBHOOK_TRIES = 2
    Receiver.answers = [(503, {}, 0), (503, {}, 0)]
    event = an_event(account)
    assert delivery.deliver(event.pk) == "retry"
    event.refresh_from_db()
    assert delivery.deliver(event.pk, at=event.next_attempt_at) == "given_up"


def test_replay_from_the_admin_delivers_the_same_event_again(admin_client, account):
    event = an_event(account)
    delivery.deliver(event.pk)
    with TestCase.captureOnCommitCallbacks(execute=True):
        response = admin_client.post(
            "/admin/extraction/webhookevent/", {"action": "replay", "_selected_action": [event.pk]}, follow=True
        )
    assert "Queued 1 event(s) for delivery again." in response.content.decode()
    assert run_webhook_tasks() == 1
    first, second = Receiver.received
    assert first[0]["webhook-id"] == second[0]["webhook-id"] and first[1] == second[1]
    assert documented_verify()(account.webhook_secret, *second)
    event.refresh_from_db()
    assert (event.state, event.replays, event.attempts.count()) == ("delivered", 1, 2)


def test_the_event_list_filters_by_account_type_and_state(admin_client, account):
    an_event(account)
    page = admin_client.get("/admin/extraction/webhookevent/?state__exact=pending&type__exact=job.completed")
    assert page.status_code == 200 and "claims-ingest" in page.content.decode()
    page = admin_client.get("/admin/extraction/webhookevent/?state__exact=delivered")
    assert "claims-ingest" not in page.content.decode().split('id="result_list"')[-1]


def test_a_lost_task_is_redriven_by_the_reconciler(client, account):
    from django_q.brokers import get_broker

    submit(client, account, b"PK\x03\x04" + b"\x00" * 64)  # a refusal's event, queued...
    get_broker().purge_queue()  # ...and lost (Redis flushed)
    assert run_webhook_tasks() == 0 and Receiver.received == []
    assert reconcile()["webhooks_redriven"] == 0  # not overdue yet: its task may still come
    WebhookEvent.objects.update(next_attempt_at=timezone.now() - timedelta(minutes=10))  # ten minutes on
    assert reconcile()["webhooks_redriven"] == 1
    assert reconcile()["webhooks_redriven"] == 0  # one wake-up call per lost task
    assert run_webhook_tasks() == 1 and WebhookEvent.objects.get().state == "delivered"
    assert json.loads(Receiver.received[0][1])["type"] == "submission.refused"


def test_a_webhook_url_that_is_not_http_is_refused_in_words(admin_client):
    page = admin_client.post("/admin/extraction/serviceaccount/add/", {"name": "x", "webhook_url": "ftp://x.org/h"})
    assert "A webhook URL must start with http:// or https://" in page.content.decode()
    assert not ServiceAccount.objects.exists()


def test_the_signing_secret_is_shown_once_when_the_first_url_is_set(admin_client, receiver):
    account = ServiceAccount.objects.create(name="claims")
    page = admin_client.post(
        f"/admin/extraction/serviceaccount/{account.pk}/change/",
        {"name": "claims", "webhook_url": receiver.url, "tokens-TOTAL_FORMS": 0, "tokens-INITIAL_FORMS": 0},
        follow=True,
    )
    account.refresh_from_db()
    assert account.webhook_secret.startswith("whsec_") and account.webhook_secret in page.content.decode()
    again = admin_client.get(f"/admin/extraction/serviceaccount/{account.pk}/change/").content.decode()
    assert account.webhook_secret not in again and "issued (shown once" in again


def test_of_two_accounts_that_sent_the_same_bytes_only_the_one_whose_job_it_is_is_told(client, account, tmp_path):
    other = ServiceAccount.objects.create(name="contracts", webhook_url=Receiver.url)
    other.issue_webhook_secret()
    other.token = other.issue_token()
    data = pdfs.jpeg_rgb(tmp_path).read_bytes()
    mine, theirs = submit(client, account, data)["job"]["id"], submit(client, other, data)["job"]["id"]
    assert mine != theirs  # a round of its own each: neither learns that the other sent the bytes
    with TestCase.captureOnCommitCallbacks(execute=True):
        run_job(theirs)
    assert list(WebhookEvent.objects.values_list("account__name", "job_id")) == [("contracts", theirs)]


WORKER_SETUP = """
from extraction.accounts import ServiceAccount
from extraction.intake import decision, staging
account = ServiceAccount.objects.create(name="claims", webhook_url={url!r})
secret = account.issue_webhook_secret()
with open({path!r}, "rb") as fh:
    staged = staging.stage(fh, filename="claim.pdf", submitted_by="api:claims")
submission = staging.receive(staged, filename="claim.pdf", submitted_by="api:claims", account=account, queued=False)
decision.decide_here(submission)
print(secret)
"""


@pytest.mark.slow
@pytest.mark.skipif(PRODUCTION, reason="an embedded-profile deployment of its own")
def test_a_real_worker_completes_the_job_and_delivers_its_signed_event(receiver, tmp_path):
    Receiver.answers = [(503, {}, 0)]  # the first try fails: the worker's own retry delivers it
    p = Portal(
        tmp_path / "portal", PAGETRAIL_WEBHOOK_BACKOFF_BASE_SECONDS="0.01", PAGETRAIL_WEBHOOK_BACKOFF_CAP_SECONDS="0.01"
    )
    try:
        p.manage("migrate", "--noinput")
        setup = WORKER_SETUP.format(url=receiver.url, path=str(pdfs.jpeg_rgb(tmp_path)))
        secret = p.manage("shell", "-c", setup).stdout.strip().splitlines()[-1]
        p.start_worker()
        # The retry is a one-off schedule: the cluster's scheduler enqueues it at its next tick (about 30 s).
        p.wait_for("select count(*) = 1 from extraction_webhookevent where state = 'delivered'", timeout=180)
    finally:
        p.stop()
    (first_headers, first_body), (headers, body) = Receiver.received
    assert documented_verify()(secret, headers, body) and first_body == body
    assert json.loads(body)["type"] == "job.completed" and first_headers["webhook-id"] == headers["webhook-id"]
    assert p.query("select number, status_code from extraction_webhookattempt order by at") == [(1, 503), (2, 200)]


def test_the_event_list_costs_the_same_queries_for_one_event_or_many(admin_client, account):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert admin_client.get("/admin/extraction/webhookevent/").status_code == 200
        return len(captured.captured_queries)

    an_event(account)
    one = queries()
    for _ in range(5):
        an_event(ServiceAccount.objects.create(name=f"account-{_}"))
    assert queries() == one


def test_a_replaced_secret_still_signs_beside_the_new_one_for_the_overlap(account, settings):
    settings.PAGETRAIL_TOKEN_OVERLAP_DAYS = 7
    old = account.webhook_secret
    new = account.issue_webhook_secret()
    delivery.deliver(an_event(account).pk)
    verify = documented_verify()
    headers, body = Receiver.received[0]
    assert verify(old, headers, body) and verify(new, headers, body)
    later = timezone.now() + timedelta(days=8)
    delivery.deliver(an_event(account, at=later).pk, at=later)
    headers, body = Receiver.received[1]
    assert headers["webhook-signature"] == signing.sign(new, headers["webhook-id"], int(later.timestamp()), body)
