# Pagetrail: `make run` sets everything up and runs the portal with a worker (`make serve`: behind gunicorn);
# `make test` runs the suite, `make check` the quick loop (lint and the tests not marked slow).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
MANAGE := $(BIN)/python manage.py
STAMP  := $(VENV)/.installed
# The cluster serving page previews (their own queue, so jobs never wait behind them), at a lower CPU priority.
PREVIEWS := PAGETRAIL_CLUSTER=previews nice -n 10 $(MANAGE) qcluster
# The cluster validating uploads (their own queue: the web server never parses a PDF, and uploads never wait behind jobs).
INTAKE := PAGETRAIL_CLUSTER=intake $(MANAGE) qcluster

.PHONY: run run-managed serve test check install lock lint browser ocr clean bench fidelity evaluate-review

# Every dependency and extra at the version and hashes of requirements.lock, then the project itself
# (no dependencies of its own to fetch, no build environment to download); pip check proves the lock
# held everything pyproject.toml asks for.
$(STAMP): pyproject.toml requirements.lock
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --require-hashes -r requirements.lock
	$(BIN)/python -m pip install --quiet --no-deps --no-build-isolation -e .
	$(BIN)/python -m pip check
	touch $(STAMP)

install: $(STAMP)

# Upgrades requirements.lock on purpose: every package to its newest release within pyproject.toml's
# bounds, for Linux, macOS and Windows and every Python the project supports, with the hashes of every
# file; requirements-production.lock (no test tools) takes the same pins. LOCK_ARGS= keeps the current pins and only follows pyproject.toml; LOCK_ARGS='--upgrade-package
# pikepdf' upgrades one package. Then run `make test`: a changed output needs EXTRACTOR_VERSION bumped.
LOCK_ARGS ?= --upgrade
UV_LOCK := --universal --python-version 3.11 --generate-hashes --quiet --custom-compile-command 'make lock'
lock:
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	test -x $(BIN)/uv || $(BIN)/python -m pip install --quiet "$$(grep -o '^uv==[^ ]*' requirements.lock)"
	$(BIN)/uv pip compile pyproject.toml requirements-tools.in --all-extras $(UV_LOCK) $(LOCK_ARGS) -o requirements.lock
	$(BIN)/uv pip compile pyproject.toml requirements-tools.in --extra production $(UV_LOCK) \
	  -c requirements.lock -o requirements-production.lock
	$(BIN)/python -m tests.lockfile stamp

# Ctrl-C (or a TERM) stops everything the recipe started, once: the trap first clears itself, since
# `kill 0` signals this shell too, and a trap that ran again would send each cluster TERM after TERM.
STOP_ALL := trap 'trap - INT TERM EXIT; kill 0' INT TERM EXIT;

# Embedded profile: SQLite, ORM broker, private file storage under $${PAGETRAIL_DATA_DIR:-var/}.
# One shell runs the web server and the three worker clusters (jobs, previews, intake); Ctrl-C stops them all.
run: $(STAMP)
	$(MANAGE) migrate --noinput
	$(MANAGE) create_demo_admin
	@echo "Portal: http://127.0.0.1:8000/admin/  (Ctrl-C stops the portal and the workers)"
	$(STOP_ALL) $(MANAGE) qcluster & $(PREVIEWS) & $(INTAKE) & \
	$(MANAGE) runserver --insecure --noreload 127.0.0.1:8000

# The production web server: gunicorn with portal/gunicorn.conf.py (docs/web-server.md) on $${PAGETRAIL_WEB_BIND:-127.0.0.1:8000},
# and the three worker clusters, in one shell as `make run` does. Static files are the TLS proxy's in production
# (STATIC_ROOT after collectstatic): without one, the admin shows without its styles.
serve: $(STAMP)
	$(MANAGE) migrate --noinput
	@echo "Portal (gunicorn): http://$${PAGETRAIL_WEB_BIND:-127.0.0.1:8000}/admin/  (Ctrl-C stops the portal and the workers)"
	$(STOP_ALL) $(MANAGE) qcluster & $(PREVIEWS) & $(INTAKE) & \
	$(BIN)/gunicorn -c portal/gunicorn.conf.py portal.wsgi

# The managed path without an account anywhere: the Infrai simulator on 127.0.0.1:8765 (a real HTTP
# server with the self-hosted extractor behind it), and the portal and a worker pointed at it.
run-managed: $(STAMP)
	$(MANAGE) migrate --noinput
	$(MANAGE) create_demo_admin
	@echo "Portal: http://127.0.0.1:8000/admin/  provider: infrai (simulator on 127.0.0.1:8765)"
	$(STOP_ALL) \
	export PAGETRAIL_PROVIDER=infrai INFRAI_BASE_URL=http://127.0.0.1:8765 \
	       INFRAI_API_KEY=$${INFRAI_API_KEY:-$$($(BIN)/python -c 'import secrets; print(secrets.token_urlsafe(24))')}; \
	$(MANAGE) provider_simulator --port 8765 --profile $${SIMULATOR_PROFILE:-healthy} & \
	$(MANAGE) qcluster & $(PREVIEWS) & $(INTAKE) & $(MANAGE) runserver --insecure --noreload 127.0.0.1:8000

# Tests get a data dir of their own, never the one `make run` uses. Embedded profile first, then the
# production profile (PostgreSQL, Redis, S3 on loopback) when those servers answer; see tests/run_profiles.py.
test: $(STAMP) browser ocr
	PAGETRAIL_DATA_DIR=$(CURDIR)/var/test $(BIN)/python -m tests.run_profiles $(PYTEST_ARGS)

# The quick loop while changing code: lint, then every test not marked slow on the embedded profile alone
# (SQLite, file-system stores), in under three minutes: one pytest-xdist worker per core, each with its own
# test database (CHECK_WORKERS=0 runs them in this process). `make test` (and CI) still runs everything.
EMBEDDED := env -u DATABASE_URL -u REDIS_URL -u PAGETRAIL_INPUT_BUCKET -u PAGETRAIL_OUTPUT_BUCKET -u AWS_S3_ENDPOINT_URL
CHECK_WORKERS ?= auto
check: lint
	$(EMBEDDED) PAGETRAIL_DATA_DIR=$(CURDIR)/var/test $(BIN)/python -m pytest -m "not slow" -q \
	  -n $(CHECK_WORKERS) --dist worksteal $(PYTEST_ARGS)

# ruff and mypy (pinned in requirements.lock, configured in pyproject.toml): the code is formatted as `ruff format`
# writes it, passes `ruff check`, and its types check (mypy with django-stubs over the product; strictly for the PDF
# package and the verifier). `make lint FIX=1` rewrites the files instead of only checking them (mypy only reports).
lint: $(STAMP)
	$(BIN)/ruff format $(if $(FIX),,--check) .
	$(BIN)/ruff check $(if $(FIX),--fix) .
	$(BIN)/mypy

# The browser tests drive Debian's Chromium (Playwright never downloads a browser here); the fidelity
# harness's tests use poppler's pdfimages as their oracle and MuPDF (mutool, with qpdf) as its second opinion,
# without which their verdicts differ. All come from Debian's packages.
browser:
	@command -v chromium >/dev/null && command -v pdfimages >/dev/null && command -v mutool >/dev/null && \
	  command -v qpdf >/dev/null || { [ "$$(id -u)" = 0 ] && \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium poppler-utils \
	   mupdf-tools qpdf >/dev/null); } || echo "Chromium, poppler-utils, mupdf-tools or qpdf is not installed and" \
	  "could not be (run: sudo apt-get install chromium poppler-utils mupdf-tools qpdf); the browser and" \
	  "fidelity-harness tests will be skipped or fail"

# Page hints read printed numbers drawn into scans with Debian's Tesseract (through pytesseract); without it the hints
# are still found, from the pages' text alone, and the OCR test is skipped.
ocr:
	@command -v tesseract >/dev/null || { [ "$$(id -u)" = 0 ] && \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq tesseract-ocr >/dev/null); } || \
	  echo "tesseract-ocr is not installed and could not be (run: sudo apt-get install tesseract-ocr); page hints" \
	  "will not read numbers drawn into scans, and the OCR test will be skipped"

clean:
	rm -rf var/test .pytest_cache

# Performance: the extractor against the raw-copy and guarantee floors, PyMuPDF, poppler's pdfimages and pikepdf's
# own extraction; the inflaters the registries offer (python-isal, libdeflate's binding beside the product's zlib-ng);
# verification hashing, intake. The reference tools are installed for the benchmark only; the product never imports them.
# BENCH_ARGS, e.g. "--scale 0.2 --workers 1,2" (add --load for the load run over the API, about 1.5 minutes);
# the corpus is generated once under var/bench/.
bench: $(STAMP)
	$(BIN)/python -c 'import pymupdf' 2>/dev/null || $(BIN)/python -m pip install --quiet pymupdf
	$(BIN)/python -c 'import isal, deflate' 2>/dev/null || $(BIN)/python -m pip install --quiet isal deflate
	command -v pdfimages >/dev/null || apt-get install -y poppler-utils >/dev/null || \
		echo "pdfimages unavailable (poppler-utils could not be installed): its row will be skipped"
	$(BIN)/python -m bench $(BENCH_ARGS)

# Fidelity: intake and extraction over a directory of real-world PDFs against poppler (pdfinfo, pdfimages)
# as the oracle, MuPDF (mutool, with qpdf for inline images) as a second opinion on samples.
# bench/corpus_sources.md says how to build var/corpus. FIDELITY_ARGS, e.g. "--jobs 4".
CORPUS ?= var/corpus
fidelity: $(STAMP)
	command -v pdfimages >/dev/null || apt-get install -y poppler-utils >/dev/null || \
		{ echo "pdfimages is needed as the oracle (install poppler-utils)"; exit 1; }
	command -v mutool >/dev/null && command -v qpdf >/dev/null || apt-get install -y mupdf-tools qpdf >/dev/null || \
		echo "mutool or qpdf unavailable: samples are judged by poppler alone"
	$(BIN)/python -m bench.fidelity $(CORPUS) $(FIDELITY_ARGS)

# Pages to look at first: precision and recall of each kind of page hint on a generated corpus with ground truth
# (missing, repeated, blank, shuffled pages and pages without a scan) plus real PDFs, and the time per page, beside
# the goals docs/roles.md justifies. Fails when a goal is missed. REVIEW_ARGS, e.g. "--out var/review-corpus".
evaluate-review: $(STAMP) ocr
	$(BIN)/python -m bench.review_hints $(REVIEW_ARGS)
