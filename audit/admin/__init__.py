"""The audit app's admin pages, one module per workflow; importing each registers its pages, but for the job
page (`jobs`), which needs extraction's admin too and is registered by the project (portal/admin.py)."""

from audit.admin import evidence, jobs, ledger, people, retention, runs  # noqa: F401
