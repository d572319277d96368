"""Reading the app's pages with the test client: a page's body, with every chunk scrolling
would load, and a session's transcript address."""

import html
import re

from django.urls import reverse

from sessionviewer.models import Session


def page(client, url, status=200, **params) -> str:
    response = client.get(url, params)
    body = response.getvalue()  # an export streams: getvalue joins its parts
    assert response.status_code == status, body[:2000]
    return body.decode()


def whole_page(client, url: str, body: str) -> str:
    """The page with every chunk after the first, as scrolling to the end would load them."""
    while found := re.search(r'<li id="entry-chunk" class="more" hx-get="([^"]+)"', body[-3000:]):
        assert found.group(1).startswith(url + "?")
        response = client.get(html.unescape(found.group(1)), HTTP_HX_REQUEST="true")
        assert response.status_code == 200
        body += response.content.decode()
    return body


def detail_url(session: Session) -> str:
    return reverse("session-detail", args=[session.id])
