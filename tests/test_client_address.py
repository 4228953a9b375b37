"""One client address (portal/clients.py) for the throttles, the login lockout and the access log, and throttle
counts shared by every worker and host: real gunicorn servers, as `make serve` starts them."""

import shutil

import pytest

from tests.webserver import WebServer, request

pytestmark = pytest.mark.slow

RATE = 20  # requests a minute per caller on the API (PAGETRAIL_API_RATE, PAGETRAIL_API_READ_RATE)


@pytest.fixture(scope="module")
def two_hosts(tmp_path_factory):
    """Two gunicorn servers of one worker each on one deployment's data dir: two hosts behind no proxy."""
    data_dir = tmp_path_factory.mktemp("two-hosts")
    hosts = [
        WebServer(
            "gunicorn",
            data_dir,
            "-w",
            "1",
            log_name=f"host-{n}",
            PAGETRAIL_API_RATE=f"{RATE}/m",
            PAGETRAIL_API_READ_RATE=f"{RATE}/m",
        )
        for n in (1, 2)
    ]
    yield hosts
    for host in hosts:
        host.stop()


@pytest.fixture
def hosts(two_hosts):
    shutil.rmtree(two_hosts[0].portal.data_dir / "cache", ignore_errors=True)  # the counts of the test before
    return two_hosts


@pytest.fixture(scope="module")
def behind_a_proxy(tmp_path_factory):
    web = WebServer(
        "gunicorn",
        tmp_path_factory.mktemp("proxied"),
        PAGETRAIL_PROXY_COUNT=1,
        PAGETRAIL_API_RATE=f"{RATE}/m",
        PAGETRAIL_API_READ_RATE=f"{RATE}/m",
    )
    yield web
    web.stop()


def checkpoint(server: WebServer, forwarded_for: str = "") -> int | None:
    """The public log endpoint no token is needed for (404 until a checkpoint is signed)."""
    header = f"X-Forwarded-For: {forwarded_for}\r\n" if forwarded_for else ""
    return request(
        server.port, f"GET /api/v1/log/checkpoint HTTP/1.0\r\nHost: 127.0.0.1\r\n{header}\r\n".encode()
    ).status


def test_a_caller_writing_a_new_x_forwarded_for_each_time_is_throttled_as_one(hosts):
    answers = [checkpoint(hosts[n % 2], f"198.51.100.{n}") for n in range(RATE + 10)]
    assert answers == [404] * RATE + [429] * 10


def test_throttle_counts_are_shared_by_the_hosts_of_a_deployment(hosts):
    answers = [checkpoint(hosts[n % 2]) for n in range(RATE + 10)]
    assert answers == [404] * RATE + [429] * 10


def test_behind_a_proxy_a_forged_left_part_of_x_forwarded_for_is_not_a_new_caller(behind_a_proxy):
    answers = [checkpoint(behind_a_proxy, f"10.1.{n}.1, 203.0.113.8") for n in range(RATE + 10)]
    assert answers == [404] * RATE + [429] * 10
    assert checkpoint(behind_a_proxy, "203.0.113.9") == 404  # another caller, as the proxy saw it


def test_behind_a_proxy_the_access_log_names_the_caller_not_the_proxy(behind_a_proxy):
    assert checkpoint(behind_a_proxy, "192.0.2.66, 203.0.113.7") in (404, 429)
    behind_a_proxy.wait_for_log('203.0.113.7 "GET /api/v1/log/checkpoint HTTP/1.0"')
