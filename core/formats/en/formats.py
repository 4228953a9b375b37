"""Timestamps to the second everywhere in the portal, with their time zone (Django's English default stops at the
minute, and two events a few seconds apart must read as two moments)."""

DATETIME_FORMAT = "Y-m-d H:i:s T"  # with its zone (PAGETRAIL_TIME_ZONE), which a reader elsewhere must see
SHORT_DATETIME_FORMAT = "Y-m-d H:i:s T"
DATE_FORMAT = "Y-m-d"
SHORT_DATE_FORMAT = "Y-m-d"
TIME_FORMAT = "H:i:s"
