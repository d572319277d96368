"""Session Viewer settings. Everything comes from the environment, with safe defaults.

A malformed value raises ImproperlyConfigured at start-up rather than being guessed at.
"""

import os
import socket
from datetime import timedelta
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from sessionviewer.readers import MAX_EVENT_BYTES  # plain Python: no Django, no settings

BASE_DIR = Path(__file__).resolve().parent.parent


def envbool(name: str, default: str) -> bool:
    value = os.environ.get(name, default).strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off", ""):
        return False
    raise ImproperlyConfigured(f"{name} must be a boolean (1/0, true/false), not {value!r}")


def envint(name: str, default: str) -> int:
    value = os.environ.get(name, default)
    try:
        return int(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be a whole number, not {value!r}") from None


def envsecret(name: str) -> str:
    """NAME, or the contents of the file NAME_FILE points to (for Docker secrets)."""
    if path := os.environ.get(f"{name}_FILE"):
        try:
            return Path(path).read_text().strip()
        except OSError as error:
            raise ImproperlyConfigured(f"{name}_FILE: cannot read {path}: {error}") from None
    return os.environ.get(name, "")


def envlist(name: str, default: str = "") -> list[str]:
    value = os.environ.get(name, default)
    return [item.strip() for item in value.replace("\n", ",").split(",") if item.strip()]


DATA_DIR = Path(os.environ.get("SESSIONVIEWER_DATA", BASE_DIR / "data")).expanduser()

DEBUG = envbool("DEBUG", "0")
SECRET_KEY = envsecret("SECRET_KEY")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("SECRET_KEY is required unless DEBUG is on (make run generates one)")
    SECRET_KEY = "insecure-debug-only-key"  # noqa: S105

ALLOWED_HOSTS = envlist("ALLOWED_HOSTS", "localhost,127.0.0.1")


def https_origins(hosts: list[str]) -> list[str]:
    """The https:// origins of ALLOWED_HOSTS entries; ".example.com" allows its subdomains."""
    origins = []
    for host in hosts:
        if host == "*":
            continue  # no origin stands for every host; the request's own host still passes
        origins.append(f"https://*{host}" if host.startswith(".") else f"https://{host}")
    return origins


# Behind a proxy that ends TLS (nginx, Caddy, a load balancer) and sets X-Forwarded-Proto:
# trust that header, redirect plain HTTP, send cookies over HTTPS only, ask browsers for
# HTTPS from now on (HSTS), and accept form posts from the https:// origins of ALLOWED_HOSTS.
SESSIONVIEWER_BEHIND_TLS_PROXY = envbool("SESSIONVIEWER_BEHIND_TLS_PROXY", "0")
if SESSIONVIEWER_BEHIND_TLS_PROXY:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_SSL_REDIRECT = True
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = envint("SECURE_HSTS_SECONDS", str(365 * 24 * 3600))
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
CSRF_TRUSTED_ORIGINS = envlist("CSRF_TRUSTED_ORIGINS") or (
    https_origins(ALLOWED_HOSTS) if SESSIONVIEWER_BEHIND_TLS_PROXY else []
)

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "axes",
    "csp",
    "django_htmx",
    "template_partials.apps.SimpleAppConfig",
    "sessionviewer",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "csp.middleware.CSPMiddleware",
    "sessionviewer.middleware.private_cache",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "sessionviewer.middleware.tally_counts_per_request",
    # Last, as django-axes asks: it turns a refused login into the locked-out page.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "sessionviewer.urls"
WSGI_APPLICATION = "sessionviewer.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "OPTIONS": {
            # The partials loader serves "page.html#partial" names to htmx views; it
            # wraps the cached loader, as Django's own default would be outside DEBUG.
            "loaders": [
                (
                    "template_partials.loader.Loader",
                    [
                        (
                            "django.template.loaders.cached.Loader",
                            [
                                "django.template.loaders.filesystem.Loader",
                                "django.template.loaders.app_directories.Loader",
                            ],
                        )
                    ],
                )
            ],
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
            "builtins": ["template_partials.templatetags.partials"],
        },
    }
]

DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL", f"sqlite:///{DATA_DIR / 'sessionviewer.sqlite3'}"),
        conn_max_age=envint("DATABASE_CONN_MAX_AGE", "60"),
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # The indexer writes while the server reads: WAL lets readers go on during a
    # write, and IMMEDIATE transactions with a busy timeout queue writers instead
    # of failing with "database is locked". A new database file gets 16 KB pages,
    # set before WAL is (WAL fixes the page size): most of the index is text, which
    # overflows a 4 KB page, and the larger page made a cold index 0.92x the time
    # (bench/bench_index.py). On an existing file the page_size pragma does nothing.
    # Our engine is Django's, except that it creates a missing database file readable by its
    # owner only; SQLite gives the -wal and -shm files the database file's mode.
    DATABASES["default"]["ENGINE"] = "sessionviewer.sqlite"
    DATABASES["default"]["OPTIONS"] = {
        "init_command": "PRAGMA page_size=16384; PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        "transaction_mode": "IMMEDIATE",
        "timeout": envint("SQLITE_BUSY_TIMEOUT", "30"),
    }
    DATABASES["default"]["CONN_MAX_AGE"] = 0

if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    # No JIT compilation: a statement the planner overestimates (a list of 1,000 ids makes
    # it guess 800,000 rows) spent 0.54 s compiling to run for 0.04 s (bench/search_pages.py).
    # A page's statements are short; compiling never pays for itself within one.
    options = DATABASES["default"].setdefault("OPTIONS", {})
    options["options"] = " ".join(filter(None, [options.get("options", ""), "-c jit=off"]))
    # Our engine is Django's, except that timestamps are read by psycopg's C loader.
    DATABASES["default"]["ENGINE"] = "sessionviewer.postgresql"

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
AUTHENTICATION_BACKENDS = [
    # django-axes first: it refuses a locked-out login before the password is checked.
    "axes.backends.AxesStandaloneBackend",
    # A user's permissions in one statement (Django's backend reads them in two), before it.
    "sessionviewer.auth.PermissionsInOneStatement",
    "django.contrib.auth.backends.ModelBackend",
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "session-list"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = os.environ.get("TIME_ZONE", "UTC")
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
STATICFILES_DIRS = [BASE_DIR / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
}

SESSION_COOKIE_HTTPONLY = True
# Django's database sessions, each request's read in one plain statement (sessionviewer/auth.py).
SESSION_ENGINE = "sessionviewer.auth"
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"

# Login throttling (django-axes), on the app's login form and the admin's alike: after
# SESSIONVIEWER_LOGIN_FAILURE_LIMIT failures for one user name, or from one address, logins
# for it are refused for SESSIONVIEWER_LOGIN_COOLOFF_MINUTES, counted from the latest try
# (0: until `manage.py axes_reset`). A success resets its counts. A limit of 0 turns it off.
AXES_FAILURE_LIMIT = envint("SESSIONVIEWER_LOGIN_FAILURE_LIMIT", "5")
AXES_ENABLED = AXES_FAILURE_LIMIT > 0
_cooloff_minutes = envint("SESSIONVIEWER_LOGIN_COOLOFF_MINUTES", "15")
AXES_COOLOFF_TIME = timedelta(minutes=_cooloff_minutes) if _cooloff_minutes > 0 else None
AXES_LOCKOUT_PARAMETERS = ["username", "ip_address"]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
AXES_CLIENT_IP_CALLABLE = "sessionviewer.middleware.client_ip"
# The log (logger "axes", a warning at each lockout) names the user name and the address
# (never the password), and no banner is printed at each command's start.
AXES_SENSITIVE_PARAMETERS: list[str] = []
AXES_VERBOSE = False
# The counts live in the database, so that every web process of one index counts the same
# failures (a cache or a process's memory would give each its own five tries).
AXES_HANDLER = "axes.handlers.database.AxesDatabaseHandler"

# Content-Security-Policy on every response: scripts, styles and everything else from this
# site only, no inline script or style, images also as data: URLs (a transcript's images).
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "img-src": ["'self'", "data:"],
        "object-src": ["'none'"],
        "base-uri": ["'none'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    }
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
}

# Session roots: entries separated by commas or newlines, each a path, optionally
# tagged with its format as FORMAT=PATH (claude_code, go_agent, openclaw, pi, fluux_xmpp, codex);
# openclaw=~/.openclaw/agents also finds each agent's agent/openclaw-agent.sqlite.
# Unset, the demo data and every default location found on this machine are used;
# set, they are replaced, and the entry `demo` brings the demo data back beside them.
# `make run` copies the repository's demo/ into the data folder once, so that edits
# made in the persona editor never touch the tracked files.
DEMO_DIR = DATA_DIR / "demo"
DEMO_ROOTS = [
    f"claude_code={DEMO_DIR / 'claude/projects'}",
    f"go_agent={DEMO_DIR / 'go-agent/sessions'}",
    f"openclaw={DEMO_DIR / 'openclaw/agents'}",
    f"openclaw={DEMO_DIR / 'myclaw/sessions'}",
    f"pi={DEMO_DIR / 'pi/sessions'}",
    f"fluux_xmpp={DEMO_DIR / 'fluux/memory'}",
    f"codex={DEMO_DIR / 'codex/sessions'}",
    f"opencode={DEMO_DIR / 'opencode'}",
    f"gemini_cli={DEMO_DIR / 'gemini/tmp'}",
]
DEFAULT_ROOTS = [
    "claude_code=~/.claude/projects",
    "go_agent=~/.config/agent/sessions",
    "openclaw=~/.myclaw/sessions",
    "openclaw=~/.openclaw/agents",
    "pi=~/.pi/agent/sessions",
    "fluux_xmpp=./data/memory",
    "codex=~/.codex/sessions",
    "opencode=~/.local/share/opencode",
    "gemini_cli=~/.gemini/tmp",
]
SESSIONVIEWER_ROOTS = [
    root for item in envlist("SESSIONVIEWER_ROOTS") for root in (DEMO_ROOTS if item == "demo" else [item])
] or [
    *(DEMO_ROOTS if envbool("SESSIONVIEWER_DEMO", "1") else []),
    *DEFAULT_ROOTS,
]
# Fluux memory roots the persona editor works on; by default the fluux_xmpp session roots.
SESSIONVIEWER_MEMORY_ROOTS = envlist("SESSIONVIEWER_MEMORY_ROOTS")
# How many days a memory file's past states are kept (index/memory.py); 0 keeps them all.
SESSIONVIEWER_MEMORY_RETENTION_DAYS = envint("SESSIONVIEWER_MEMORY_RETENTION_DAYS", "0")
if SESSIONVIEWER_MEMORY_RETENTION_DAYS < 0:
    raise ImproperlyConfigured("SESSIONVIEWER_MEMORY_RETENTION_DAYS must be 0 (keep all) or more days")
# The most bytes one compressed event (OpenClaw's database) may inflate to: past it, the event
# is a problem on its session. By default 256 MB, four times the largest real line.
SESSIONVIEWER_MAX_EVENT_BYTES = envint("SESSIONVIEWER_MAX_EVENT_BYTES", str(MAX_EVENT_BYTES))
if SESSIONVIEWER_MAX_EVENT_BYTES < 1:
    raise ImproperlyConfigured("SESSIONVIEWER_MAX_EVENT_BYTES must be a number of bytes, 1 or more")
# The secrets scan also reports random-looking runs that no rule names (workspaces/secrets.py).
# Off by default: hashes, ids and base64 data in code sessions would bury the real findings.
SESSIONVIEWER_SECRETS_HIGH_ENTROPY = envbool("SESSIONVIEWER_SECRETS_HIGH_ENTROPY", "0")
# Share links (views/share.py): days a link lives unless its maker says otherwise, and at most;
# the largest redacted page one may hold (uncompressed bytes); opens of one link per minute,
# counted in the database so that every web server counts the same.
SESSIONVIEWER_SHARE_DAYS = envint("SESSIONVIEWER_SHARE_DAYS", "7")
SESSIONVIEWER_SHARE_MAX_DAYS = envint("SESSIONVIEWER_SHARE_MAX_DAYS", "90")
if not 1 <= SESSIONVIEWER_SHARE_DAYS <= SESSIONVIEWER_SHARE_MAX_DAYS:
    raise ImproperlyConfigured(
        "SESSIONVIEWER_SHARE_DAYS must be 1 or more, and at most SESSIONVIEWER_SHARE_MAX_DAYS"
    )
SESSIONVIEWER_SHARE_MAX_BYTES = envint("SESSIONVIEWER_SHARE_MAX_BYTES", str(20 * 1024 * 1024))
SESSIONVIEWER_SHARE_OPENS_PER_MINUTE = envint("SESSIONVIEWER_SHARE_OPENS_PER_MINUTE", "30")
if SESSIONVIEWER_SHARE_MAX_BYTES < 1 or SESSIONVIEWER_SHARE_OPENS_PER_MINUTE < 1:
    raise ImproperlyConfigured("SESSIONVIEWER_SHARE_MAX_BYTES and _OPENS_PER_MINUTE must be 1 or more")


MACHINE_MAX = 100  # Source.machine's max_length


def envmachine(name: str) -> str:
    """The machine an indexer names its roots by: NAME, else the host name. Up to MACHINE_MAX
    printable characters, no space at either end; anything else is refused at start."""
    value = os.environ.get(name) or socket.gethostname()
    if not value or len(value) > MACHINE_MAX or not value.isprintable() or value != value.strip():
        raise ImproperlyConfigured(
            f"{name} must be 1 to {MACHINE_MAX} printable characters with no space at either end, "
            f"not {value!r}"
        )
    return value


# The machine this process indexes for: a root's identity is (machine, path), so two machines'
# ~/.claude/projects never overwrite each other. In a container the host name is the
# container's id, new on every deploy: set it there.
SESSIONVIEWER_MACHINE = envmachine("SESSIONVIEWER_MACHINE")
# The agent's name, for Fluux's built-in default prompt.
SESSIONVIEWER_AGENT_NAME = os.environ.get("SESSIONVIEWER_AGENT_NAME", "Fluux Agent")
