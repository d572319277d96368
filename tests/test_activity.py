"""The activity page: charts as inline SVG with their numbers, filters as on the list, a JSON twin."""

from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path

import orjson
import pytest
from django.template import engines
from django.urls import reverse
from django.utils import timezone

from sessionviewer import activity
from sessionviewer.activity import bar_chart, column_chart
from sessionviewer.models import Session, Source

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_cache")]


def test_activity_page_draws_charts_with_titles_and_tables(client, demo, viewer):
    body = client.get(reverse("activity")).content.decode()
    assert body.count("<svg") >= 6
    assert '<title id="chart-sessions_per_model-title">Sessions using each model</title>' in body
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


# --- Figures that add up ------------------------------------------------------------------------------

TODAY = date(2026, 11, 24)


@pytest.fixture
def spread(db):
    """Sessions started over 400 days, in 15 projects, each using two models (one without
    a price), a subagent, and one session without a date."""
    source = Source.objects.create(path="/spread", format="claude_code")
    for n in range(40):
        started = datetime.combine(TODAY - timedelta(days=n * 10), time(12), UTC) if n != 39 else None
        parent = Session.objects.filter(kind="main").first() if n == 5 else None
        Session.objects.create(
            source=source,
            key=f"s{n}",
            format="claude_code",
            kind="subagent" if parent else "main",
            parent=parent,
            project=f"/home/me/projects/clients/acme/number-{n % 15}",
            started_at=started,
            updated_at=started,
            input_tokens=100 * n,
            output_tokens=7 * n + 1,
            cost=0.01 * n + 0.005,
            unpriced_tokens=n + 1,
            model_costs={
                "claude-opus-4-6": {"tokens": 100 * n + 6 * n, "cost": 0.01 * n + 0.005},
                f"local-{n % 14}": {"tokens": n + 1, "cost": None},
            },
        )


@pytest.mark.parametrize("range_name", ["7", "30", "90", "all"])
def test_every_chart_adds_up_to_the_header_totals(spread, range_name):
    data = activity.report({"_range": range_name}, today=TODAY)
    totals, charts = data["totals"], data["charts"]
    assert totals["sessions"] > 0

    def total(key):
        return sum(v.get("value") for v in charts[key].get("bars") or charts[key]["columns"])

    dated = totals["sessions"] - totals["undated"]
    undated = Session.objects.filter(started_at=None).get()
    undated_tokens = undated.total_tokens if range_name == "all" else 0
    undated_cost = undated.cost if range_name == "all" else 0
    assert total("sessions_per_day") == dated
    assert total("tokens_per_day") == totals["tokens"] - undated_tokens
    assert total("cost_per_day") == pytest.approx(totals["cost"] - undated_cost)
    for key in ("tokens_per_model", "tokens_per_place", "tokens_per_format"):
        assert total(key) == totals["tokens"], key
    for key in ("cost_per_model", "cost_per_place", "cost_per_format"):
        assert total(key) == pytest.approx(totals["cost"]), key
    for key in ("sessions_per_place", "sessions_per_format"):
        assert total(key) == totals["sessions"], key
    unpriced = sum(r["unpriced_tokens"] for r in data["models"])
    assert unpriced == totals["unpriced_tokens"]


@pytest.mark.parametrize(("range_name", "sessions"), [("7", 1), ("30", 3), ("90", 9), ("all", 40)])
def test_the_range_covers_the_sessions_started_in_it(spread, range_name, sessions):
    assert activity.report({"_range": range_name}, today=TODAY)["totals"]["sessions"] == sessions


def test_a_long_range_is_drawn_by_week_with_dated_ticks(spread):
    data = activity.report({"_range": "all"}, today=TODAY)
    assert data["range"]["bucket"] == "week"
    ticks = data["charts"]["sessions_per_day"]["ticks"]
    assert 2 <= len(ticks) <= activity.TICKS
    assert all(date.fromisoformat(t["label"]).weekday() == 0 for t in ticks)


def test_the_page_says_which_range_it_shows_and_offers_the_presets(client, spread, viewer):
    body = client.get(reverse("activity"), {"_range": "30"}).content.decode()
    assert "Sessions started in the last 30 days, " in body
    assert 'aria-current="true" class="current">30 days</a>' in body
    for label in ("7 days", "90 days", "All"):
        assert f">{label}</a>" in body


@pytest.fixture
def on_today(monkeypatch):
    """The server's today is the fixture's: a range's sessions stay in it whatever the date."""
    localdate = timezone.localdate
    monkeypatch.setattr(
        timezone, "localdate", lambda value=None, tz=None: localdate(value, tz) if value else TODAY
    )


def test_the_json_twin_says_its_range(client, spread, viewer, on_today):
    body = client.get(reverse("api-activity"), {"_range": "7"}).json()
    assert body["range"]["name"] == "7"
    assert body["totals"]["sessions"] == sum(d["sessions"] for d in body["days"]) == 1


def test_an_unknown_range_is_a_400(client, viewer):
    assert client.get(reverse("activity"), {"_range": "14"}).status_code == 400


def test_chart_labels_are_shortened_from_the_left_with_the_whole_on_hover(client, spread, viewer):
    body = client.get(reverse("activity")).content.decode()
    assert '<text x="244" y="15.0" text-anchor="end">…rojects/clients/acme/number-0</text>' in body
    assert "<title>/home/me/projects/clients/acme/number-0: 3 sessions</title>" in body


def test_these_sessions_on_the_list_are_the_ones_the_range_covers(client, spread, viewer):
    in_range = activity.report({"_range": "90"})["totals"]["sessions"]
    listed = client.get(reverse("api-session-list"), {"_range": "90", "_flat": "1"}).json()["count"]
    assert listed == in_range  # the link says _flat=1: Activity counts subagents as sessions


def test_all_runs_from_the_first_session_to_the_last_not_to_today(spread):
    later = TODAY + timedelta(days=300)
    data = activity.report({"_range": "all"}, today=later)
    assert data["range"]["until"] == TODAY
    assert data["days"][-1]["day"] <= TODAY.isoformat()
    assert data["totals"]["sessions"] == 40


def test_only_the_places_kept_alone_are_linked(spread):
    """15 projects, 12 rows: eleven projects, and the rest summed in one row with no link. A
    project's URL is made for those eleven only (an index of many machines has thousands)."""
    asked = []
    places = activity.report(
        {"_range": "all"}, today=TODAY, project_url=lambda p: asked.append(p) or f"/p/{len(asked)}"
    )["places"]
    assert len(places) == activity.FACET_LIMIT and places[-1]["place"].startswith(activity.OTHER)
    assert len(asked) == activity.FACET_LIMIT - 1
    assert asked == [p["place"] for p in places[:-1]]
    assert [p["url"] for p in places[:-1]] == [f"/p/{n}" for n in range(1, activity.FACET_LIMIT)]
    assert places[-1].get("url") is None and "project" not in places[0] and "jid" not in places[0]


def test_the_page_says_all_ends_on_the_last_sessions_day(client, spread, viewer):
    Session.objects.filter(started_at__gt=datetime.combine(TODAY, time(0), UTC) - timedelta(days=50)).delete()
    last = Session.objects.exclude(started_at=None).order_by("-started_at").first().started_at
    body = client.get(reverse("activity"), {"_range": "all"}).content.decode()
    assert f"to {timezone.localdate(last).isoformat()}, by week." in body


def test_ticks_carry_their_years_where_the_chart_spans_more_than_one(client, spread, viewer):
    ticks = activity.report({"_range": "all"}, today=TODAY)["charts"]["sessions_per_day"]["ticks"]
    assert all(t["text"] == t["label"] for t in ticks)  # "2025-06-09": weeks over two years
    body = client.get(reverse("activity"), {"_range": "all"}).content.decode()
    assert (
        f'<text class="tick" x="{ticks[1]["x"]:.1f}" y="175" text-anchor="middle">{ticks[1]["label"]}</text>'
        in body
    )


def test_ticks_within_one_year_leave_the_year_out():
    chart = activity.column_chart(
        "Sessions", [("2026-03-01", 1), ("2026-03-02", 0), ("2026-03-03", 2)], "sessions"
    )
    assert [t["text"] for t in chart["ticks"]] == ["03-01", "03-03"]


def test_ticks_by_month_over_several_years_say_the_month_and_year():
    rows = [(f"{2024 + m // 12}-{m % 12 + 1:02d}-01", m) for m in range(30)]
    chart = activity.column_chart("Sessions", rows, "sessions", bucket="month")
    assert chart["ticks"][0]["text"] == "2024-01"
    assert all(len(t["text"]) == 7 for t in chart["ticks"])


# The chart template before its columns were drawn by display.chart_columns, kept as main had
# it: a chart must come out the same, byte for byte.
CHART_TEMPLATE = Path(__file__).parent / "fixtures" / "templates" / "chart_before_python.html"
HOSTILE = '<script>alert("x")</script> & \u202e'


def charts() -> list[dict]:
    days = [(f"2026-03-{n:02d}", n * 7 % 5) for n in range(1, 31)]
    return [
        column_chart("Sessions per day", days, "sessions"),
        column_chart("Cost per day", [(d, n * 0.0123) for d, n in days] + [("2026-04-01", 0.00001)], "USD"),
        column_chart(
            HOSTILE, [(HOSTILE, 3), ("2026-01-01", 1.5), ("2026-01-02", 0)], HOSTILE, bucket="month"
        ),
        column_chart("Nothing", [], "tokens"),
        bar_chart(
            "Tokens per model", [(HOSTILE, 12_345), ("claude-opus-4-6", 7)], "tokens", ["/?a=1&b=2", None]
        ),
        bar_chart("Cost per model", [("m", 0.5), ("n", 0.0)], "USD"),
        bar_chart(
            "Cost per project or JID",
            [
                ("/home/dev/work/a/very/long/path/to/the/project/" + HOSTILE, 1234.5),
                ("(the rest): 3", 0.0123),
            ],
            "USD",
            ["/projects/~7E~2Fwork/", None],
        ),
        bar_chart("Sessions per project", [("p" * 40, 1_234_567), ("q", -1), ("r", 0)], "sessions"),
    ]


@pytest.mark.parametrize("chart", charts(), ids=lambda chart: chart["title"][:12])
def test_a_chart_is_what_its_template_made(chart):
    context = {"key": "k", "chart": chart}
    expected = engines["django"].from_string(CHART_TEMPLATE.read_text()).render(context)
    assert engines["django"].get_template("activity/_chart.html").render(context) == expected
