"""The Infrai simulator over real HTTP: the contract, idempotency, and each fault profile."""

import hashlib
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import requests

from extraction.pdf import Limits, extract_images
from extraction.providers.contract import load_pin, validate
from extraction.providers.simulator import Simulator
from tests import pdfs

KEY = "sim-test-key-7c1e9a"  # distinctive, so that the log and output searches cannot miss it
ROUTES = load_pin()["capability"]["routes"]
TIMEOUTS = (5, 30)
ROOT = Path(__file__).resolve().parents[2]


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class FakeClock:
    """The simulator's notion of now, moved by the test instead of by waiting."""

    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Client:
    """What the adapter does, written out plainly: one session, the bearer key, the pinned routes."""

    def __init__(self, simulator: Simulator, key: str = KEY):
        self.base = simulator.url
        self.session = requests.Session()
        self.session.headers["Authorization"] = f"Bearer {key}"

    def submit(self, pdf: bytes, key: str = "key-1", checksum: str | None = None, header_key: str | None = None):
        return self.session.post(
            self.base + ROUTES["submit"]["path"],
            headers={"Idempotency-Key": header_key or key},
            data={"idempotency_key": key, "sha256": checksum or sha256(pdf)},
            files={"document": ("bundle.pdf", pdf, "application/pdf")},
            timeout=TIMEOUTS,
        )

    def get(self, path: str, **kwargs) -> requests.Response:
        return self.session.get(self.base + path, timeout=TIMEOUTS, **kwargs)

    def job(self, job_id: str) -> requests.Response:
        return self.get(ROUTES["get_job"]["path"].format(job_id=job_id))

    def wait_done(self, job_id: str, give_up_after: float = 60.0) -> dict:
        """Poll as a client would; the bound only stops a broken run from hanging."""
        deadline = time.monotonic() + give_up_after
        while True:
            document = self.job(job_id).json()
            if document["status"] in ("completed", "failed", "cancelled") or time.monotonic() > deadline:
                return document
            time.sleep(0.05)

    def run(self, pdf: bytes, key: str = "key-1") -> dict:
        return self.wait_done(self.submit(pdf, key).json()["job_id"])


@pytest.fixture
def start(tmp_path):
    """Starts simulators on ephemeral ports, each stopped after the test."""
    started = []

    def start(profile: str = "healthy", **options) -> Simulator:
        simulator = Simulator("127.0.0.1", 0, KEY, profile, data_dir=tmp_path, **options)
        simulator.start()
        started.append(simulator)
        return simulator

    yield start
    for simulator in started:
        simulator.stop()


@pytest.fixture
def simulator(start) -> Simulator:
    return start()


@pytest.fixture
def infrai(simulator) -> Client:
    """A client of the healthy simulator (named apart from pytest-django's `client`)."""
    return Client(simulator)


@pytest.fixture
def pdf(tmp_path) -> bytes:
    """A one-page PDF drawing one JPEG."""
    return pdfs.jpeg_rgb(tmp_path).read_bytes()


def test_it_extracts_the_images_of_a_submitted_pdf_as_the_local_extractor_does(infrai, tmp_path):
    path = pdfs.duplicate_xobjects(tmp_path)
    accepted = infrai.submit(path.read_bytes())
    assert accepted.status_code == 202
    assert accepted.json()["status"] == "queued"
    document = infrai.wait_done(accepted.json()["job_id"])
    assert document["status"] == "completed" and document["pages"] == 1
    (tmp_path / "local").mkdir()
    local = extract_images(path, tmp_path / "local")
    expected = {a.sha256: (tmp_path / "local" / a.filename).read_bytes() for a in local.assets}
    downloaded = {}
    for asset in document["assets"]:
        response = infrai.get(asset["download_url"])
        assert sha256(response.content) == asset["sha256"] == response.headers["X-Content-SHA256"]
        assert response.headers["Content-Type"] == asset["content_type"]
        downloaded[asset["sha256"]] = response.content
    assert downloaded == expected
    assert len(downloaded) == 2


def test_it_reports_placements_of_an_image_drawn_on_several_pages(infrai, tmp_path):
    document = infrai.run(pdfs.reused_on_three_pages(tmp_path).read_bytes())
    [asset] = document["assets"]
    assert asset["placements"] == [{"page": 1, "index": 0}, {"page": 2, "index": 0}, {"page": 3, "index": 0}]
    assert document["partial"] is False and document["warnings"] == []


def test_it_returns_the_same_job_for_the_same_key_and_payload(infrai, simulator, pdf):
    first = infrai.submit(pdf, "key-1")
    again = infrai.submit(pdf, "key-1")
    assert (first.status_code, again.status_code) == (202, 200)
    assert again.json()["job_id"] == first.json()["job_id"] == simulator.job_ids_by_key["key-1"]
    assert simulator.submissions == 1


def test_it_creates_one_job_when_ten_clients_submit_the_same_key_at_once(simulator, pdf):
    responses, barrier = [], threading.Barrier(10)

    def submit():
        client = Client(simulator)
        barrier.wait()
        responses.append(client.submit(pdf, "key-1"))

    threads = [threading.Thread(target=submit) for _ in range(10)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(r.status_code for r in responses) == [200] * 9 + [202]
    assert {r.json()["job_id"] for r in responses} == {simulator.job_ids_by_key["key-1"]}
    assert simulator.submissions == 1


def test_it_refuses_the_same_key_for_another_payload(infrai, simulator, pdf, tmp_path):
    infrai.submit(pdf, "key-1")
    response = infrai.submit(pdfs.jpeg_gray(tmp_path).read_bytes(), "key-1")
    assert response.status_code == 422
    assert response.json()["error"]["code"] == "idempotency_conflict"
    assert simulator.submissions == 1


@pytest.mark.parametrize("key", ["wrong-key", ""])
def test_it_refuses_a_missing_or_wrong_key(simulator, pdf, key):
    client = Client(simulator, key)
    if not key:
        del client.session.headers["Authorization"]
    for response in (client.submit(pdf), client.get("/v1/discovery")):
        assert response.status_code == 401
        assert response.json()["error"]["code"] == "unauthorized"
    assert simulator.submissions == 0


@pytest.mark.parametrize(
    "change, code",
    [
        ({"header_key": "another-key"}, "idempotency_key_mismatch"),
        ({"checksum": "0" * 64}, "checksum_mismatch"),
    ],
)
def test_it_refuses_a_submit_that_does_not_hold_together(infrai, simulator, pdf, change, code):
    response = infrai.submit(pdf, "key-1", **change)
    assert response.status_code == 422
    assert response.json()["error"]["code"] == code
    assert simulator.submissions == 0


def test_it_refuses_a_document_that_is_not_a_pdf(infrai, simulator):
    response = infrai.submit(b"GIF89a not a pdf at all")
    assert response.status_code == 422
    assert response.json()["error"]["code"] == "invalid_document"
    assert simulator.submissions == 0


def test_it_refuses_a_document_over_its_size_limit(start, pdf):
    simulator = start(limits=Limits(max_bytes=len(pdf) - 1))
    response = Client(simulator).submit(pdf)
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "payload_too_large"
    assert simulator.submissions == 0


def test_it_answers_404_for_an_unknown_job(infrai):
    response = infrai.job("job_nope")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"


def test_it_fails_a_job_whose_pdf_the_extractor_cannot_open(infrai):
    document = infrai.run(b"%PDF-1.7\nthis is no PDF body\n%%EOF\n")
    assert document["status"] == "failed"
    assert document["error"]["code"] and document["assets"] == []
    assert validate(document, "job") == []


def test_it_counts_each_request_with_its_status(infrai, simulator):
    infrai.get("/v1/discovery")
    infrai.job("job_nope")
    assert simulator.requests == [("GET", "/v1/discovery", 200), ("GET", "/v1/pdf/job/get/job_nope", 404)]


@pytest.mark.parametrize("burst, expected", [(None, [429, 200, 429, 200]), (2, [429, 429, 200, 429])])
def test_it_rate_limits_with_retry_after(start, burst, expected):
    client = Client(start("rate_limited", burst=burst))
    responses = [client.get("/v1/discovery") for _ in expected]
    assert [r.status_code for r in responses] == expected
    for response in responses:
        if response.status_code == 429:
            assert response.headers["Retry-After"] == "1"
            assert response.json()["error"]["code"] == "rate_limited"


def test_it_fails_the_first_requests_to_each_route_with_an_error_document(start):
    client = Client(start("flaky_5xx"))
    discovery = [client.get("/v1/discovery") for _ in range(3)]
    assert [r.status_code for r in discovery] == [503, 500, 200]
    assert client.job("job_nope").status_code == 503  # each route has its own burst
    assert [validate(r.json(), "error") for r in discovery[:2]] == [[], []]


def test_it_keeps_a_slow_job_running_until_its_time_has_passed(start, pdf):
    clock = FakeClock()
    simulator = start("slow", clock=clock, slow_seconds=5)
    client = Client(simulator)
    job_id = client.submit(pdf).json()["job_id"]
    assert simulator.wait_idle(60)
    clock.now += 4.9
    held = client.job(job_id).json()
    assert (held["status"], held["assets"], held["pages"]) == ("running", [], None)
    clock.now += 0.2
    assert client.job(job_id).json()["status"] == "completed"


def test_it_never_finishes_a_job_under_never_finishes(start, pdf):
    clock = FakeClock()
    simulator = start("never_finishes", clock=clock)
    client = Client(simulator)
    job_id = client.submit(pdf).json()["job_id"]
    assert simulator.wait_idle(60)
    clock.now += 10**9
    assert client.job(job_id).json()["status"] == "running"


def test_it_keeps_the_job_it_accepted_before_dropping_the_connection(start, pdf):
    simulator = start("accept_then_drop")
    client = Client(simulator)
    with pytest.raises(requests.ConnectionError):
        client.submit(pdf, "key-1")
    assert simulator.submissions == 1
    retry = client.submit(pdf, "key-1")
    assert retry.status_code == 200
    assert retry.json()["job_id"] == simulator.job_ids_by_key["key-1"]
    assert simulator.submissions == 1
    assert [status for _, _, status in simulator.requests] == [None, 200]


def test_it_fails_jobs_with_an_error_document_under_job_fails(start, pdf):
    document = Client(start("job_fails")).run(pdf)
    assert document["status"] == "failed"
    assert document["error"]["code"] == "extraction_failed"
    assert validate(document, "job") == []


def test_it_reports_a_partial_job_with_page_warnings(start, pdf):
    document = Client(start("partial")).run(pdf)
    assert (document["status"], document["partial"]) == ("completed", True)
    assert [w["page"] for w in document["warnings"]] == [1]
    assert len(document["assets"]) == 1


def read_what_arrives(response: requests.Response) -> bytes:
    received = b""
    try:
        for chunk in response.iter_content(256):
            received += chunk
    except requests.RequestException:
        pass  # the connection closed early: keep what did arrive
    return received


def test_it_truncates_the_first_download_of_each_asset_detectably(start, pdf):
    client = Client(start("truncated_download"))
    [asset] = client.run(pdf)["assets"]
    first = client.get(asset["download_url"], stream=True)
    received = read_what_arrives(first)
    assert int(first.headers["Content-Length"]) == asset["size"] > len(received)
    assert sha256(received) != asset["sha256"]
    assert sha256(client.get(asset["download_url"]).content) == asset["sha256"]


def test_it_corrupts_the_first_download_of_each_asset_detectably(start, pdf):
    client = Client(start("corrupt_download"))
    [asset] = client.run(pdf)["assets"]
    first = client.get(asset["download_url"])
    assert len(first.content) == asset["size"]
    assert sha256(first.content) != first.headers["X-Content-SHA256"]
    assert sha256(client.get(asset["download_url"]).content) == asset["sha256"]


def test_it_still_serves_jobs_while_its_discovery_document_drifts(start, pdf):
    client = Client(start("schema_drift"))
    assert client.get("/v1/discovery/pdf.extract_images").json() != load_pin()["capability"]
    assert client.run(pdf)["status"] == "completed"


def test_it_keeps_the_key_out_of_its_log(start, pdf, caplog):
    caplog.set_level("DEBUG", logger="extraction.providers.simulator")
    simulator = start("rate_limited")
    client, intruder = Client(simulator), Client(simulator, "wrong-" + KEY)  # contains KEY, to be found if logged
    for _ in range(2):
        client.submit(pdf)
        intruder.get("/v1/discovery")
    assert len(caplog.records) >= 4
    assert KEY not in caplog.text


def test_it_removes_its_files_and_closes_connections_when_stopped(tmp_path, pdf):
    data_dir = tmp_path / "simulator"
    data_dir.mkdir()
    simulator = Simulator("127.0.0.1", 0, KEY, data_dir=data_dir)
    simulator.start()
    client = Client(simulator)
    assert client.run(pdf)["status"] == "completed"
    simulator.stop()
    assert list(data_dir.iterdir()) == []
    with pytest.raises(requests.ConnectionError):
        client.get("/v1/discovery")


def manage_env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "INFRAI_API_KEY"}
    return {**env, "DJANGO_SETTINGS_MODULE": "portal.settings", "PYTHONUNBUFFERED": "1", **extra}


def test_it_refuses_to_start_the_command_without_a_key():
    done = subprocess.run(
        [sys.executable, "manage.py", "provider_simulator", "--port", "0"],
        cwd=ROOT,
        env=manage_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode != 0
    assert "INFRAI_API_KEY" in done.stderr


@pytest.mark.parametrize("stop_signal", [signal.SIGINT, signal.SIGTERM])
def test_it_runs_the_command_until_stopped_without_printing_the_key(tmp_path, stop_signal):
    temp = tmp_path / "temp"
    temp.mkdir()
    proc = subprocess.Popen(
        [sys.executable, "manage.py", "provider_simulator", "--port", "0", "--profile", "slow"],
        cwd=ROOT,
        env=manage_env(INFRAI_API_KEY=KEY, TMPDIR=str(temp)),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        banner = proc.stdout.readline()
        url = banner.split(" at ", 1)[1].split(" ", 1)[0]
        answer = requests.get(url + "/v1/discovery", headers={"Authorization": f"Bearer {KEY}"}, timeout=TIMEOUTS)
        assert answer.json() == load_pin()["discovery"]
    finally:
        proc.send_signal(stop_signal)
        out, err = proc.communicate(timeout=60)
    assert "profile slow" in banner
    assert proc.returncode == 0
    assert KEY not in banner + out + err
    assert "GET /v1/discovery -> 200" in err
    assert list(temp.iterdir()) == []  # the simulator's files went with it
