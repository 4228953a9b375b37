"""Where a webhook may go: never inside the deployment (loopback, private, link-local, the cloud metadata service
169.254.169.254, their IPv6 forms), checked on the URL at registration and on the address each delivery actually
connected to, so a name that resolves inside later (DNS rebinding) is refused too; PAGETRAIL_WEBHOOK_ALLOW_PRIVATE
lifts both checks (a receiver on the same network, the tests' loopback receivers)."""

import ipaddress
import socket
from urllib.parse import urlsplit

from django.conf import settings
from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
NAT64 = ipaddress.ip_network("64:ff9b::/96")
REFUSED = "Refused: "


class InternalAddress(Exception):
    """A delivery's connection reached an internal address: closed before a byte was sent. Not an OSError, so
    neither urllib3 nor requests takes it for a network fault to retry."""


def allowed() -> bool:
    return settings.PAGETRAIL_WEBHOOK_ALLOW_PRIVATE


def is_internal(address: IPAddress) -> bool:
    """Anything but a public unicast address; an IPv4 address inside an IPv6 one is judged as itself."""
    if isinstance(address, ipaddress.IPv6Address):
        inner = address.ipv4_mapped or address.sixtofour
        if inner is None and address in NAT64:
            inner = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
        if inner is not None:
            return is_internal(inner)
    return not address.is_global or address.is_multicast


def literal_address(host: str) -> IPAddress | None:
    """The address a URL's host names itself, in any form a resolver takes (`127.1`, `0x7f000001`, `[::1]`)."""
    try:
        return ipaddress.ip_address(host.strip("[]").split("%")[0])
    except ValueError:
        pass
    try:
        return ipaddress.IPv4Address(socket.inet_aton(host))
    except OSError:
        return None


def internal_host(url: str) -> str:
    """Why the URL's host is internal by its name alone ("" when it is not, or when internal ones are allowed).
    Other names are judged by what they resolve to when a delivery connects."""
    host = (urlsplit(url).hostname or "").rstrip(".").lower()
    if allowed() or not host:
        return ""
    if host == "localhost" or host.endswith(".localhost"):
        return f"{host} is this machine"
    address = literal_address(host)
    return f"{address} is an internal address" if address is not None and is_internal(address) else ""


def check_peer(sock: socket.socket, host: str) -> None:
    address = ipaddress.ip_address(sock.getpeername()[0].split("%")[0])
    if not allowed() and is_internal(address):
        sock.close()
        raise InternalAddress(
            f"{REFUSED}{host} resolved to {address}, an internal address (PAGETRAIL_WEBHOOK_ALLOW_PRIVATE is off)."
        )


class CheckedHTTPConnection(HTTPConnection):
    def _new_conn(self) -> socket.socket:
        sock = super()._new_conn()
        check_peer(sock, self.host)
        return sock


class CheckedHTTPSConnection(HTTPSConnection):
    def _new_conn(self) -> socket.socket:
        sock = super()._new_conn()
        check_peer(sock, self.host)
        return sock


class CheckedHTTPPool(HTTPConnectionPool):
    ConnectionCls = CheckedHTTPConnection


class CheckedHTTPSPool(HTTPSConnectionPool):
    ConnectionCls = CheckedHTTPSConnection


class CheckedAdapter(HTTPAdapter):
    """Every connection's peer address is checked once connected: the address judged is the one data goes to."""

    def init_poolmanager(self, *args, **kwargs) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = {"http": CheckedHTTPPool, "https": CheckedHTTPSPool}
