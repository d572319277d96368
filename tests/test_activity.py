"""The activity page: charts as inline SVG with their numbers, filters as on the list, a JSON twin."""

import orjson
import pytest
from django.urls import reverse

from sessionviewer.activity import bar_chart, column_chart
from tests import test_pages

pytestmark = pytest.mark.django_db

# Fixtures shared with test_pages: the demo index and a clean thread cache (viewer is in conftest).
demo = test_pages.demo
fresh_cache = test_pages.fresh_cache


def test_activity_page_draws_charts_with_titles_and_tables(client, demo, viewer):
    body = client.get(reverse("activity")).content.decode()
    assert body.count("<svg") >= 6
    assert '<title id="chart-sessions_per_model-title">Sessions per model</title>' in body
    assert '<td>claude-opus-4-6</td><td class="num">3</td>' in body
    assert "Busiest sessions" in body


def test_activity_filters_like_the_list(client, demo, viewer):
    body = client.get(reverse("activity"), {"format": "fluux_xmpp"}).content.decode()
    assert "claude-opus-4-6" not in body.split('class="charts"')[1]
    assert "<div>5<span>sessions</span></div>" in body


def test_activity_json_twin_has_the_same_numbers(client, demo, viewer):
    body = orjson.loads(client.get(reverse("api-activity"), {"format": "go_agent"}).content)
    assert body["totals"]["sessions"] == 2
    assert {r["format"] for r in body["formats"]} == {"go_agent"}
    assert sum(d["sessions"] for d in body["days"]) == 2
    assert body["busiest"][0]["tokens"] >= body["busiest"][-1]["tokens"]


def test_activity_with_a_bad_filter_is_400(client, demo, viewer):
    assert client.get(reverse("activity"), {"_sort": "colour"}).status_code == 400
    assert client.get(reverse("api-activity"), {"format": "doc"}).status_code == 400


def test_an_htmx_request_gets_only_the_charts(client, demo, viewer):
    body = client.get(reverse("activity"), {"format": "go_agent"}, HTTP_HX_REQUEST="true").content.decode()
    assert "<html" not in body and body.lstrip().startswith('<div id="activity-charts"')


def test_bar_widths_scale_to_the_largest_value():
    chart = bar_chart("t", [("a", 10), ("b", 5), ("c", 0)], "sessions")
    assert [b["width"] for b in chart["bars"]] == [300, 150, 0]


def test_columns_of_an_empty_chart_do_not_divide_by_zero():
    chart = column_chart("t", [("2026-01-01", 0)], "tokens")
    assert chart["columns"][0]["height"] == 0


def test_activity_charts_tokens_per_project_and_sessions_per_format(client, demo, viewer):
    body = client.get(reverse("activity")).content.decode()
    assert '<title id="chart-tokens_per_place-title">Tokens per project or JID</title>' in body
    assert '<title id="chart-sessions_per_format-title">Sessions per format</title>' in body
    assert '<td>Fluux</td><td class="num">5</td>' in body


def test_activity_has_the_date_range_form(client, demo, viewer):
    body = client.get(reverse("activity"), {"updated_since": "2026-03-05"}).content.decode()
    assert 'class="date-range facet" hx-get="/activity/"' in body
    assert 'name="updated_since" value="2026-03-05"' in body
