"""The audit app's admin pages, one module per workflow; importing each registers its pages."""

from . import evidence, jobs, people, retention, runs  # noqa: F401
