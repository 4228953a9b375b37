"""The one implementation of every evidence check: canonical JSON, signatures, signed notes, Merkle proofs,
RFC 3161 tokens and the evidence-package rules.

Django-free (the standard library and `cryptography` only): the portal's verification runs import it, and
every evidence package ships it as `verify_evidence.pyz`, built at export time from these very files
(`build.py`). Python 3.9 or newer, so an auditor's older interpreter runs what we ship.
"""
