import os

import requests
from django.core.management.base import BaseCommand, CommandError

from extraction.providers.contract import diff_contract, load_pin

CAPABILITY = "pdf.extract_images"


class Command(BaseCommand):
    help = (
        "Compare the managed provider's discovery documents with the pinned contract; exit non-zero on "
        "drift or when the provider cannot be reached. The key comes from INFRAI_API_KEY."
    )

    def add_arguments(self, parser):
        parser.add_argument("--base-url", help="default: INFRAI_BASE_URL")
        parser.add_argument("--connect-timeout", type=float, default=5.0)
        parser.add_argument("--read-timeout", type=float, default=30.0)

    def handle(self, *args, **options):
        base_url = (options["base_url"] or os.environ.get("INFRAI_BASE_URL", "")).rstrip("/")
        key = os.environ.get("INFRAI_API_KEY", "")
        if not base_url:
            raise CommandError("No provider URL: pass --base-url or set INFRAI_BASE_URL.")
        if not key:
            raise CommandError("No API key: set INFRAI_API_KEY.")
        reader = Reader(base_url, key, (options["connect_timeout"], options["read_timeout"]))
        differences = diff_contract(reader.published(), load_pin())
        if not differences:
            self.stdout.write("contract matches the pin")
            return
        for difference in differences:
            self.stdout.write(difference)
        raise CommandError(
            f"The provider's contract differs from the pin in {len(differences)} places; "
            "update the adapter and the pin together."
        )


class Reader:
    """Reads the published documents through one session; failures become CommandErrors without the key."""

    def __init__(self, base_url: str, key: str, timeouts: tuple[float, float]):
        self.base_url, self.key, self.timeouts = base_url, key, timeouts
        self.session = requests.Session()
        self.session.headers["Authorization"] = f"Bearer {key}"

    def published(self) -> dict:
        """{"discovery": ..., "capability": ...} shaped like the pin; capability None if not offered."""
        discovery = self.get_json("/v1/discovery")
        capabilities = discovery.get("capabilities")
        entry = capabilities.get(CAPABILITY) if isinstance(capabilities, dict) else None
        href = entry.get("href") if isinstance(entry, dict) else None
        # Read where the provider says, never at a guessed path; but always under base_url, so that
        # a document naming another host cannot make us send it the key.
        return {"discovery": discovery, "capability": self.get_json(href) if isinstance(href, str) else None}

    def get_json(self, path: str) -> dict:
        url = self.base_url + "/" + path.lstrip("/")
        try:
            response = self.session.get(url, timeout=self.timeouts)
        except requests.RequestException as exc:
            raise CommandError(f"Cannot reach the provider at {url}: {self.scrub(exc)}") from None
        if response.status_code != 200:
            retry = response.headers.get("Retry-After")
            raise CommandError(
                f"The provider answered {response.status_code} for {url}"
                f"{f' (Retry-After {retry}s)' if retry else ''}: {self.scrub(response.text[:200])}"
            )
        try:
            document = response.json()
        except ValueError:
            raise CommandError(f"The provider's answer for {url} is not JSON.") from None
        if not isinstance(document, dict):
            raise CommandError(f"The provider's answer for {url} is not a JSON object.")
        return document

    def scrub(self, text) -> str:
        # A provider or a proxy could echo the key back; it must not reach a terminal or a log.
        return str(text).replace(self.key, "[key]")
