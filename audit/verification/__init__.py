"""Verification runs: stored files re-hashed, signed records re-checked, the ledger proved whole; findings recorded."""
