"""Evidence packages: the zip an outside auditor checks offline, with the verifier inside."""
