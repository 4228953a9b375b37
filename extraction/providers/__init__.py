"""Provider registry: a name-to-dotted-path map picks the implementation."""

from django.utils.module_loading import import_string

from .base import JobReport, Provider, ProviderError, ReportedImage

PROVIDERS = {
    "local": "extraction.providers.local.LocalProvider",
    "infrai": "extraction.providers.infrai.InfraiProvider",
}


def get_provider(name: str) -> Provider:
    try:
        return import_string(PROVIDERS[name])()
    except KeyError:
        raise ProviderError("unknown_provider", f"No provider is called {name!r}.", permanent=True) from None


__all__ = ["JobReport", "Provider", "ProviderError", "ReportedImage", "get_provider", "PROVIDERS"]
