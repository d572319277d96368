"""Login throttling (django-axes) on the app's login form and the admin's: after
SESSIONVIEWER_LOGIN_FAILURE_LIMIT failures for one user name or from one address, logins are refused."""

from __future__ import annotations

import logging

import pytest
from django.contrib.auth.models import User
from django.test import Client, RequestFactory
from django.urls import reverse

from sessionviewer.middleware import client_ip

pytestmark = pytest.mark.django_db

# Addresses from the documentation range (RFC 5737): no request leaves the test client.
ATTACKER = "192.0.2.66"
ELSEWHERE = "192.0.2.10"
LOGIN_FORMS = ["login", "admin:login"]


@pytest.fixture(autouse=True)
def throttling(settings):
    """The suite runs with throttling off (tests/settings.py); here it runs as it does in production."""
    settings.AXES_ENABLED = True
    assert settings.AXES_FAILURE_LIMIT == 5  # the default from sessionviewer/settings.py


@pytest.fixture(autouse=True)
def users():
    User.objects.create_superuser("admin", password="the right one")
    User.objects.create_user("vera", password="vera's own")


def log_in(form: str, username: str, password: str, address: str = ATTACKER):
    return Client(REMOTE_ADDR=address).post(reverse(form), {"username": username, "password": password})


def fail(form: str, times: int, username: str = "admin", address: str = ATTACKER) -> None:
    for _ in range(times):
        assert log_in(form, username, "a guess", address).status_code in (200, 429)


@pytest.mark.parametrize("form", LOGIN_FORMS)
def test_four_failures_leave_the_right_password_working(form):
    fail(form, 4)
    assert log_in(form, "admin", "the right one").status_code == 302


@pytest.mark.parametrize("form", LOGIN_FORMS)
def test_the_fifth_failure_locks_the_user_name_out_even_with_the_right_password(form):
    fail(form, 4)
    assert log_in(form, "admin", "a guess").status_code == 429
    refused = log_in(form, "admin", "the right one")
    assert refused.status_code == 429
    assert "_auth_user_id" not in refused.wsgi_request.session


@pytest.mark.parametrize("form", LOGIN_FORMS)
def test_a_locked_out_user_name_is_refused_from_any_address(form):
    fail(form, 5)
    assert log_in(form, "admin", "the right one", address=ELSEWHERE).status_code == 429


def test_failures_on_one_form_count_on_the_other():
    fail("login", 3)
    fail("admin:login", 2)
    assert log_in("login", "admin", "the right one", address=ELSEWHERE).status_code == 429


def test_failures_from_one_address_lock_out_every_user_name_from_it():
    for name in ["root", "administrator", "ed", "guest", "test"]:
        log_in("login", name, "a guess")
    assert log_in("login", "vera", "vera's own").status_code == 429


def test_another_user_from_another_address_logs_in_during_a_lockout():
    fail("login", 5)
    response = log_in("login", "vera", "vera's own", address=ELSEWHERE)
    assert response.status_code == 302
    assert response.wsgi_request.user.username == "vera"


def test_a_success_before_the_limit_starts_the_count_again():
    fail("login", 4)
    assert log_in("login", "admin", "the right one").status_code == 302
    fail("login", 4)
    assert log_in("login", "admin", "the right one").status_code == 302


def test_the_locked_out_page_says_why_and_when_to_try_again():
    fail("login", 5)
    body = log_in("login", "admin", "the right one").content.decode()
    assert "Too many failed logins" in body
    assert "<strong>admin</strong>" in body
    assert "after 5 failed tries" in body
    assert "Try again in 15 minutes" in body


def test_the_lockout_is_logged_with_the_user_name_and_address(caplog):
    with caplog.at_level(logging.WARNING, logger="axes"):
        fail("login", 4)
        assert not [r for r in caplog.records if "Locking out" in r.getMessage()]
        log_in("login", "admin", "a guess")
    [record] = [r for r in caplog.records if "Locking out" in r.getMessage()]
    assert record.levelno == logging.WARNING
    assert 'username: "admin"' in record.getMessage()
    assert f'ip_address: "{ATTACKER}"' in record.getMessage()
    assert "a guess" not in caplog.text  # never the password


def test_behind_the_proxy_the_address_is_the_one_the_proxy_added(settings):
    settings.SESSIONVIEWER_BEHIND_TLS_PROXY = True
    for forged in ["203.0.113.1", "203.0.113.2", "203.0.113.3", "203.0.113.4", "203.0.113.5"]:
        Client(REMOTE_ADDR="127.0.0.1", HTTP_X_FORWARDED_FOR=f"{forged}, {ATTACKER}").post(
            reverse("login"), {"username": f"user-{forged}", "password": "a guess"}
        )
    proxied = Client(REMOTE_ADDR="127.0.0.1", HTTP_X_FORWARDED_FOR=ATTACKER)
    assert proxied.post(reverse("login"), {"username": "vera", "password": "vera's own"}).status_code == 429
    # Everyone else comes through the same proxy, and is not locked out with the attacker.
    other = Client(REMOTE_ADDR="127.0.0.1", HTTP_X_FORWARDED_FOR=ELSEWHERE)
    assert other.post(reverse("login"), {"username": "vera", "password": "vera's own"}).status_code == 302


def test_without_the_proxy_setting_a_forwarded_address_is_not_believed(settings):
    settings.SESSIONVIEWER_BEHIND_TLS_PROXY = False
    request = RequestFactory().get("/", REMOTE_ADDR=ELSEWHERE, HTTP_X_FORWARDED_FOR=ATTACKER)
    assert client_ip(request) == ELSEWHERE


def test_failures_are_counted_in_the_database_every_web_process_shares():
    """Several web processes serve one index: a count kept in one process (or a cache of its
    own) would give an attacker five tries per process."""
    from axes.handlers.database import AxesDatabaseHandler
    from axes.handlers.proxy import AxesProxyHandler
    from axes.models import AccessAttempt

    assert isinstance(AxesProxyHandler.get_implementation(force=True), AxesDatabaseHandler)
    fail("login", 2)
    assert AccessAttempt.objects.get(username="admin").failures_since_start == 2
