"""Evidence packages: the zip an outside auditor checks offline, with the verifier inside; and lists as CSV or
JSON (lists.py)."""
