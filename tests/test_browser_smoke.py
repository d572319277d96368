"""The browser reaches the app: login works and the session list renders."""

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_logged_in_admin_sees_the_session_list(browser_page):
    assert browser_page.locator("h1").inner_text() == "Sessions"
    assert "Log out admin" in browser_page.locator("header.site").inner_text()
