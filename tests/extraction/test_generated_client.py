"""The OpenAPI document is the contract: a client generated from the served document (openapi-python-client, with
docs/openapi-python-client.yaml) drives the whole integration against real processes (gunicorn, an intake worker,
an extraction worker, on this run's profile: PostgreSQL, Redis and S3 on the production one), through nothing but
that client, webhooks included. A construct the generator cannot use is fixed in the declaration, never here."""

import base64
import hashlib
import importlib
import inspect
import json
import pkgutil
import subprocess
import sys
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from http.server import ThreadingHTTPServer
from pathlib import Path

import httpx
import jsonschema
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from audit.verifier import merkle, notes
from audit.verifier.keys import read_key_list
from core.processes import ROOT
from tests import pdfs
from tests.extraction.test_webhooks import Receiver, documented_verify
from tests.waiting import wait_until
from tests.webserver import api_deployment

pytestmark = pytest.mark.slow
PDFS = (pdfs.jpeg_rgb, pdfs.cmyk, pdfs.mixed, pdfs.reused_on_three_pages)
POLL_SECONDS = 0.25  # how often an integrator asks; a 429 is waited out as its Retry-After says
CASE = "contract-run"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    # Rate limits have tests of their own; here the run must not spend minutes waiting out a 120/m window.
    # The webhook receiver is on loopback, an internal address deliveries are otherwise refused.
    options = dict(PAGETRAIL_API_RATE="3000/m", PAGETRAIL_WEBHOOK_ALLOW_PRIVATE="true")
    with api_deployment(tmp_path_factory.mktemp("contract"), **options) as web:
        yield web


@pytest.fixture(scope="module")
def receiver():
    """The integrator's webhook receiver: a real HTTP server on loopback, recording every POST."""
    http = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=http.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
    Receiver.received, Receiver.answers = [], []
    yield f"http://127.0.0.1:{http.server_address[1]}/hooks/pagetrail"
    http.shutdown()
    http.server_close()


@pytest.fixture(scope="module")
def document(server) -> dict:
    return httpx.get(f"http://127.0.0.1:{server.port}/api/v1/openapi.json", timeout=30).raise_for_status().json()


@pytest.fixture(scope="module")
def generated(document, tmp_path_factory):
    """The package `openapi-python-client generate` makes of the served document, imported from a temp dir."""
    where = tmp_path_factory.mktemp("client")
    (where / "openapi.json").write_text(json.dumps(document))
    config = ROOT / "docs" / "openapi-python-client.yaml"
    command = [str(Path(sys.executable).parent / "openapi-python-client"), "generate", "--path", "openapi.json"]
    tools = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin"}  # it formats its output with ruff
    done = subprocess.run(
        [*command, "--meta", "none", "--config", str(config)], cwd=where, env=tools, capture_output=True, text=True
    )
    assert done.returncode == 0 and "Warning" not in done.stdout + done.stderr, done.stdout + done.stderr
    sys.path.insert(0, str(where))
    yield importlib.import_module("pagetrail_client")
    sys.path.remove(str(where))
    for name in [n for n in sys.modules if n.split(".")[0] == "pagetrail_client"]:
        del sys.modules[name]


def operation(name: str):
    """The generated module of the operation `name`, under whichever tag's package it is."""
    tags = importlib.import_module("pagetrail_client.api")
    modules = [m.name for m in pkgutil.walk_packages(tags.__path__, "pagetrail_client.api.") if m.name.endswith(name)]
    return importlib.import_module(next(m for m in modules if m.rsplit(".", 1)[-1] == name))


class Integrator:
    """What an upstream service does with the generated client: every call through it, and counted."""

    def __init__(self, package, server):
        self.client_module = importlib.import_module("pagetrail_client.client")
        self.models = importlib.import_module("pagetrail_client.models")
        self.types = importlib.import_module("pagetrail_client.types")
        self.base_url, self.token = f"http://127.0.0.1:{server.port}", server.token
        self.calls: Counter[str] = Counter()
        self.lock = threading.Lock()

    def client(self):
        return self.client_module.AuthenticatedClient(base_url=self.base_url, token=self.token, timeout=60.0)

    def call(self, name: str, **kwargs):
        """The operation `name`'s `sync_detailed`, waiting out a 409 or 429 as its Retry-After says."""
        while True:
            with self.lock:
                self.calls[name] += 1
            answer = operation(name).sync_detailed(client=self.client(), **kwargs)
            if answer.status_code not in (409, 429):
                return answer
            with self.lock:
                self.calls[f"{name} {answer.status_code}"] += 1
            wait = int(answer.headers["Retry-After"])
            assert 1 <= wait <= 60, answer.headers
            time.sleep(wait)

    def submit(self, data: bytes, multipart: bool):
        File = self.types.File
        body = (
            self.models.SubmitFilesBundleUpload(file=File(payload=data, file_name="bundle.pdf"))
            if multipart
            else File(payload=data, mime_type="application/pdf")
        )
        key = f"sha256-{hashlib.sha256(data).hexdigest()}"  # one key per payload: a retry is never a second submission
        answer = self.call("submit", body=body, case_label=CASE, idempotency_key=key)
        assert answer.status_code == 202, answer.content
        return answer.parsed

    def poll(self, operation, done, **kwargs):
        while not done(answer := self.call(operation, **kwargs).parsed):  # `operation`: its name
            time.sleep(POLL_SECONDS)
        return answer

    def completed_job(self, submission):
        accepted = self.poll(
            "get_submission",
            lambda s: s.state != self.models.SubmissionState.PENDING,
            submission_id=submission.id,
        )
        assert accepted.state == self.models.SubmissionState.ACCEPTED, accepted
        JobState = self.models.JobState
        job = self.poll(
            "get_job",
            lambda j: j.state in (JobState.COMPLETED, JobState.FAILED, JobState.CANCELLED),
            job_id=accepted.job.id,
        )
        assert job.state == JobState.COMPLETED, job
        return accepted, job


@pytest.fixture(scope="module")
def registered(generated, server, receiver):
    """The webhook endpoint registered through the generated client, before anything is submitted: its secret."""
    integrator = Integrator(generated, server)
    endpoint = integrator.models.WebhookEndpointIn(url=receiver)
    answer = integrator.call("register_webhook", body=endpoint)
    assert answer.status_code == 200, answer.content
    assert integrator.call("get_webhook").parsed.url == receiver
    return answer.parsed.secret


@pytest.fixture(scope="module")
def run(generated, server, registered, tmp_path_factory):
    """Each PDF sent twice at once from different threads, once raw and once multipart, under the same key."""
    made = tmp_path_factory.mktemp("pdfs")
    payloads = [make(made).read_bytes() for make in PDFS]
    integrator = Integrator(generated, server)
    with ThreadPoolExecutor(max_workers=4) as pool:
        sent = list(pool.map(lambda a: integrator.submit(*a), [(p, m) for p in payloads for m in (False, True)]))
        done = list(pool.map(integrator.completed_job, sent[::2]))
    return integrator, payloads, sent, done


def test_the_generated_submit_takes_an_idempotency_key_and_a_raw_pdf(generated, document):
    submit = operation("submit")
    assert "idempotency_key" in inspect.signature(submit.sync_detailed).parameters
    assert 'headers["Content-Type"] = "application/pdf"' in Path(submit.__file__).read_text()
    states = importlib.import_module("pagetrail_client.models").JobState
    assert {s.value for s in states} == set(document["components"]["schemas"]["JobState"]["enum"])


def test_the_same_key_from_two_threads_is_one_submission_and_one_job_per_pdf(run):
    integrator, payloads, sent, done = run
    assert [a.id for a in sent[::2]] == [b.id for b in sent[1::2]]
    assert len({s.id for s in sent}) == len(payloads)
    listed = integrator.call("list_jobs", case_label=CASE).parsed
    assert listed.count == len(payloads) and {j.id for j in listed.items} == {job.id for _, job in done}


def test_a_replayed_key_returns_the_same_submission_as_it_is_now(run):
    integrator, payloads, sent, done = run
    again = integrator.submit(payloads[0], multipart=False)
    assert (again.id, again.state, again.job.id) == (sent[0].id, done[0][0].state, done[0][1].id)


def test_each_manifest_is_signed_with_a_published_ed25519_key_and_matches_the_declared_schema(run, document):
    integrator, _, _, done = run
    published = integrator.client().get_httpx_client().get("/signing-keys.json").json()
    public, _, problems = read_key_list(published)
    declared = jsonschema.Draft202012Validator(document["components"]["schemas"]["Manifest"])
    assert problems == []
    for _, job in done:
        answer = integrator.call("get_job_manifest", job_id=job.id)
        body, headers = answer.content, answer.headers
        assert hashlib.sha256(body).hexdigest() == headers["X-Manifest-SHA256"] == headers["ETag"].strip('"')
        signature = bytes.fromhex(headers["X-Manifest-Signature"])
        Ed25519PublicKey.from_public_bytes(public[headers["X-Manifest-Key-Id"]]).verify(signature, body)  # or raises
        assert isinstance(answer.parsed, integrator.models.Manifest)
        assert answer.parsed.input_.sha256 == job.correlation_id and list(declared.iter_errors(json.loads(body))) == []


def test_each_asset_has_the_sha256_its_job_names_and_is_not_sent_twice(run):
    integrator, _, _, done = run
    assets = [asset for _, job in done for asset in job.assets]
    assert assets
    for asset in assets:
        answer = integrator.call("get_asset", asset_id=asset.id)
        data = answer.parsed.payload.read()
        assert hashlib.sha256(data).hexdigest() == asset.sha256 == answer.headers["X-Asset-SHA256"]
        kept = integrator.call("get_asset", asset_id=asset.id, if_none_match=answer.headers["ETag"])
        assert (kept.status_code, kept.content) == (304, b"")


def test_each_completed_job_is_posted_to_the_registered_webhook_signed_with_the_secret_given_once(run, registered):
    integrator, _, _, done = run
    assert registered.startswith("whsec_")
    completed = wait_until(
        lambda: len(events := delivered("job.completed")) >= len(done) and events,
        timeout=120,
        what=lambda: f"job.completed events: {[e['data']['id'] for e in delivered('job.completed')]}",
    )
    assert all(documented_verify()(registered, headers, body) for headers, body in Receiver.received)
    JobOut = integrator.models.JobOut
    told = {event["data"]["id"]: JobOut.from_dict(event["data"]) for event in completed}
    assert told == {job.id: integrator.call("get_job", job_id=job.id).parsed for _, job in done}
    assert integrator.call("get_webhook").parsed.secret is None  # shown once, never again


def delivered(kind: str) -> list[dict]:
    return [event for _, body in list(Receiver.received) if (event := json.loads(body))["type"] == kind]


def test_each_manifest_has_an_inclusion_proof_on_demand_that_verifies(run):
    """Asked just after completion: 200 (a checkpoint signed on demand), or 409 with Retry-After, waited out."""
    integrator, _, _, done = run
    public, _, _ = read_key_list(integrator.client().get_httpx_client().get("/signing-keys.json").json())
    for _, job in done:
        manifest = integrator.call("get_job_manifest", job_id=job.id)
        answer = integrator.call("inclusion_proof", manifest_id=job.manifest_id)
        assert answer.status_code == 200, answer.content
        proof, leaf = answer.parsed, merkle.leaf_hash(manifest.content)
        assert base64.b64decode(proof.leaf_hash) == leaf and proof.leaf_index == manifest.parsed.sequence
        checkpoint = notes.open_checkpoint(proof.checkpoint, list(public.values()))
        hashes = [base64.b64decode(h) for h in proof.proof]
        assert merkle.verify_inclusion(leaf, proof.leaf_index, checkpoint.size, hashes, checkpoint.root)
    print(f"\ncalls through the generated client: {dict(sorted(integrator.calls.items()))}")
