"""Tapeview settings: one file, driven by environment variables with safe defaults."""

from __future__ import annotations

import ipaddress
import os
import secrets
import socket
from datetime import timedelta

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from .home import BASE_DIR, home, read_secret_key


def env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    if value.lower() in ("1", "true", "yes", "on"):
        return True
    if value.lower() in ("0", "false", "no", "off"):
        return False
    raise ImproperlyConfigured(f"{name}={value!r}: expected true or false")


def env_list(name: str, default: str) -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


def env_float(name: str, default: float, low: float = 0.0, whole: bool = False) -> float:
    value = os.environ.get(name) or str(default)
    try:
        number = int(value) if whole else float(value)
    except ValueError:
        expected = "a whole number" if whole else "a number of seconds"
        raise ImproperlyConfigured(f"{name}={value!r}: expected {expected}") from None
    if not low <= number < float("inf"):
        raise ImproperlyConfigured(f"{name}={value!r}: expected a number of at least {low:g}")
    return number


def env_address(name: str, default: str) -> str:
    """An IP address as a peer's REMOTE_ADDR spells it, "*" (any peer), or "" (none)."""
    value = os.environ.get(name, "").strip() or default
    if value in ("", "*"):
        return value
    try:
        return str(ipaddress.ip_address(value))
    except ValueError:
        raise ImproperlyConfigured(f"{name}={value!r}: expected an IP address or *") from None


# Where Tapeview keeps its own files (index database, demo data, secret key); `tapeview` makes it.
HOME = home()
# Made once by the command line (tapeview.home.prepare); a process started otherwise without one
# (a test run) gets a key of its own that lasts as long as it does.
SECRET_KEY = os.environ.get("TAPEVIEW_SECRET_KEY") or read_secret_key(HOME) or secrets.token_urlsafe(48)
DEBUG = env_bool("TAPEVIEW_DEBUG", False)
ALLOWED_HOSTS = env_list("TAPEVIEW_ALLOWED_HOSTS", "127.0.0.1,localhost,[::1]")
CSRF_TRUSTED_ORIGINS = env_list("TAPEVIEW_CSRF_TRUSTED_ORIGINS", "")

# Sources: "[LABEL=]KIND:PATH,...". Empty means the demo directory under HOME.
TAPEVIEW_SOURCES = os.environ.get("TAPEVIEW_SOURCES", "")
TAPEVIEW_DEMO_DIR = HOME / "demo"
# A tape counts as idle (safe to append to) after this many quiet seconds (formats/bub.md §4).
TAPEVIEW_QUIET_SECONDS = env_float("TAPEVIEW_QUIET_SECONDS", 1.5)
# A tape mid-turn that has been quiet this long looks stopped: an operator may confirm a handoff.
TAPEVIEW_STOPPED_SECONDS = env_float("TAPEVIEW_STOPPED_SECONDS", 600)
# A page re-checks the files at most this often (seconds).
TAPEVIEW_REFRESH_SECONDS = env_float("TAPEVIEW_REFRESH_SECONDS", 2)
# The name this host's tapes and memory stores carry in the index: in a fleet, each agent host
# indexes its own sources into one central database, and removes only its own rows.
TAPEVIEW_HOST = os.environ.get("TAPEVIEW_HOST", "").strip() or socket.gethostname()
if len(TAPEVIEW_HOST) > 255:
    raise ImproperlyConfigured(f"TAPEVIEW_HOST={TAPEVIEW_HOST[:40]!r}...: at most 255 characters")
# False for a web tier that trusts another process (`tapeview index --watch`) with the index:
# its pages neither scan the sources nor index a tape (`tapeview serve --no-index` sets it).
TAPEVIEW_WEB_INDEXES = env_bool("TAPEVIEW_WEB_INDEXES", True)
# The MCP server's write tools (handoff, edit_memory, add_review): off unless asked for.
TAPEVIEW_MCP_WRITES = env_bool("TAPEVIEW_MCP_WRITES", False)
# A write to another host's file goes through the outbox: the page or API call waits this many
# seconds for that host's watcher to carry it out, then answers 202 with where to look.
TAPEVIEW_OUTBOX_WAIT_SECONDS = env_float("TAPEVIEW_OUTBOX_WAIT_SECONDS", 5)
# An OTLP/HTTP collector that the indexer sends each tape's new turns to as traces (tapeview.otlp);
# with TAPEVIEW_OTLP_CONTENT, the messages, tool arguments and results go too (left out by default).
TAPEVIEW_OTLP_ENDPOINT = os.environ.get("TAPEVIEW_OTLP_ENDPOINT", "").strip()
TAPEVIEW_OTLP_CONTENT = env_bool("TAPEVIEW_OTLP_CONTENT", False)
# Where alerts are sent when their rule names no webhook of its own (tapeview.alerts); "": nowhere.
TAPEVIEW_ALERT_WEBHOOK = os.environ.get("TAPEVIEW_ALERT_WEBHOOK", "").strip()
# /metrics answers a scraper on this machine without a token (tapeview.metrics.access); not by
# default behind a proxy, whose relayed requests may reach this server from this machine too.
TAPEVIEW_METRICS_LOCAL = env_bool(
    "TAPEVIEW_METRICS_LOCAL",
    not env_bool("TAPEVIEW_BEHIND_PROXY", False) and not os.environ.get("TAPEVIEW_TRUSTED_PROXY", "").strip(),
)
# PostgreSQL's GIN index is also kept in slices of this many docs (search/slices.py); the indexer
# makes at most one change to them every TAPEVIEW_SEARCH_SLICE_SECONDS while it watches.
TAPEVIEW_SEARCH_SLICE_DOCS = int(env_float("TAPEVIEW_SEARCH_SLICE_DOCS", 75_000, low=1000, whole=True))
TAPEVIEW_SEARCH_SLICE_SECONDS = env_float("TAPEVIEW_SEARCH_SLICE_SECONDS", 60)
# PostgreSQL: a search pass's batch of this many docs or more is searchable before its GIN entries
# are made, which follow when the indexer is idle (search.fresh).
TAPEVIEW_SEARCH_FRESH_DOCS = int(env_float("TAPEVIEW_SEARCH_FRESH_DOCS", 2_000, low=1, whole=True))
# Seconds an exact count of a search's matches (?count=exact) may take; past them it says "at least".
TAPEVIEW_SEARCH_COUNT_SECONDS = env_float("TAPEVIEW_SEARCH_COUNT_SECONDS", 3)


def env_windows(name: str) -> dict[str, int]:
    """`MODEL=TOKENS,...` as a dict; a bad item stops the start, saying which."""
    windows = {}
    for item in env_list(name, ""):
        model, _, tokens = item.rpartition("=")
        if not model.strip() or not tokens.strip().isdigit() or int(tokens) < 1:
            raise ImproperlyConfigured(f"{name}: {item!r} is not MODEL=TOKENS (e.g. my-llm=32768)")
        windows[model.strip()] = int(tokens)
    return windows


# Context windows in tokens by model name, over the table in tapeview/tapes/windows.py.
TAPEVIEW_MODEL_WINDOWS = env_windows("TAPEVIEW_MODEL_WINDOWS")


def env_file(name: str) -> str:
    """A path to a file that must be there at the start ("" for none); its reader checks its content."""
    path = os.environ.get(name, "").strip()
    if path and not os.path.isfile(path):
        raise ImproperlyConfigured(f"{name}: {path!r} is not a file")
    return os.path.abspath(path) if path else ""


# A JSON or TOML price table merged over the shipped one (tapeview/tapes/prices.json); read again
# when it changes.
TAPEVIEW_PRICES = env_file("TAPEVIEW_PRICES")
# The budget gauge warns once the context since the last anchor fills this share of the window.
TAPEVIEW_BUDGET_WARN = env_float("TAPEVIEW_BUDGET_WARN", 0.8, low=0.01)

INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "django_htmx",
    "ninja",
    "template_partials",
    "axes",
    "tapeview.accounts",
    "tapeview.outbox",
    "tapeview.tapes",
    "tapeview.reviews",
    "tapeview.alerts",
    "memory_admin",
    "tapeview.search",
    "tapeview.otlp",
    "tapeview.mcp",
    "tapeview.metrics",
]

MIDDLEWARE = [
    # First: every request is timed and counted, whatever a later middleware answers.
    "tapeview.metrics.middleware.RequestMetricsMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.auth.middleware.LoginRequiredMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "csp.middleware.CSPMiddleware",
    "tapeview.errors.MethodNotAllowedMiddleware",
    "tapeview.errors.WriteFailedMiddleware",
    "tapeview.errors.FileGoneMiddleware",
    # Each request reads this machine's files until it looks up another host's tape or store.
    "tapeview.tapes.copy_reader.FilesMiddleware",
    # Last: turns a sign-in refused for too many failures into the lockout page (429).
    "axes.middleware.AxesMiddleware",
]

# django-axes counts failed sign-ins in the database, so every web process sees the same count:
# per client address and user name, so guessing one account locks that account from that address,
# not every other person there (links and tokens count under names of their own, accounts.throttle).
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = int(env_float("TAPEVIEW_SIGNIN_FAILURES", 10, low=1))
AXES_COOLOFF_TIME = timedelta(seconds=env_float("TAPEVIEW_SIGNIN_COOLOFF_SECONDS", 900, low=1))
AXES_LOCKOUT_PARAMETERS = [["ip_address", "username"]]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_CALLABLE = "tapeview.accounts.throttle.lockout"
AXES_VERBOSE = False
# Its log lines name what was tried, from where, on which path; a refusal that is logged as a
# request of its own is not logged again (tapeview.logfilters.OneLineSignInFailures).
AXES_CLIENT_STR_CALLABLE = "tapeview.logfilters.axes_client"

# No inline script anywhere: htmx comes from our own static files and is driven by attributes.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        # htmx adds its indicator style inline; no script can hide in a style attribute.
        "style-src": ["'self'", "'unsafe-inline'"],
        "img-src": ["'self'", "data:"],
        "object-src": ["'none'"],
        "base-uri": ["'none'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    }
}

ROOT_URLCONF = "tapeview.urls"
WSGI_APPLICATION = "tapeview.wsgi.application"

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
                "tapeview.accounts.roles.role_context",
            ],
        },
    },
]

_db_url = os.environ.get("TAPEVIEW_DATABASE_URL") or os.environ.get("DATABASE_URL")
if _db_url:
    try:
        # Health checks: a connection kept across requests is tested first, so a database restart
        # costs no request a 500.
        DATABASES = {"default": dj_database_url.parse(_db_url, conn_max_age=60, conn_health_checks=True)}
    except ValueError as exc:
        raise ImproperlyConfigured(f"TAPEVIEW_DATABASE_URL: {exc}") from None
else:
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": HOME / "tapeview.sqlite3",
            # WAL lets pages read while an index run writes; IMMEDIATE avoids lock upgrades. Temporary
            # data (the search pass's batch on its way in, statement journals, sorts) stays in memory: a
            # full /tmp would otherwise stop the search pass (tests/search/test_full_temp.py).
            "OPTIONS": {
                "init_command": (
                    "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA cache_size=-65536; "
                    "PRAGMA temp_store=MEMORY;"
                ),
                "transaction_mode": "IMMEDIATE",
                "timeout": 20,
            },
        }
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
# Whether the indexer keeps a copy of each file it reads in the database, for a web tier on
# another machine (tapes.filecopy): on by default with PostgreSQL, the fleet's database.
TAPEVIEW_COPY_FILES = env_bool("TAPEVIEW_COPY_FILES", DATABASES["default"]["ENGINE"].endswith("postgresql"))

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
LOGIN_URL = "accounts:login"
LOGIN_REDIRECT_URL = "tapes:tape_list"
LOGOUT_REDIRECT_URL = "accounts:login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
WHITENOISE_USE_FINDERS = True

SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SECURE = env_bool("TAPEVIEW_SECURE_COOKIES", False)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
CSRF_FAILURE_VIEW = "tapeview.errors.csrf_failure"  # JSON under /api/
X_FRAME_OPTIONS = "DENY"
# Secure cookies mean the site is served over HTTPS: then browsers are told to keep to it.
SECURE_SSL_REDIRECT = SESSION_COOKIE_SECURE
SECURE_HSTS_SECONDS = int(env_float("TAPEVIEW_HSTS_SECONDS", 31536000)) if SESSION_COOKIE_SECURE else 0
SECURE_HSTS_INCLUDE_SUBDOMAINS = SESSION_COOKIE_SECURE
# The TLS-terminating proxy in front, by the address this server sees it connect from: `tapeview
# serve` (waitress) takes the browser's scheme, host and address from the X-Forwarded-* headers of
# that peer alone, and drops them from any other. So Django sees HTTPS as HTTPS (no redirect loop,
# HSTS sent) and REMOTE_ADDR is the browser's, which sign-in throttling counts against.
# TAPEVIEW_BEHIND_PROXY=1 alone trusts a proxy on this host.
TAPEVIEW_TRUSTED_PROXY = env_address(
    "TAPEVIEW_TRUSTED_PROXY", "127.0.0.1" if env_bool("TAPEVIEW_BEHIND_PROXY", False) else ""
)
# Proxies in a row (a load balancer, then nginx): the client address is that many from the end
# of X-Forwarded-For.
TAPEVIEW_TRUSTED_PROXY_COUNT = int(env_float("TAPEVIEW_TRUSTED_PROXY_COUNT", 1, low=1, whole=True))
# Preloading a domain into browsers is a decision for its owner, not a default of this app.
SILENCED_SYSTEM_CHECKS = ["security.W021"]

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {
        "one_line": {"()": "tapeview.logfilters.OneLineClientErrors"},
        "sign_in": {"()": "tapeview.logfilters.OneLineSignInFailures"},
    },
    # Also on the handler: each django.security.<Error> logger (a foreign Host, a body too large, a
    # redirect too long) logs its 400 with a traceback, and a logger's filter misses its children's.
    "handlers": {"console": {"class": "logging.StreamHandler", "filters": ["one_line"]}},
    # django.request logs refused requests, django.security.csrf failed CSRF checks: one line each;
    # axes' handler logs failed sign-ins and lockouts, but not again a refusal logged as a request.
    "loggers": {
        "django.request": {"filters": ["one_line"]},
        "django.security.csrf": {"filters": ["one_line"]},
        "axes.handlers.database": {"filters": ["sign_in"]},
    },
    "root": {"handlers": ["console"], "level": os.environ.get("TAPEVIEW_LOG_LEVEL") or "WARNING"},
}
