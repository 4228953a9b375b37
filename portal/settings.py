"""Pagetrail settings.

With no environment variables this is the embedded profile: SQLite, the django-q2 ORM broker,
file-system storage under one data dir, the self-hosted extractor. Production changes
environment variables only (docs/configuration.md lists them all).
"""

import base64
import secrets
import zoneinfo
from datetime import timedelta
from pathlib import Path
from typing import Any

import environ
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent

env = environ.Env()

DATA_DIR = Path(env.str("PAGETRAIL_DATA_DIR", default=str(BASE_DIR / "var"))).resolve()


def local_secret(name: str, generate=lambda: secrets.token_urlsafe(48)) -> str:
    """A random secret kept in the data dir, so the embedded profile needs no configuration.

    Production sets the corresponding environment variable instead.
    """
    path = DATA_DIR / "secrets" / name
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        path.write_text(generate())
        path.chmod(0o600)
    return path.read_text().strip()


# Several hosts share a queue or stores: every secret they must agree on is then set, never generated per host.
SHARED_DEPLOYMENT = bool(env.str("REDIS_URL", default="") or env.str("PAGETRAIL_INPUT_BUCKET", default=""))
MISSING_SHARED_SECRETS: list[str] = []


def shared_secret(name: str, file_name: str, generate=lambda: secrets.token_urlsafe(48), needed: bool = True) -> str:
    """A secret every host must hold alike: from the environment; generated into the data dir only on one host."""
    value = env.str(name, default="")
    if value or not needed:
        return value
    if SHARED_DEPLOYMENT:
        MISSING_SHARED_SECRETS.append(name)
        return ""
    return local_secret(file_name, generate)


DEBUG = env.bool("PAGETRAIL_DEBUG", default=False)
SECRET_KEY = shared_secret("SECRET_KEY", "django_secret_key")
ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["127.0.0.1", "localhost"])
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    # Before django_q and staticfiles: its `qcluster` checks the extractor versions, then runs django_q's; its
    # `runserver` serves /static/ with the portal's security headers (core/static_files.py).
    "extraction",
    "django.contrib.staticfiles",
    "django_q",
    "ninja",  # so /api/v1/docs serves django-ninja's bundled Swagger UI from our static files, not from a CDN
    "axes",
    "django_otp",
    "django_otp.plugins.otp_totp",
    "audit",
    "portal",  # its models: enrolment codes and recovery codes (portal/models.py); its admin adds the user actions
]

MIDDLEWARE = [
    "portal.health.HealthMiddleware",  # first: a load balancer's /healthz and /readyz, by address, over plain HTTP
    "portal.api_edges.ApiEdgesMiddleware",  # then a request id, HEAD and JSON on every answer under /api/
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django_otp.middleware.OTPMiddleware",
    "core.actor.ActorMiddleware",  # after authentication: access changes record who made them
    "portal.mfa.RequireSecondFactorMiddleware",
    "portal.time_zones.UserTimeZoneMiddleware",  # the reader's own zone, where they chose one
    "portal.admin_queries.AdminQueryMiddleware",  # lookups in a list's address that would fail in the database
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "csp.middleware.CSPMiddleware",
    # Refuses an oversized body from its headers: nothing before it reads the body, and its pages get the headers above.
    "portal.bodies.BoundedBodyMiddleware",
    # Refuses an upload from anyone who may not upload (and a wrong CSRF header) before CsrfViewMiddleware reads it.
    "portal.upload_gate.UploadGateMiddleware",
    "axes.middleware.AxesMiddleware",  # last, as django-axes asks: it answers a locked-out login
]

ROOT_URLCONF = "portal.urls"
WSGI_APPLICATION = "portal.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# Behind a TLS-terminating proxy in production: `manage.py check --deploy` passes with PAGETRAIL_HTTPS=true.
if env.bool("PAGETRAIL_HTTPS", default=False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_SSL_REDIRECT = True
    SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = env.int("PAGETRAIL_HSTS_SECONDS", default=31_536_000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = env.bool("PAGETRAIL_HSTS_PRELOAD", default=True)

DATABASES = {
    "default": env.db_url("DATABASE_URL", default=f"sqlite:///{DATA_DIR / 'pagetrail.sqlite3'}"),
}
# django-q2 closes "old" connections around every enqueue, poll and result: with persistent
# connections that is a no-op instead of a reconnect each time (a third of an enqueue on SQLite).
# django-q2 closes all connections itself before it forks a worker.
DATABASES["default"]["CONN_MAX_AGE"] = env.int("PAGETRAIL_DB_CONN_MAX_AGE", default=600)
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # The web server and the worker write concurrently: WAL lets readers go on while one
    # writer commits, IMMEDIATE takes the write lock up front instead of failing mid-transaction.
    DATABASES["default"]["OPTIONS"] = {
        "timeout": 30,
        "transaction_mode": "IMMEDIATE",
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
    DATABASES["default"]["TEST"] = {"NAME": str(DATA_DIR / "test.sqlite3")}

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
# --- Login defences (docs/login-defences.md). ---
# django-axes counts failed logins first: after PAGETRAIL_LOGIN_FAILURE_LIMIT failures for one username from one
# address, that pair is refused (even with the right password) for the cool-off; `manage.py axes_reset_username`
# lifts it sooner. Username and address together, so a stranger guessing cannot lock a colleague out from elsewhere.
AUTHENTICATION_BACKENDS = ["axes.backends.AxesStandaloneBackend", "django.contrib.auth.backends.ModelBackend"]
AXES_FAILURE_LIMIT = env.int("PAGETRAIL_LOGIN_FAILURE_LIMIT", default=5)
AXES_COOLOFF_TIME = timedelta(minutes=env.int("PAGETRAIL_LOGIN_COOLOFF_MINUTES", default=15))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "login_locked_out.html"
# Reverse proxies in front of the portal that append to X-Forwarded-For (0: clients connect directly).
PAGETRAIL_PROXY_COUNT = env.int("PAGETRAIL_PROXY_COUNT", default=0)
AXES_CLIENT_IP_CALLABLE = "portal.clients.client_address"
# A second factor (TOTP, enrolled at /account/two-factor/) is required of superusers and retention approvers when
# this is on, and enrolling then takes an enrolment code another administrator issued (portal/enrolment.py);
# everyone with an enrolled device is asked for a code at login either way.
PAGETRAIL_REQUIRE_MFA = env.bool("PAGETRAIL_REQUIRE_MFA", default=SHARED_DEPLOYMENT)
OTP_TOTP_ISSUER = env.str("PAGETRAIL_MFA_ISSUER", default="Pagetrail")
# The admin's TOTP device pages never show a device's key or QR code: an administrator could copy another's factor.
OTP_ADMIN_HIDE_SENSITIVE_DATA = True
# A staff session ends after this many seconds however active it is, and when the browser closes.
SESSION_COOKIE_AGE = env.int("SESSION_COOKIE_AGE", default=8 * 3600)
SESSION_EXPIRE_AT_BROWSER_CLOSE = env.bool("SESSION_EXPIRE_AT_BROWSER_CLOSE", default=True)
# Scripts only from our own static files, never inline: an injected <script> or onclick= does not run.
# Inline styles stay allowed (the admin's own templates use style attributes; a style cannot run code).
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'", "'unsafe-inline'"],
        "img-src": ["'self'", "data:"],
        "connect-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    }
}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
# The zone every time in the portal is shown in, named beside it ("2026-12-02 15:28:46 CET"); the API and exports
# give ISO 8601 with the offset whatever it is.
TIME_ZONE = env.str("PAGETRAIL_TIME_ZONE", default="UTC")
if TIME_ZONE not in zoneinfo.available_timezones():
    raise ImproperlyConfigured(f"PAGETRAIL_TIME_ZONE={TIME_ZONE!r} is not an IANA time zone (e.g. Europe/Zurich, UTC).")
USE_I18N = True
USE_TZ = True
FORMAT_MODULE_PATH = ["core.formats"]  # timestamps to the second (core/formats/en/formats.py)

STATIC_URL = "static/"
STATIC_ROOT = DATA_DIR / "static"
STATICFILES_DIRS = [BASE_DIR / "static"]  # the portal's own scripts (never inline: see CONTENT_SECURITY_POLICY)

# --- Storage: inputs and outputs never share a store; neither is served by a public URL. ---
INPUT_ROOT = DATA_DIR / "inputs"
OUTPUT_ROOT = DATA_DIR / "outputs"
TEMP_ROOT = Path(env.str("PAGETRAIL_TEMP_DIR", default=str(DATA_DIR / "temp"))).resolve()


def file_store(location: Path) -> dict:
    return {
        "BACKEND": "django.core.files.storage.FileSystemStorage",
        "OPTIONS": {
            "location": location,
            "base_url": None,
            "file_permissions_mode": 0o600,
            "directory_permissions_mode": 0o700,
        },
    }


def s3_store(bucket: str, prefix: str) -> dict:
    """A private bucket (or prefix): no public ACL, no overwrite, encrypted at rest, checksummed uploads.

    Files leave it only through permission-checked views or short-lived presigned URLs.
    """
    parameters = {"ChecksumAlgorithm": "SHA256"}
    if sse := env.str("PAGETRAIL_S3_SSE", default="AES256"):
        parameters["ServerSideEncryption"] = sse
    return {
        "BACKEND": "storages.backends.s3.S3Storage",
        "OPTIONS": {
            "bucket_name": bucket,
            "location": prefix,
            "default_acl": "private",
            "file_overwrite": False,
            "querystring_auth": True,
            "querystring_expire": env.int("PAGETRAIL_PRESIGNED_URL_SECONDS", default=300),
            "object_parameters": parameters,
            "endpoint_url": env.str("AWS_S3_ENDPOINT_URL", default="") or None,
            "region_name": env.str("AWS_S3_REGION_NAME", default="") or None,
        },
    }


INPUT_BUCKET = env.str("PAGETRAIL_INPUT_BUCKET", default="")
OUTPUT_BUCKET = env.str("PAGETRAIL_OUTPUT_BUCKET", default="")
INPUT_PREFIX = env.str("PAGETRAIL_INPUT_PREFIX", default="inputs")
OUTPUT_PREFIX = env.str("PAGETRAIL_OUTPUT_PREFIX", default="outputs")
if (INPUT_BUCKET, INPUT_PREFIX) == (OUTPUT_BUCKET, OUTPUT_PREFIX) and INPUT_BUCKET:
    raise ImproperlyConfigured("Inputs and outputs must not share a store: use two buckets or two prefixes.")

STORAGES: dict[str, dict[str, Any]] = {
    "default": {
        "BACKEND": "django.core.files.storage.FileSystemStorage",
        "OPTIONS": {"location": DATA_DIR / "media", "base_url": None},
    },
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    "inputs": s3_store(INPUT_BUCKET, INPUT_PREFIX) if INPUT_BUCKET else file_store(INPUT_ROOT),
    "outputs": s3_store(OUTPUT_BUCKET, OUTPUT_PREFIX) if OUTPUT_BUCKET else file_store(OUTPUT_ROOT),
}

# Uploads spool into the private temp area, never the system-wide /tmp: a file part that a request is reading into a
# directory of its own, which the request empties as it ends and sweep_temp clears of what a killed one left.
TEMP_ROOT.mkdir(parents=True, exist_ok=True, mode=0o700)
FILE_UPLOAD_TEMP_DIR = str(TEMP_ROOT / "requests")
Path(FILE_UPLOAD_TEMP_DIR).mkdir(exist_ok=True, mode=0o700)
FILE_UPLOAD_MAX_MEMORY_SIZE = 2 * 1024 * 1024
FILE_UPLOAD_HANDLERS = [
    "extraction.uploads.SizeLimitedUploadHandler",
    "django.core.files.uploadhandler.MemoryFileUploadHandler",
    "django.core.files.uploadhandler.TemporaryFileUploadHandler",
]

# --- Intake limits (checked from the bytes, before any job exists). ---
PAGETRAIL_MAX_UPLOAD_BYTES = env.int("PAGETRAIL_MAX_UPLOAD_BYTES", default=100 * 1024**2)
# Every route but the two uploads takes no file: its whole body (and an upload's form fields) stays below this.
PAGETRAIL_MAX_FORM_BYTES = env.int("PAGETRAIL_MAX_FORM_BYTES", default=1024**2)
DATA_UPLOAD_MAX_MEMORY_SIZE = PAGETRAIL_MAX_FORM_BYTES
PAGETRAIL_MAX_PAGES = env.int("PAGETRAIL_MAX_PAGES", default=2000)
PAGETRAIL_MAX_IMAGE_PIXELS = env.int("PAGETRAIL_MAX_IMAGE_PIXELS", default=100_000_000)
PAGETRAIL_MAX_STREAM_BYTES = env.int("PAGETRAIL_MAX_STREAM_BYTES", default=512 * 1024**2)
PAGETRAIL_CHILD_CPU_SECONDS = env.int("PAGETRAIL_CHILD_CPU_SECONDS", default=60)
PAGETRAIL_CHILD_MEMORY_BYTES = env.int("PAGETRAIL_CHILD_MEMORY_BYTES", default=2 * 1024**3)
PAGETRAIL_CHILD_WALL_SECONDS = env.int("PAGETRAIL_CHILD_WALL_SECONDS", default=120)
# How long a request with an Idempotency-Key holds its key before a retry may take it over (it died unanswered).
PAGETRAIL_IDEMPOTENCY_LEASE_SECONDS = env.int("PAGETRAIL_IDEMPOTENCY_LEASE_SECONDS", default=300)
# A service-account token is valid this long from issue; issuing a new one leaves the older ones valid
# for the overlap at most, so the upstream service can switch without downtime.
PAGETRAIL_TOKEN_DAYS = env.int("PAGETRAIL_TOKEN_DAYS", default=90)
PAGETRAIL_TOKEN_OVERLAP_DAYS = env.int("PAGETRAIL_TOKEN_OVERLAP_DAYS", default=7)
# A warm child reads this many PDFs before it is replaced; 1 gives every PDF a fresh process.
PAGETRAIL_CHILD_REUSE = env.int("PAGETRAIL_CHILD_REUSE", default=1000)
# The intake policy's changes to its defaults (extraction/intake/policy.py, docs/pipeline.md), per kind of finding:
# "submit_form=refuse,uri=flag". A change is a new policy version at the next decision, in the activity record.
PAGETRAIL_INTAKE_POLICY = env.str("PAGETRAIL_INTAKE_POLICY", default="")
# Each PDF attached inside an accepted input is submitted as a bundle of its own, linked to its parent.
PAGETRAIL_SUBMIT_ATTACHED_PDFS = env.bool("PAGETRAIL_SUBMIT_ATTACHED_PDFS", default=False)

# --- Jobs and workers. ---
PAGETRAIL_PROVIDER = env.str("PAGETRAIL_PROVIDER", default="local")
# A worker whose extractor or library versions differ from the ones another host of the deployment recorded
# refuses to start (extraction/worker_versions.py); true lets it, for the length of a rolling upgrade.
PAGETRAIL_ALLOW_MIXED_EXTRACTORS = env.bool("PAGETRAIL_ALLOW_MIXED_EXTRACTORS", default=False)
PAGETRAIL_CLAIM_LEASE_SECONDS = env.int("PAGETRAIL_CLAIM_LEASE_SECONDS", default=300)
# After SIGTERM a worker hands back what it holds (extraction/worker_stop.py); one still busy this long after it
# (a provider call hanging up to its read timeout) releases its claim and exits. Its cluster's master waits this
# long plus PAGETRAIL_STOP_MARGIN_SECONDS for the rest, then kills what is left: under a service manager's 10 s.
PAGETRAIL_STOP_GRACE_SECONDS = env.float("PAGETRAIL_STOP_GRACE_SECONDS", default=5.0)
PAGETRAIL_STOP_MARGIN_SECONDS = env.float("PAGETRAIL_STOP_MARGIN_SECONDS", default=3.0)
# Each qcluster's master reports every quarter of this; one silent longer opens a cluster_silent alert naming it
# (extraction/cluster_heartbeat.py), cleared when it reports again.
PAGETRAIL_CLUSTER_SILENT_SECONDS = env.float("PAGETRAIL_CLUSTER_SILENT_SECONDS", default=120.0)
# /readyz: each probe's connect and read timeouts (a part that accepts and never answers fails, portal/health.py).
PAGETRAIL_READY_TIMEOUT_SECONDS = env.float("PAGETRAIL_READY_TIMEOUT_SECONDS", default=2.0)
PAGETRAIL_JOB_DEADLINE_SECONDS = env.int("PAGETRAIL_JOB_DEADLINE_SECONDS", default=3600)
PAGETRAIL_REQUEUE_AFTER_SECONDS = env.int("PAGETRAIL_REQUEUE_AFTER_SECONDS", default=120)
PAGETRAIL_RECONCILE_EVERY_MINUTES = env.int("PAGETRAIL_RECONCILE_EVERY_MINUTES", default=1)
# Page previews (or a queued verification run) without progress this long are asked for again by the reconciler: the
# queue lost their task. Above a batch's worst case (50 pages, each batch within PAGETRAIL_CHILD_WALL_SECONDS).
PAGETRAIL_PREVIEWS_OVERDUE_MINUTES = env.int("PAGETRAIL_PREVIEWS_OVERDUE_MINUTES", default=10)
PAGETRAIL_CHECKPOINT_EVERY_MINUTES = env.int("PAGETRAIL_CHECKPOINT_EVERY_MINUTES", default=60)
# The transparency log's name in its signed checkpoints (docs/transparency-log.md): unique per deployment.
PAGETRAIL_LOG_ORIGIN = env.str("PAGETRAIL_LOG_ORIGIN", default="pagetrail.invalid/evidence-log")
# The witnesses asked to cosign each new checkpoint (C2SP tlog-witness; docs/transparency-log.md): entries split by
# ";" or newlines, each "NAME URL VKEY [VKEY ...]" split by spaces (a name of ours, the witness's submission prefix,
# its verifier keys). Checked at start (system checks audit.E010, audit.E011). Unset: no witnesses are asked.
PAGETRAIL_WITNESSES = [
    entry.split() for entry in env.str("PAGETRAIL_WITNESSES", default="").replace("\n", ";").split(";") if entry.strip()
]
# How many witnesses must cosign a checkpoint; below it after PAGETRAIL_WITNESS_TRIES tries an alert opens.
PAGETRAIL_WITNESS_QUORUM = env.int("PAGETRAIL_WITNESS_QUORUM", default=1)
PAGETRAIL_WITNESS_TRIES = env.int("PAGETRAIL_WITNESS_TRIES", default=5)
# An RFC 3161 Time-Stamping Authority for each log checkpoint; unset: no timestamps.
PAGETRAIL_TSA_URL = env.str("PAGETRAIL_TSA_URL", default="")
# The TSA's certificate (a PEM file) that verification runs check the timestamps against; unset: not checked.
PAGETRAIL_TSA_CERTIFICATE = env.str("PAGETRAIL_TSA_CERTIFICATE", default="")
# S3 Object Lock on manifests, log checkpoints and timestamps (GOVERNANCE or COMPLIANCE; unset: none), and how
# long to lock what no retention window bounds (docs/transparency-log.md).
PAGETRAIL_OBJECT_LOCK_MODE = env.str("PAGETRAIL_OBJECT_LOCK_MODE", default="")
PAGETRAIL_OBJECT_LOCK_DAYS = env.int("PAGETRAIL_OBJECT_LOCK_DAYS", default=3650)
PAGETRAIL_VERIFY_EVERY_MINUTES = env.int("PAGETRAIL_VERIFY_EVERY_MINUTES", default=24 * 60)
PAGETRAIL_RETENTION_EVERY_MINUTES = env.int("PAGETRAIL_RETENTION_EVERY_MINUTES", default=60)
# A first retention policy with a window shorter than this shows what it would delete before it can be approved.
PAGETRAIL_RETENTION_MIN_DAYS = env.int("PAGETRAIL_RETENTION_MIN_DAYS", default=30)

# --- The upstream API: requests per service account (django-ninja throttling, e.g. "120/m"): submissions, and the
# reads that poll them, each in a budget of its own so polling never uses up the room to submit. ---
PAGETRAIL_API_RATE = env.str("PAGETRAIL_API_RATE", default="120/m")
PAGETRAIL_API_READ_RATE = env.str("PAGETRAIL_API_READ_RATE", default="600/m")
PAGETRAIL_METRICS_TOKEN = env.str("PAGETRAIL_METRICS_TOKEN", default="")  # /metrics answers 401 without it

# --- The managed provider (Infrai). The key is a secret: it only ever goes into one request header. ---
INFRAI_BASE_URL = env.str("INFRAI_BASE_URL", default="http://127.0.0.1:8765")
INFRAI_API_KEY = env.str("INFRAI_API_KEY", default="")
INFRAI_EXTRACTOR_VERSION = env.str("INFRAI_EXTRACTOR_VERSION", default="1")
INFRAI_CONNECT_TIMEOUT = env.float("INFRAI_CONNECT_TIMEOUT", default=5.0)
INFRAI_READ_TIMEOUT = env.float("INFRAI_READ_TIMEOUT", default=30.0)
# Waiting: full-jitter backoff from BASE up to CAP; Retry-After honoured up to its own cap; a task
# polls in place for at most POLL_BUDGET seconds, then hands the job back to the scheduler.
PAGETRAIL_BACKOFF_BASE_SECONDS = env.float("PAGETRAIL_BACKOFF_BASE_SECONDS", default=1.0)
PAGETRAIL_BACKOFF_CAP_SECONDS = env.float("PAGETRAIL_BACKOFF_CAP_SECONDS", default=60.0)
PAGETRAIL_RETRY_AFTER_CAP_SECONDS = env.float("PAGETRAIL_RETRY_AFTER_CAP_SECONDS", default=300.0)
PAGETRAIL_POLL_BUDGET_SECONDS = env.float("PAGETRAIL_POLL_BUDGET_SECONDS", default=20.0)
PAGETRAIL_DOWNLOAD_TRIES = env.int("PAGETRAIL_DOWNLOAD_TRIES", default=3)

# --- Signing: manifests, case maps and checkpoints are signed with Ed25519 (audit/ledger/signing.py); the public
# keys are published. The HMAC keys only verify what was signed before Ed25519 (key id in each manifest). ---
PAGETRAIL_SIGNING_KEY = shared_secret(
    "PAGETRAIL_SIGNING_KEY", "signing_key", lambda: base64.b64encode(secrets.token_bytes(32)).decode()
)  # 32-byte seed
# Retired Ed25519 public keys (base64, as /signing-keys.json shows them), comma-separated: verification
# trusts these and the signing key's own, never a key found only in the database.
PAGETRAIL_SIGNING_RETIRED_KEYS = env.list("PAGETRAIL_SIGNING_RETIRED_KEYS", default=[])
# The ML-DSA-44 twin of the signing key (base64 of a 32-byte seed, the same command makes one): every record and
# checkpoint is signed with both. Optional on a shared deployment, so an upgrade starts before it is set (records
# then carry Ed25519 alone, which --require-post-quantum refuses); retired public keys (base64), comma-separated.
PAGETRAIL_MLDSA_SIGNING_KEY = shared_secret(
    "PAGETRAIL_MLDSA_SIGNING_KEY",
    "mldsa_signing_key",
    lambda: base64.b64encode(secrets.token_bytes(32)).decode(),
    needed=not SHARED_DEPLOYMENT,
)
PAGETRAIL_MLDSA_SIGNING_RETIRED_KEYS = env.list("PAGETRAIL_MLDSA_SIGNING_RETIRED_KEYS", default=[])
PAGETRAIL_MANIFEST_KEY_ID = env.str("PAGETRAIL_MANIFEST_KEY_ID", default="local-1")
# Only verifies: a shared deployment without HMAC-signed manifests from before Ed25519 needs none.
PAGETRAIL_MANIFEST_KEY = shared_secret("PAGETRAIL_MANIFEST_KEY", "manifest_key", needed=not SHARED_DEPLOYMENT)
# Retired keys, still used to verify what they signed: "old-id=key,older-id=key".
PAGETRAIL_MANIFEST_OLD_KEYS = env.dict("PAGETRAIL_MANIFEST_OLD_KEYS", default={})

# --- Alerts: email through Django's mail settings, and an optional HMAC-signed webhook. ---
PAGETRAIL_BASE_URL = env.str("PAGETRAIL_BASE_URL", default="http://127.0.0.1:8000")
EMAIL_CONFIG = env.email_url("EMAIL_URL", default="consolemail://")
globals().update(EMAIL_CONFIG)  # EMAIL_BACKEND, EMAIL_HOST, ... from one URL
if EMAIL_CONFIG["EMAIL_BACKEND"] == "django.core.mail.backends.console.EmailBackend":
    EMAIL_BACKEND = "core.mail.EmailBackend"  # the same on stderr: stdout is a command's --json document
DEFAULT_FROM_EMAIL = env.str("DEFAULT_FROM_EMAIL", default="pagetrail@localhost")
PAGETRAIL_ALERT_DEFAULT_EMAILS = env.list("PAGETRAIL_ALERT_DEFAULT_EMAILS", default=[])
# Per kind, several addresses separated by ";": "verification_findings=a@x;b@x,job_unknown=ops@x"
PAGETRAIL_ALERT_EMAILS = env.dict("PAGETRAIL_ALERT_EMAILS", default={})
PAGETRAIL_ALERT_WEBHOOK_URL = env.str("PAGETRAIL_ALERT_WEBHOOK_URL", default="")
PAGETRAIL_ALERT_WEBHOOK_SECRET = shared_secret(
    "PAGETRAIL_ALERT_WEBHOOK_SECRET",
    "webhook_secret",
    needed=bool(PAGETRAIL_ALERT_WEBHOOK_URL) or not SHARED_DEPLOYMENT,
)
if MISSING_SHARED_SECRETS:
    raise ImproperlyConfigured(
        f"This deployment shares a queue or stores between hosts, so {', '.join(MISSING_SHARED_SECRETS)} must be set "
        "in the environment, the same on every host (a secret generated per host would differ between them)."
    )
PAGETRAIL_ALERT_WEBHOOK_TRIES = env.int("PAGETRAIL_ALERT_WEBHOOK_TRIES", default=5)

# --- Service accounts' webhooks (job.completed, job.failed, submission.refused; docs/api.md#webhooks): tries per
# event (or replay), full-jitter backoff between them, and one try's connect and read timeout. ---
PAGETRAIL_WEBHOOK_TRIES = env.int("PAGETRAIL_WEBHOOK_TRIES", default=8)
PAGETRAIL_WEBHOOK_BACKOFF_BASE_SECONDS = env.float("PAGETRAIL_WEBHOOK_BACKOFF_BASE_SECONDS", default=30.0)
PAGETRAIL_WEBHOOK_BACKOFF_CAP_SECONDS = env.float("PAGETRAIL_WEBHOOK_BACKOFF_CAP_SECONDS", default=3600.0)
PAGETRAIL_WEBHOOK_TIMEOUT_SECONDS = env.float("PAGETRAIL_WEBHOOK_TIMEOUT_SECONDS", default=10.0)
# Webhook signing secrets are sealed in the database under a key derived from this, or from SECRET_KEY when it is
# unset (core/sealed.py): every host alike. Set it to keep them readable across a SECRET_KEY change.
PAGETRAIL_SECRETS_KEY = env.str("PAGETRAIL_SECRETS_KEY", default="")
# Webhook URLs inside the deployment's network (loopback, private, link-local, cloud metadata) are refused at
# registration and at delivery (extraction/webhooks/addresses.py) unless this says a receiver there is expected.
PAGETRAIL_WEBHOOK_ALLOW_PRIVATE = env.bool("PAGETRAIL_WEBHOOK_ALLOW_PRIVATE", default=False)

REDIS_URL = env.str("REDIS_URL", default="")
Q_CLUSTER = {
    # Deployments sharing one Redis need different names (the name is the queue's key).
    "name": env.str("PAGETRAIL_QUEUE_NAME", default="pagetrail"),
    "workers": env.int("PAGETRAIL_WORKERS", default=2),
    # timeout below retry: a task still running is never handed to a second worker by the broker;
    # redelivery after a crash is harmless because every job transition is a guarded update.
    "timeout": env.int("PAGETRAIL_TASK_TIMEOUT", default=600),
    "retry": env.int("PAGETRAIL_TASK_RETRY", default=660),
    "max_attempts": 3,
    "ack_failures": True,
    "catch_up": False,
    # Successful tasks are not saved: the Job and its Attempts are the record. django-q2 also prunes
    # saved successes by reading up to save_limit rows on every save, a cost on every task. Failed tasks
    # are always saved (admin "Failed tasks").
    "save_limit": -1,
    "label": "Task queue",
}
# Page previews have a queue of their own, served by `PAGETRAIL_CLUSTER=previews manage.py qcluster`:
# rendering a 240-page bundle takes minutes of CPU, and jobs must never wait behind it.
PAGETRAIL_PREVIEW_QUEUE = f"{Q_CLUSTER['name']}-previews"
# Uploads are validated on a queue of their own too (`PAGETRAIL_CLUSTER=intake manage.py qcluster`): never in a
# web process, never behind extraction. The staged bytes wait in the temp dir of the host that received them, so
# with several web hosts each names its own queue (PAGETRAIL_INTAKE_QUEUE) and runs its intake cluster.
PAGETRAIL_INTAKE_QUEUE = env.str("PAGETRAIL_INTAKE_QUEUE", default=f"{Q_CLUSTER['name']}-intake")
# One validation: the child's wall clock, plus room to start it and store the input. The claim outlives the task,
# so the reconciler never re-drives a submission whose worker is still on it.
_INTAKE_TIMEOUT = PAGETRAIL_CHILD_WALL_SECONDS + 60
PAGETRAIL_INTAKE_LEASE_SECONDS = _INTAKE_TIMEOUT + 30
# A staged upload no pending submission owns, untouched this long, belongs to a request that died: swept.
PAGETRAIL_STAGED_GRACE_SECONDS = env.int("PAGETRAIL_STAGED_GRACE_SECONDS", default=300)
Q_CLUSTER["ALT_CLUSTERS"] = {
    PAGETRAIL_PREVIEW_QUEUE: {"workers": env.int("PAGETRAIL_PREVIEW_WORKERS", default=1)},
    PAGETRAIL_INTAKE_QUEUE: {
        "workers": env.int("PAGETRAIL_INTAKE_WORKERS", default=1),
        "timeout": _INTAKE_TIMEOUT,
        "retry": _INTAKE_TIMEOUT + 60,
    },
}
# Which queue this process's `qcluster` serves: jobs (the default), previews or intake. The queue's name is derived
# from PAGETRAIL_QUEUE_NAME (and PAGETRAIL_INTAKE_QUEUE) here, so a deployment that renames its queue cannot start a
# cluster on a queue of the old name (django-q2's Q_CLUSTER_NAME still works; a qcluster on a queue nothing fills
# warns at its start). Set per cluster process (its service unit), never in the web server's environment.
PAGETRAIL_CLUSTER = env.str("PAGETRAIL_CLUSTER", default="jobs")
PAGETRAIL_CLUSTER_QUEUES = {
    "jobs": Q_CLUSTER["name"],
    "previews": PAGETRAIL_PREVIEW_QUEUE,
    "intake": PAGETRAIL_INTAKE_QUEUE,
}
if PAGETRAIL_CLUSTER not in PAGETRAIL_CLUSTER_QUEUES:
    raise ImproperlyConfigured(f"PAGETRAIL_CLUSTER must be jobs, previews or intake, not {PAGETRAIL_CLUSTER!r}.")
if PAGETRAIL_CLUSTER != "jobs":
    _served = PAGETRAIL_CLUSTER_QUEUES[PAGETRAIL_CLUSTER]
    # What django-q2 does for Q_CLUSTER_NAME: the alternative cluster's options over the defaults, its queue served.
    Q_CLUSTER.update({**Q_CLUSTER["ALT_CLUSTERS"][_served], "cluster_name": _served})
# The API's rate limits count in this cache, so it is shared by every web process (gunicorn's workers) and every
# host: Redis in production, files in the data dir on the one host of the embedded profile (never a process's memory).
CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
        "LOCATION": str(DATA_DIR / "cache"),
        # Room for many callers: a full cache forgets a third of its counts at once.
        "OPTIONS": {"MAX_ENTRIES": 10_000},
    }
}
if REDIS_URL:
    Q_CLUSTER["redis"] = REDIS_URL
    CACHES["default"] = {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": REDIS_URL,
        "KEY_PREFIX": Q_CLUSTER["name"],
    }
else:
    Q_CLUSTER["orm"] = "default"
    # The ORM broker's pusher sleeps this long whenever it finds its queue empty (django-q2's default 0.2 s), so a
    # job submitted to an idle cluster waits up to that long to be picked up. Each poll is one indexed SELECT.
    Q_CLUSTER["poll"] = env.float("PAGETRAIL_QUEUE_POLL_SECONDS", default=0.05)

LOG_FORMAT = env.str("PAGETRAIL_LOG_FORMAT", default="plain")  # or "json": one JSON object a line
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {
        "context": {"()": "core.logs.ContextFilter"},
        "refusal": {"()": "core.logs.RefusalWithoutTraceback"},
    },
    "formatters": {
        "plain": {
            "format": (
                "%(asctime)s %(host)s %(levelname)s %(name)s [%(correlation_id).16s job=%(job_id)s%(request_tag)s] "
                "%(message)s"
            )
        },
        "json": {
            "()": "pythonjsonlogger.json.JsonFormatter",
            "fmt": "%(asctime)s %(levelname)s %(name)s %(correlation_id)s %(job_id)s %(request_id)s %(message)s "
            "%(host)s %(process)d",
            "rename_fields": {"asctime": "time", "levelname": "level", "name": "logger"},
        },
    },
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": LOG_FORMAT, "filters": ["context"]}},
    "root": {"handlers": ["console"], "level": env.str("PAGETRAIL_LOG_LEVEL", default="INFO")},
    # runserver's access log too (Django gives it a handler of its own): request lines are scrubbed like the rest.
    "loggers": {
        "pikepdf": {"level": "WARNING"},
        # Django's default configuration gives "django" a console handler of its own (under DEBUG) that scrubs nothing:
        # its lines reach the root's handler alone.
        "django": {"handlers": [], "level": "INFO"},
        "django.request": {"filters": ["refusal"]},  # PermissionDenied is logged with its traceback
        "django.server": {"handlers": ["console"], "level": "INFO", "propagate": False},
        # gunicorn's own logs (portal/gunicorn.conf.py hands gunicorn this whole configuration).
        "gunicorn.access": {"handlers": ["console"], "level": "INFO", "propagate": False},
        "gunicorn.error": {"handlers": ["console"], "level": "INFO", "propagate": False},
    },
}
