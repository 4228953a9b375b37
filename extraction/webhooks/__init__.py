"""Signed webhooks to service accounts: `events` (the rows), `recording` (a transition's events), `signing`
(Standard Webhooks), `delivery` (one try, its retry, the re-drive), `admin`. Nothing is imported here, so the models
load with the app's models before the modules that use them.
"""
