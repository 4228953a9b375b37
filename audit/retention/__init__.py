"""Retention: which policy version is in force, its four-eyes approval, enforcement with legal holds and WORM storage,
and the signed event of every deletion."""
