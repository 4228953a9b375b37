"""The managed provider: Infrai's REST job API over `requests`.

Routes come from the pinned contract, never from guessing; every response is validated
against the pinned schemas, and a mismatch is a provider error, not a crash. The API key
lives in the session's headers only: it never reaches a message, a log line or the admin.
"""

import hashlib
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import requests
from django.conf import settings

from core import stored_inputs
from core.retry import parse_retry_after

from . import contract
from .base import Exchange, JobReport, Provider, ProviderError, ReportedImage

ROUTES = contract.load_pin()["capability"]["routes"]
TERMINAL = {"completed", "failed", "cancelled"}
_session: requests.Session | None = None


def session() -> requests.Session:
    """One session per process: connection reuse, TLS verification on, the key in one place."""
    global _session
    if _session is None:
        _session = requests.Session()
        _session.verify = True
        _session.headers["Authorization"] = f"Bearer {settings.INFRAI_API_KEY}"
        _session.headers["User-Agent"] = "pagetrail"
    return _session


class InfraiProvider(Provider):
    name = "infrai"
    extractor = "infrai"
    version = settings.INFRAI_EXTRACTOR_VERSION
    remote = True

    def __init__(self):
        self.base = settings.INFRAI_BASE_URL.rstrip("/") + "/"
        self.timeout = (settings.INFRAI_CONNECT_TIMEOUT, settings.INFRAI_READ_TIMEOUT)
        self.last = Exchange()

    def start(self, job) -> str:
        key = job.idempotency_key
        with stored_inputs.opened_input(job.bundle) as document:
            response = self._call(
                ROUTES["submit"],
                {},
                headers={"Idempotency-Key": key},
                data={"idempotency_key": key, "sha256": job.bundle.correlation_id},
                files={"document": ("bundle.pdf", document, "application/pdf")},
            )
        body = self._json(response, "submit_response")
        if body["idempotency_key"] != key:
            raise ProviderError(
                "contract_violation",
                "The provider answered for another idempotency key.",
                permanent=False,
                http_status=response.status_code,
            )
        return body["job_id"]

    def check(self, job, work_dir: Path) -> JobReport:
        response = self._call(ROUTES["get_job"], {"job_id": job.provider_job_id})
        body = self._json(response, "job")
        if body["status"] not in TERMINAL:
            return JobReport(state="running")
        error = body["error"] or {}
        return JobReport(
            state=body["status"],
            pages=body["pages"] or 0,
            assets=tuple(map(_reported_image, body["assets"])),
            warnings=tuple(_warning(w) for w in body["warnings"]),
            error_code=error.get("code", ""),
            error_message=error.get("message", ""),
            meta={"partial": body["partial"]},
        )

    def kept_download(self, asset: ReportedImage, work_dir: Path) -> Path | None:
        path = _download_path(asset, work_dir)
        return path if path.exists() else None  # renamed there only once its size and sha256 matched

    def fetch(self, job, asset: ReportedImage, work_dir: Path) -> Path:
        """Stream the asset to temp, hashing as it arrives; a short or altered download never leaves here."""
        url = urljoin(self.base, asset.key.lstrip("/"))
        if urlsplit(url).netloc != urlsplit(self.base).netloc:
            raise ProviderError("contract_violation", "An asset URL points outside the provider.", permanent=True)
        if (kept := self.kept_download(asset, work_dir)) is not None:
            return kept
        target = _download_path(asset, work_dir).with_suffix(".part")
        target.parent.mkdir(parents=True, exist_ok=True)
        response = self._send("GET", url, stream=True)
        digest, size = hashlib.sha256(), 0
        try:
            with response, open(target, "wb") as out:
                for chunk in response.iter_content(1024 * 1024):
                    digest.update(chunk)
                    size += len(chunk)
                    out.write(chunk)
        except requests.RequestException as exc:
            target.unlink(missing_ok=True)
            raise ProviderError(
                "download_failed",
                f"The download broke off ({type(exc).__name__}).",
                permanent=False,
                http_status=response.status_code,
            ) from None
        if size != asset.size or digest.hexdigest() != asset.sha256:
            target.unlink(missing_ok=True)
            raise ProviderError(
                "asset_mismatch",
                f"Downloaded {size} bytes that do not match the reported hash.",
                permanent=False,
                http_status=response.status_code,
            )
        return target.rename(target.with_suffix(""))

    def _call(self, route: dict, params: dict, **kwargs) -> requests.Response:
        return self._send(route["method"], urljoin(self.base, route["path"].format(**params).lstrip("/")), **kwargs)

    def _send(self, method: str, url: str, **kwargs) -> requests.Response:
        self.last = Exchange()
        try:
            response = session().request(method, url, timeout=self.timeout, **kwargs)
        except requests.Timeout:
            # The provider may have acted on it: an unknown outcome, retried with the same key.
            raise ProviderError("timeout", "The provider did not answer in time.", permanent=False) from None
        except requests.ConnectionError:
            raise ProviderError(
                "connection_error", "The provider could not be reached or dropped the connection.", permanent=False
            ) from None
        self.last = Exchange(response.status_code, parse_retry_after(response.headers.get("Retry-After")))
        if response.status_code >= 400:
            raise _error_for(response, self.last)
        return response

    def _json(self, response: requests.Response, schema: str) -> dict:
        try:
            body = response.json()
        except ValueError:
            body = None
        problems = contract.validate(body, schema) if body is not None else ["not JSON"]
        if problems:
            raise ProviderError(
                "contract_violation",
                f"The provider's answer breaks the pinned contract: {'; '.join(problems[:3])}.",
                permanent=False,
                http_status=response.status_code,
            )
        return body


def _error_for(response: requests.Response, exchange: Exchange) -> ProviderError:
    """429 and 5xx are worth retrying; other 4xx (authentication, validation) are final."""
    status = response.status_code
    try:
        error = response.json()["error"]
        code, message = str(error["code"]), str(error["message"])
    except (ValueError, KeyError, TypeError):
        code, message = f"http_{status}", f"The provider answered HTTP {status}."
    permanent = status < 500 and status not in (408, 409, 425, 429)
    return ProviderError(
        code, f"Provider: {message}", permanent=permanent, http_status=status, retry_after_s=exchange.retry_after_s
    )


def _download_path(asset: ReportedImage, work_dir: Path) -> Path:
    return work_dir / "downloads" / asset.sha256


def _reported_image(entry: dict) -> ReportedImage:
    return ReportedImage(
        key=entry["download_url"],
        sha256=entry["sha256"],
        size=entry["size"],
        content_type=entry["content_type"],
        width=entry["width"],
        height=entry["height"],
        placements=tuple((p["page"], p["index"]) for p in entry["placements"]),
    )


def _warning(entry: dict) -> str:
    return f"page {entry['page']}: {entry['message']}" if entry.get("page") else entry["message"]
