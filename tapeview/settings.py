"""Tapeview settings: one file, driven by environment variables with safe defaults."""

from __future__ import annotations

import os
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent


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


# Where Tapeview keeps its own files (index database, demo data, secret key).
HOME = Path(os.environ.get("TAPEVIEW_HOME") or BASE_DIR / "var").expanduser().resolve()
HOME.mkdir(parents=True, exist_ok=True)


def _secret_key() -> str:
    key = os.environ.get("TAPEVIEW_SECRET_KEY")
    if key:
        return key
    # No key given: make one on first start and keep it beside the index, never in the repo.
    path = HOME / "secret_key"
    if not path.exists():
        from django.utils.crypto import get_random_string

        path.write_text(get_random_string(50))
        path.chmod(0o600)
    return path.read_text().strip()


SECRET_KEY = _secret_key()
DEBUG = env_bool("TAPEVIEW_DEBUG", False)
ALLOWED_HOSTS = env_list("TAPEVIEW_ALLOWED_HOSTS", "127.0.0.1,localhost,[::1]")
CSRF_TRUSTED_ORIGINS = env_list("TAPEVIEW_CSRF_TRUSTED_ORIGINS", "")

# Sources: "[LABEL=]KIND:PATH,...". Empty means the demo directory under HOME.
TAPEVIEW_SOURCES = os.environ.get("TAPEVIEW_SOURCES", "")
TAPEVIEW_DEMO_DIR = HOME / "demo"
# A tape counts as idle (safe to append to) after this many quiet seconds (formats/bub.md §4).
TAPEVIEW_QUIET_SECONDS = float(os.environ.get("TAPEVIEW_QUIET_SECONDS", "1.5"))
# A page re-checks the files at most this often (seconds).
TAPEVIEW_REFRESH_SECONDS = float(os.environ.get("TAPEVIEW_REFRESH_SECONDS", "2"))

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
    "tapeview",
    "memory_admin",
    "tapeview.search",
]

MIDDLEWARE = [
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
]

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
                "tapeview.roles.role_context",
            ],
        },
    },
]

_db_url = os.environ.get("TAPEVIEW_DATABASE_URL") or os.environ.get("DATABASE_URL")
if _db_url:
    DATABASES = {"default": dj_database_url.parse(_db_url, conn_max_age=60)}
else:
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": HOME / "tapeview.sqlite3",
            # WAL lets pages read while an index run writes; IMMEDIATE avoids lock upgrades.
            "OPTIONS": {
                "init_command": (
                    "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA cache_size=-65536;"
                ),
                "transaction_mode": "IMMEDIATE",
                "timeout": 20,
            },
        }
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "tapeview:tape_list"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = HOME / "static"
STATIC_ROOT.mkdir(exist_ok=True)
WHITENOISE_USE_FINDERS = True

SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SECURE = env_bool("TAPEVIEW_SECURE_COOKIES", False)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
X_FRAME_OPTIONS = "DENY"

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("TAPEVIEW_LOG_LEVEL", "WARNING")},
}
