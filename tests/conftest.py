"""Shared test helpers: every test gets private stores and a temp area of its own."""

import pytest


@pytest.fixture(autouse=True)
def private_stores(tmp_path, settings):
    """Inputs, outputs and temp under this test's tmp_path (never the user's data dir)."""
    root = tmp_path / "data"
    settings.TEMP_ROOT = root / "temp"
    settings.STORAGES = {
        **settings.STORAGES,
        "inputs": {"BACKEND": "django.core.files.storage.FileSystemStorage",
                   "OPTIONS": {"location": root / "inputs", "base_url": None}},
        "outputs": {"BACKEND": "django.core.files.storage.FileSystemStorage",
                    "OPTIONS": {"location": root / "outputs", "base_url": None}},
    }
    return root
