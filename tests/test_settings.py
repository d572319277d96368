"""Settings read from the environment: running behind a TLS proxy, login throttling, and the
largest event the index inflates."""

from __future__ import annotations

import importlib.util
import os
import re
import secrets
import socket
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
from django.conf import global_settings
from django.contrib.auth.models import User
from django.core.exceptions import ImproperlyConfigured
from django.test import Client
from django.urls import reverse

BASE_DIR = Path(__file__).resolve().parent.parent
SETTINGS_FILE = BASE_DIR / "sessionviewer" / "settings.py"
ENVIRONMENT = [
    "SESSIONVIEWER_BEHIND_TLS_PROXY",
    "ALLOWED_HOSTS",
    "CSRF_TRUSTED_ORIGINS",
    "SECURE_HSTS_SECONDS",
    "SESSIONVIEWER_LOGIN_FAILURE_LIMIT",
    "SESSIONVIEWER_LOGIN_COOLOFF_MINUTES",
    "SESSIONVIEWER_MAX_EVENT_BYTES",
    "SESSIONVIEWER_SECRETS_HIGH_ENTROPY",
    "SESSIONVIEWER_MACHINE",
    "SESSIONVIEWER_ROOTS",
    "SESSIONVIEWER_DEMO",
]
# What SESSIONVIEWER_BEHIND_TLS_PROXY decides, copied from a fresh read of the settings into the live ones.
PROXY_SETTINGS = [
    "SESSIONVIEWER_BEHIND_TLS_PROXY",
    "ALLOWED_HOSTS",
    "CSRF_TRUSTED_ORIGINS",
    "SECURE_PROXY_SSL_HEADER",
    "SECURE_SSL_REDIRECT",
    "SESSION_COOKIE_SECURE",
    "CSRF_COOKIE_SECURE",
    "SECURE_HSTS_SECONDS",
    "SECURE_HSTS_INCLUDE_SUBDOMAINS",
]


def read_settings(monkeypatch, **environment: str) -> ModuleType:
    """sessionviewer/settings.py run again, as at a server's start, with this environment."""
    for name in ENVIRONMENT:
        monkeypatch.delenv(name, raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    spec = importlib.util.spec_from_file_location("settings_under_test", SETTINGS_FILE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def use(settings, module: ModuleType) -> None:
    for name in PROXY_SETTINGS:
        setattr(settings, name, getattr(module, name, getattr(global_settings, name, None)))


# Behind a TLS proxy


def test_by_default_nothing_assumes_https(monkeypatch):
    s = read_settings(monkeypatch)
    assert s.SESSIONVIEWER_BEHIND_TLS_PROXY is False
    assert not hasattr(s, "SECURE_PROXY_SSL_HEADER")
    assert not hasattr(s, "SESSION_COOKIE_SECURE")
    assert s.CSRF_TRUSTED_ORIGINS == []


def test_behind_a_tls_proxy_every_https_setting_is_on(monkeypatch):
    s = read_settings(monkeypatch, SESSIONVIEWER_BEHIND_TLS_PROXY="1", ALLOWED_HOSTS="viewer.example.com")
    assert s.SECURE_PROXY_SSL_HEADER == ("HTTP_X_FORWARDED_PROTO", "https")
    assert s.SECURE_SSL_REDIRECT is True
    assert s.SESSION_COOKIE_SECURE is True
    assert s.CSRF_COOKIE_SECURE is True
    assert s.SECURE_HSTS_SECONDS == 365 * 24 * 3600
    assert s.SECURE_HSTS_INCLUDE_SUBDOMAINS is True


def test_trusted_origins_are_the_https_origins_of_the_allowed_hosts(monkeypatch):
    s = read_settings(
        monkeypatch, SESSIONVIEWER_BEHIND_TLS_PROXY="1", ALLOWED_HOSTS="viewer.example.com,.example.org,*"
    )
    assert s.CSRF_TRUSTED_ORIGINS == ["https://viewer.example.com", "https://*.example.org"]


def test_csrf_trusted_origins_from_the_environment_win(monkeypatch):
    s = read_settings(
        monkeypatch,
        SESSIONVIEWER_BEHIND_TLS_PROXY="1",
        ALLOWED_HOSTS="viewer.example.com",
        CSRF_TRUSTED_ORIGINS="https://viewer.example.com:8443",
    )
    assert s.CSRF_TRUSTED_ORIGINS == ["https://viewer.example.com:8443"]


def test_hsts_seconds_can_be_set(monkeypatch):
    s = read_settings(monkeypatch, SESSIONVIEWER_BEHIND_TLS_PROXY="1", SECURE_HSTS_SECONDS="3600")
    assert s.SECURE_HSTS_SECONDS == 3600


def test_a_malformed_proxy_setting_stops_the_start(monkeypatch):
    with pytest.raises(ImproperlyConfigured, match="SESSIONVIEWER_BEHIND_TLS_PROXY"):
        read_settings(monkeypatch, SESSIONVIEWER_BEHIND_TLS_PROXY="maybe")


def proxied_login(host: str) -> Client:
    """A login form posted through the proxy from https://viewer.example.com, CSRF checks on."""
    client = Client(enforce_csrf_checks=True)
    proxy = {"HTTP_HOST": host, "HTTP_X_FORWARDED_PROTO": "https", "REMOTE_ADDR": "127.0.0.1"}
    form = client.get(reverse("login"), **proxy)
    assert form.status_code == 200
    client.response = client.post(
        reverse("login"),
        {
            "username": "vera",
            "password": "vera's own",
            "csrfmiddlewaretoken": client.cookies["csrftoken"].value,
        },
        HTTP_ORIGIN="https://viewer.example.com",
        HTTP_REFERER="https://viewer.example.com/accounts/login/",
        **proxy,
    )
    client.form = form
    return client


# The proxy passes the browser's Host on, or its own upstream address.
@pytest.mark.parametrize("host", ["viewer.example.com", "127.0.0.1:8000"])
@pytest.mark.django_db
def test_behind_a_tls_proxy_a_post_from_the_https_origin_is_accepted(monkeypatch, settings, host):
    User.objects.create_user("vera", password="vera's own")
    use(
        settings,
        read_settings(
            monkeypatch, SESSIONVIEWER_BEHIND_TLS_PROXY="1", ALLOWED_HOSTS="viewer.example.com,127.0.0.1"
        ),
    )
    client = proxied_login(host)
    assert client.response.status_code == 302
    assert client.response["Location"] == reverse("session-list")
    assert client.response.cookies["sessionid"]["secure"] is True
    assert client.form.cookies["csrftoken"]["secure"] is True
    assert client.form["Strict-Transport-Security"] == "max-age=31536000; includeSubDomains"


@pytest.mark.django_db
def test_without_the_proxy_setting_the_same_post_is_refused(monkeypatch, settings):
    User.objects.create_user("vera", password="vera's own")
    use(settings, read_settings(monkeypatch, ALLOWED_HOSTS="viewer.example.com"))
    assert proxied_login("viewer.example.com").response.status_code == 403


@pytest.mark.django_db
def test_behind_a_tls_proxy_plain_http_is_sent_to_https(monkeypatch, settings):
    use(
        settings,
        read_settings(monkeypatch, SESSIONVIEWER_BEHIND_TLS_PROXY="1", ALLOWED_HOSTS="viewer.example.com"),
    )
    response = Client().get(reverse("login"), HTTP_HOST="viewer.example.com", HTTP_X_FORWARDED_PROTO="http")
    assert response.status_code == 301
    assert response["Location"] == "https://viewer.example.com/accounts/login/"


def deploy_check(tmp_path: Path, **environment: str) -> list[str]:
    """The check ids `manage.py check --deploy` reports, run as an operator would."""
    # The browser tests' fixture sets DJANGO_ALLOW_ASYNC_UNSAFE for the test process; an operator's
    # server would not have it, and the deploy check rightly refuses it.
    left_out = {*ENVIRONMENT, "DJANGO_ALLOW_ASYNC_UNSAFE"}
    env = {name: value for name, value in os.environ.items() if name not in left_out}
    env |= {
        "DJANGO_SETTINGS_MODULE": "sessionviewer.settings",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "DEBUG": "0",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'check.sqlite3'}",
        **environment,
    }
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy"],
        cwd=BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return re.findall(r"\((\w+\.[WE]\d+)\)", result.stdout + result.stderr)


def test_behind_a_tls_proxy_the_deploy_check_reports_only_hsts_preload(tmp_path):
    # Preloading is a promise made to browser vendors for the whole domain: the README explains
    # why it stays off. Nothing else is left.
    found = deploy_check(tmp_path, SESSIONVIEWER_BEHIND_TLS_PROXY="1", ALLOWED_HOSTS="viewer.example.com")
    assert found == ["security.W021"]


def test_without_the_proxy_the_deploy_check_names_the_https_settings(tmp_path):
    found = deploy_check(tmp_path)
    assert sorted(found) == ["security.W004", "security.W008", "security.W012", "security.W016"]


# Login throttling


def test_login_throttling_is_on_by_default(monkeypatch):
    s = read_settings(monkeypatch)
    assert s.AXES_ENABLED is True
    assert s.AXES_FAILURE_LIMIT == 5
    assert s.AXES_COOLOFF_TIME.total_seconds() == 15 * 60
    assert s.AXES_LOCKOUT_PARAMETERS == ["username", "ip_address"]
    assert s.AUTHENTICATION_BACKENDS[0] == "axes.backends.AxesStandaloneBackend"


def test_login_throttling_limits_come_from_the_environment(monkeypatch):
    s = read_settings(
        monkeypatch, SESSIONVIEWER_LOGIN_FAILURE_LIMIT="10", SESSIONVIEWER_LOGIN_COOLOFF_MINUTES="60"
    )
    assert s.AXES_FAILURE_LIMIT == 10
    assert s.AXES_COOLOFF_TIME.total_seconds() == 60 * 60


def test_a_cooloff_of_zero_locks_out_until_an_admin_resets(monkeypatch):
    assert read_settings(monkeypatch, SESSIONVIEWER_LOGIN_COOLOFF_MINUTES="0").AXES_COOLOFF_TIME is None


def test_a_failure_limit_of_zero_turns_throttling_off(monkeypatch):
    assert read_settings(monkeypatch, SESSIONVIEWER_LOGIN_FAILURE_LIMIT="0").AXES_ENABLED is False


def test_codex_sessions_are_a_default_root():
    from sessionviewer import settings

    assert "codex=~/.codex/sessions" in settings.DEFAULT_ROOTS


def test_gemini_cli_sessions_are_a_default_root_and_in_the_demo():
    from sessionviewer import settings

    assert "gemini_cli=~/.gemini/tmp" in settings.DEFAULT_ROOTS
    assert f"gemini_cli={settings.DEMO_DIR / 'gemini/tmp'}" in settings.DEMO_ROOTS


def test_the_largest_inflated_event_is_256_mb_unless_told(monkeypatch):
    assert read_settings(monkeypatch).SESSIONVIEWER_MAX_EVENT_BYTES == 256 * 1024 * 1024
    assert (
        read_settings(monkeypatch, SESSIONVIEWER_MAX_EVENT_BYTES="1048576").SESSIONVIEWER_MAX_EVENT_BYTES
        == 2**20
    )


@pytest.mark.parametrize("value", ["0", "-1", "256MB"])
def test_a_largest_event_that_is_no_number_of_bytes_stops_the_start(monkeypatch, value):
    with pytest.raises(ImproperlyConfigured, match="SESSIONVIEWER_MAX_EVENT_BYTES"):
        read_settings(monkeypatch, SESSIONVIEWER_MAX_EVENT_BYTES=value)


def test_high_entropy_secrets_are_off_unless_turned_on(monkeypatch):
    assert read_settings(monkeypatch).SESSIONVIEWER_SECRETS_HIGH_ENTROPY is False
    assert read_settings(
        monkeypatch, SESSIONVIEWER_SECRETS_HIGH_ENTROPY="1"
    ).SESSIONVIEWER_SECRETS_HIGH_ENTROPY
    with pytest.raises(ImproperlyConfigured, match="SESSIONVIEWER_SECRETS_HIGH_ENTROPY"):
        read_settings(monkeypatch, SESSIONVIEWER_SECRETS_HIGH_ENTROPY="sometimes")


# The machine an indexer names its roots by


def test_the_machine_defaults_to_the_host_name(monkeypatch):
    assert socket.gethostname() == read_settings(monkeypatch).SESSIONVIEWER_MACHINE


def test_the_machine_is_taken_as_written(monkeypatch):
    name = "laptop · Ada's (2)" + "x" * 82
    assert name == read_settings(monkeypatch, SESSIONVIEWER_MACHINE=name).SESSIONVIEWER_MACHINE


@pytest.mark.parametrize("value", ["x" * 101, "tab\there", "new\nline", " padded", "padded ", "bell\x07"])
def test_a_machine_name_too_long_or_unprintable_is_refused_at_start(monkeypatch, value):
    with pytest.raises(ImproperlyConfigured, match="SESSIONVIEWER_MACHINE must be 1 to 100 printable"):
        read_settings(monkeypatch, SESSIONVIEWER_MACHINE=value)


# SESSIONVIEWER_ROOTS


def test_roots_replace_the_demo_data(monkeypatch):
    module = read_settings(monkeypatch, SESSIONVIEWER_ROOTS="claude_code=/srv/mine")
    roots = module.SESSIONVIEWER_ROOTS
    assert roots == ["claude_code=/srv/mine"]


def test_demo_in_the_roots_keeps_the_demo_data_beside_ones_own(monkeypatch):
    module = read_settings(monkeypatch, SESSIONVIEWER_ROOTS="claude_code=/srv/mine, demo")
    roots = module.SESSIONVIEWER_ROOTS
    assert roots == ["claude_code=/srv/mine", *module.DEMO_ROOTS]


# PostgreSQL


def test_postgresql_connections_never_compile_statements_with_jit(monkeypatch):
    s = read_settings(monkeypatch, DATABASE_URL="postgres://viewer@db.example.com:5432/sessions")
    assert s.DATABASES["default"]["OPTIONS"]["options"] == "-c jit=off"


def test_options_given_in_the_database_url_are_kept_beside_jit_off(monkeypatch):
    url = "postgres://viewer@db.example.com:5432/sessions?options=-c%20statement_timeout%3D5000"
    s = read_settings(monkeypatch, DATABASE_URL=url)
    assert s.DATABASES["default"]["OPTIONS"]["options"] == "-c statement_timeout=5000 -c jit=off"


def test_sqlite_connections_get_no_postgresql_options(monkeypatch, tmp_path):
    s = read_settings(monkeypatch, DATABASE_URL=f"sqlite:///{tmp_path / 'index.sqlite3'}")
    assert "options" not in s.DATABASES["default"]["OPTIONS"]
