"""Pagetrail's benchmark: `python -m bench` (or `make bench`); see bench/__main__.py."""
