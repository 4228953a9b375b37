"""PDF values as pikepdf gives them: a boolean as a Python bool, an integer as a Python int (never a bool)."""

from typing import TypeGuard


def is_true(value: object) -> bool:
    """A PDF boolean that is true; anything else (absent, false, a name, a number) is not."""
    return value is True


def is_int(value: object) -> TypeGuard[int]:
    """A PDF integer: an int, and not a bool (a PDF boolean is not a number)."""
    return type(value) is int
