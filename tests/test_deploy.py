"""The production guide's files (deploy/) agree with the code: the commands they run exist, the queues and stop
timeouts they give are the product's, `systemd-analyze verify` and `nginx -t` accept them (where installed)."""

import configparser
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import get_commands

from core.processes import ROOT

DEPLOY = ROOT / "deploy"
UNITS = sorted((DEPLOY / "systemd").glob("*.service"))
NGINX = DEPLOY / "nginx" / "pagetrail.conf"
INSTALLED = "/opt/pagetrail"  # where the units and the guide install the checkout


def unit(path: Path) -> configparser.ConfigParser:
    parser = configparser.ConfigParser(strict=False, interpolation=None, comment_prefixes=("#",))
    parser.optionxform = str  # type: ignore[assignment,method-assign]  (systemd's keys are case-sensitive)
    parser.read(path)
    return parser


def exec_start(path: Path) -> list[str]:
    return shlex.split(unit(path)["Service"]["ExecStart"].replace(INSTALLED, str(ROOT)))


def test_there_is_a_unit_for_the_web_server_and_each_cluster_role():
    assert [u.name for u in UNITS] == [f"pagetrail-{name}.service" for name in ("intake", "jobs", "previews", "web")]
    assert {unit(u)["Service"].get("Environment", "").removeprefix("PAGETRAIL_CLUSTER=") for u in UNITS} == {
        *settings.PAGETRAIL_CLUSTER_QUEUES,
        "",
    }


def test_each_cluster_unit_runs_the_qcluster_command_and_waits_longer_than_the_cluster_takes_to_stop():
    for path in UNITS:
        if path.name == "pagetrail-web.service":
            continue
        command, service = exec_start(path), unit(path)["Service"]
        assert command[1:] == [str(ROOT / "manage.py"), "qcluster"] and Path(command[1]).is_file()
        assert "qcluster" in get_commands()
        assert service["KillSignal"] == "SIGTERM"  # the signal extraction/cluster_stop.py stops on within its bound
        stop_bound = settings.PAGETRAIL_STOP_GRACE_SECONDS + settings.PAGETRAIL_STOP_MARGIN_SECONDS
        assert int(service["TimeoutStopSec"]) > stop_bound
        assert service["RestartPreventExitStatus"] == "3"  # qcluster's EXIT_REFUSED: restarting cannot help


def test_the_web_unit_runs_gunicorn_with_the_checked_in_configuration_and_outwaits_its_graceful_stop():
    path = DEPLOY / "systemd" / "pagetrail-web.service"
    command, service = exec_start(path), unit(path)["Service"]
    assert Path(command[0]).name == "gunicorn" and command[1:] == [
        "-c",
        str(ROOT / "portal/gunicorn.conf.py"),
        "portal.wsgi",
    ]
    assert Path(command[2]).is_file() and (ROOT / "portal" / "wsgi.py").is_file()
    graceful = int(re.search(r"^graceful_timeout = (\d+)", Path(command[2]).read_text(), re.M)[1])  # type: ignore[index]
    assert service["KillSignal"] == "SIGTERM" and int(service["TimeoutStopSec"]) > graceful


@pytest.mark.skipif(not shutil.which("systemd-analyze"), reason="systemd-analyze is not installed here")
def test_systemd_accepts_every_unit(tmp_path):
    """As installed: the checkout, its .venv and an environment file where the units expect them (here, this one)."""
    (tmp_path / "pagetrail.env").write_text("")
    for path in UNITS:
        text = (
            path.read_text()
            .replace(INSTALLED, str(ROOT))
            .replace("/etc/pagetrail.env", str(tmp_path / "pagetrail.env"))
        )
        if not (ROOT / ".venv" / "bin" / "gunicorn").exists():
            text = text.replace(f"{ROOT}/.venv/bin/gunicorn", shutil.which("true") or "/bin/true")
        text = re.sub(r"^(User|Group)=.*$", r"\1=root", text, flags=re.M)  # no pagetrail account on this machine
        (tmp_path / path.name).write_text(text)
    checked = subprocess.run(
        ["systemd-analyze", "verify", *sorted(str(p) for p in tmp_path.glob("*.service"))],
        capture_output=True,
        text=True,
    )
    assert (checked.returncode, checked.stderr) == (0, "")  # a misspelt key or signal is only a warning on stderr


def nginx_values(name: str) -> list[str]:
    return re.findall(rf"^\s*{name}\s+([^;]+);", NGINX.read_text(), re.M)


def size(value: str) -> int:
    units = {"k": 1024, "m": 1024**2, "g": 1024**3}
    return int(value[:-1]) * units[value[-1].lower()] if value[-1].isalpha() else int(value)


def test_the_proxy_takes_the_largest_upload_buffers_it_and_tells_the_portal_it_was_tls():
    assert size(nginx_values("client_max_body_size")[0]) > settings.PAGETRAIL_MAX_UPLOAD_BYTES
    assert nginx_values("proxy_request_buffering") == ["on"]  # sync gunicorn workers never wait on a slow client
    assert "X-Forwarded-Proto $scheme" in nginx_values("proxy_set_header")
    assert settings.SECURE_PROXY_SSL_HEADER == ("HTTP_X_FORWARDED_PROTO", "https") or not settings.SECURE_SSL_REDIRECT
    assert int(nginx_values("proxy_read_timeout")[0].rstrip("s")) > int(
        re.search(r'PAGETRAIL_WEB_TIMEOUT", (\d+)', (ROOT / "portal/gunicorn.conf.py").read_text())[1]  # type: ignore[index]
    )
    [upstream] = nginx_values("server")[:1]
    assert upstream.split()[0] == "127.0.0.1:8000"  # gunicorn's default PAGETRAIL_WEB_BIND


def test_the_proxy_serves_static_root_under_static_url():
    [alias] = nginx_values("alias")
    assert alias.rstrip("/") == "/var/lib/pagetrail/static"  # STATIC_ROOT with PAGETRAIL_DATA_DIR=/var/lib/pagetrail
    assert settings.STATIC_ROOT == settings.DATA_DIR / "static" and settings.STATIC_URL.strip("/") == "static"
    headers = " ".join(nginx_values("add_header"))
    assert f'Referrer-Policy "{settings.SECURE_REFERRER_POLICY}"' in headers
    assert f'X-Frame-Options "{settings.X_FRAME_OPTIONS}"' in headers and "nosniff" in headers


@pytest.mark.skipif(not shutil.which("nginx"), reason="nginx is not installed here")
def test_nginx_accepts_the_site(tmp_path):
    """`nginx -t` on the site as included by a minimal main configuration, with a throwaway certificate."""
    cert, key = self_signed(tmp_path)
    site = NGINX.read_text().replace("/etc/ssl/pagetrail/fullchain.pem", str(cert))
    (tmp_path / "site.conf").write_text(site.replace("/etc/ssl/pagetrail/privkey.pem", str(key)))
    (tmp_path / "nginx.conf").write_text(
        f"pid {tmp_path}/nginx.pid;\nerror_log {tmp_path}/error.log;\nevents {{}}\n"
        f"http {{\n  access_log off;\n  client_body_temp_path {tmp_path}/body;\n  include {tmp_path}/site.conf;\n}}\n"
    )
    checked = subprocess.run(
        ["nginx", "-t", "-p", str(tmp_path), "-c", str(tmp_path / "nginx.conf"), "-e", str(tmp_path / "error.log")],
        capture_output=True,
        text=True,
    )
    assert checked.returncode == 0, checked.stderr
    assert "syntax is ok" in checked.stderr and "[warn]" not in checked.stderr, checked.stderr


def self_signed(directory: Path) -> tuple[Path, Path]:
    from datetime import UTC, datetime, timedelta

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "pagetrail.acme.example")])
    now = datetime.now(UTC)
    builder = x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
    certificate = builder.serial_number(1).not_valid_before(now).not_valid_after(now + timedelta(days=1))
    cert_path, key_path = directory / "fullchain.pem", directory / "privkey.pem"
    cert_path.write_bytes(certificate.sign(key, hashes.SHA256()).public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return cert_path, key_path


def test_the_guide_names_every_deploy_file_and_only_management_commands_that_exist():
    guide = (ROOT / "docs" / "production.md").read_text()
    assert [u.name for u in UNITS if u.name not in guide] == [] and "deploy/nginx/pagetrail.conf" in guide
    named = set(re.findall(r"manage\.py ([a-z_]+)", guide))
    assert {"createsuperuser", "mfa_enrolment_code", "collectstatic", "verify_manifests", "recover_ledger"} <= named
    assert sorted(named - set(get_commands())) == []
