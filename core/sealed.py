"""Secrets the portal must read back (webhook signing secrets) kept encrypted at rest, as Fernet tokens under a key
derived (HKDF-SHA256) from PAGETRAIL_SECRETS_KEY, or from SECRET_KEY when that is unset; SECRET_KEY_FALLBACKS still
open what they sealed, so rotating SECRET_KEY the way Django documents it loses nothing."""

import base64
import functools

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.conf import settings
from django.db import models

INFO = b"pagetrail sealed secrets v1"  # a key of its own: never the bytes Django signs sessions with


class Unreadable(Exception):
    """A sealed value no configured key opens: the key it was sealed under is gone (SECRET_KEY or
    PAGETRAIL_SECRETS_KEY changed without the old one kept as a fallback)."""


def fernet_key(material: str) -> bytes:
    derived = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=INFO).derive(material.encode())
    return base64.urlsafe_b64encode(derived)


@functools.cache
def _fernet(materials: tuple[str, ...]) -> MultiFernet:
    return MultiFernet([Fernet(fernet_key(m)) for m in materials])


def fernet() -> MultiFernet:
    """Seals with the first key; opens with any (the dedicated key, then SECRET_KEY and its fallbacks)."""
    dedicated = [settings.PAGETRAIL_SECRETS_KEY] if settings.PAGETRAIL_SECRETS_KEY else []
    return _fernet(tuple(dedicated + [settings.SECRET_KEY, *settings.SECRET_KEY_FALLBACKS]))


def seal(value: str) -> str:
    return fernet().encrypt(value.encode()).decode()


def unseal(token: str) -> str:
    try:
        return fernet().decrypt(token.encode()).decode()
    except InvalidToken:
        raise Unreadable(
            "A sealed secret opens under no configured key: restore the PAGETRAIL_SECRETS_KEY or SECRET_KEY it was "
            "sealed under (as SECRET_KEY_FALLBACKS), or issue a new secret."
        ) from None


class SealedCharField(models.CharField):
    """The value as it is in Python, sealed in its column. "" stays "" (nothing to hide, and `exclude(f="")` keeps
    working); a sealed value never equals another sealing of it, so nothing else can be looked up by it."""

    def from_db_value(self, value, expression, connection):
        return unseal(value) if value else value

    def get_prep_value(self, value):
        value = super().get_prep_value(value)
        return seal(value) if value else value
