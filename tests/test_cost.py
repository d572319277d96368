"""Cost per session as the index stores it: one usage per message (the last streamed line),
cache writes by kind, subagents apart, appends across passes, every format."""

import re
import shutil
from pathlib import Path

import orjson
import pytest
from django.core.management import CommandError, call_command
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from sessionviewer import prices, readers
from sessionviewer.index import copies, fold, index_roots
from sessionviewer.models import CopiedUsage, Session
from sessionviewer.roots import RootSpec

pytestmark = pytest.mark.django_db

COST_TREE = Path(__file__).parent / "fixtures" / "claude_code" / "cost"
# claude-opus-4-6 at $5 input, $25 output, $0.50 cache read, $6.25 5-minute and $10 1-hour
# cache writes per million: 3 input, 500 output (the last streamed line, not the first's 13),
# 20,000 cache read, 4,000 5-minute and 6,000 1-hour cache writes.
MAIN_COST = (3 * 5 + 500 * 25 + 20_000 * 0.5 + 4_000 * 6.25 + 6_000 * 10) / 1e6
SUBAGENT_COST = (1_000 * 1 + 200 * 5) / 1e6  # claude-haiku-4-5


@pytest.fixture(autouse=True)
def _no_prices_file(settings, tmp_path):
    settings.DATA_DIR = tmp_path / "data"
    prices.clear_cache()
    yield
    prices.clear_cache()


@pytest.fixture
def indexed(tmp_path):
    root = shutil.copytree(COST_TREE, tmp_path / "projects")
    index_roots([RootSpec(root, "claude_code")])
    return root


def test_a_streamed_reply_is_priced_once_with_its_last_usage_line(indexed):
    main = Session.objects.get(kind="main")
    assert main.cost == pytest.approx(MAIN_COST)


def test_one_hour_cache_writes_are_priced_apart_from_five_minute_ones(indexed):
    line = Session.objects.get(kind="main").cost_to_dict()["models"][0]["lines"][0]
    assert line["tokens"]["cache_write_1h"] == 6_000
    assert line["tokens"]["cache_write_5m"] == 4_000
    assert line["rates"]["cache_write_1h"] == 10.0


def test_a_model_without_a_price_leaves_its_tokens_unpriced_not_free(indexed):
    main = Session.objects.get(kind="main")
    assert main.unpriced_tokens == 150
    fable = next(m for m in main.cost_to_dict()["models"] if m["model"] == "claude-fable-9")
    assert fable["cost"] is None


def test_a_subagent_has_its_own_cost_and_its_parent_does_not_count_it(indexed):
    subagent = Session.objects.get(kind="subagent")
    assert subagent.parent == Session.objects.get(kind="main")
    assert subagent.cost == pytest.approx(SUBAGENT_COST)
    assert subagent.parent.cost == pytest.approx(MAIN_COST)


def test_the_usage_lines_add_up_to_the_session_tokens(indexed):
    for session in Session.objects.all():
        lines = session.usage_lines.values()
        assert sum(prices.line_tokens(tokens) for tokens in lines) == session.total_tokens


def test_a_reply_streamed_across_two_passes_is_priced_once(tmp_path):
    root = shutil.copytree(COST_TREE, tmp_path / "projects")
    (root / "-home-me-shop" / "5e55a0e1-0000-4000-8000-000000000001").rename(tmp_path / "subagents")
    path = next(root.glob("*/*.jsonl"))
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:2]))  # the prompt and the reply's first streamed line
    index_roots([RootSpec(root, "claude_code")])
    with path.open("ab") as appended:
        appended.write(b"".join(lines[2:]))
    index_roots([RootSpec(root, "claude_code")])
    assert Session.objects.get().cost == pytest.approx(MAIN_COST)


def test_prices_changed_by_the_prices_file_apply_when_sessions_are_priced_again(indexed, settings):
    settings.DATA_DIR.mkdir(exist_ok=True)  # the pass keeps the rates it looked up there
    (settings.DATA_DIR / "prices.toml").write_text('[models."claude-fable-9"]\ninput = 1000\noutput = 0\n')
    prices.clear_cache()
    main = Session.objects.get(kind="main")
    main.apply_prices()
    assert main.cost == pytest.approx(MAIN_COST + 100 * 1000 / 1e6)
    assert main.unpriced_tokens == 0


def folded(path: Path, fmt: str) -> fold.SessionState:
    state = fold.SessionState(format=fmt)
    fold.fold_entries(state, readers.read_session(path, fmt).entries)
    return state


FIXTURES = Path(__file__).parent / "fixtures"


@pytest.mark.parametrize(
    ("path", "fmt", "usd"),
    [
        # claude-sonnet-4-5 ($3 in, $15 out, $0.30 cache read, $3.75 cache write), provider anthropic
        (
            "go_agent/all_block_types.jsonl",
            "go_agent",
            (100 * 3 + 50 * 15 + 80 * 0.3 + 20 * 3.75 + 30 * 3 + 5 * 15) / 1e6,
        ),
        ("openclaw/pi_v3_all_kinds.jsonl", "openclaw", (100 * 3 + 40 * 15 + 60 * 0.3 + 10 * 3.75) / 1e6),
    ],
)
def test_every_format_with_usage_is_priced_by_its_model_and_provider(path, fmt, usd):
    costing = prices.price_lines(folded(FIXTURES / path, fmt).usage_lines)
    assert costing["cost"] == pytest.approx(usd)


def test_a_format_without_usage_has_no_cost():
    state = folded(FIXTURES / "fluux_xmpp" / "one_to_one.jsonl", "fluux_xmpp")
    assert prices.price_lines(state.usage_lines) == {"cost": None, "unpriced_tokens": 0, "models": []}


def test_reprice_applies_a_changed_prices_file_to_every_session(indexed, settings):
    settings.DATA_DIR.mkdir(exist_ok=True)  # the pass keeps the rates it looked up there
    (settings.DATA_DIR / "prices.toml").write_text('[models."claude-fable-9"]\ninput = 1000\noutput = 0\n')
    call_command("reprice")
    assert Session.objects.get(kind="main").unpriced_tokens == 0


def test_reprice_reports_a_bad_prices_file(indexed, settings):
    settings.DATA_DIR.mkdir(exist_ok=True)  # the pass keeps the rates it looked up there
    (settings.DATA_DIR / "prices.toml").write_text("[models\n")
    with pytest.raises(CommandError, match="prices.toml"):
        call_command("reprice")


# --- Where cost is shown ---------------------------------------------------------------------------


def test_the_list_has_a_cost_column_sorted_dearest_first(indexed, client, viewer):
    body = client.get("/?_sort=cost").content.decode()
    assert (
        '<td data-label="Cost" class="num" title="$0.108 + 150 tokens without a price">'
        '$0.108 <span class="unpriced">+ no price</span></td>'
    ) in body
    main, subagent = (Session.objects.get(kind=k) for k in ("main", "subagent"))
    assert body.index(main.get_absolute_url()) < body.index(subagent.get_absolute_url())


def test_the_api_list_sorts_by_cost_and_gives_it_with_its_unpriced_tokens(indexed, client, viewer):
    sessions = client.get("/api/sessions?_sort=cost&_sort_desc=0&_flat=1").json()["sessions"]
    assert [s["cost"]["usd"] for s in sessions] == pytest.approx([SUBAGENT_COST, MAIN_COST])
    assert sessions[1]["cost"]["unpriced_tokens"] == 150


def test_the_transcript_header_shows_the_cost_and_the_subagents_apart(indexed, client, viewer):
    main = Session.objects.get(kind="main")
    body = client.get(main.get_absolute_url()).content.decode()
    assert '<dd class="cost">$0.108 + 150 tokens without a price · subagents apart: $0.002 · ' in body
    assert f'<a href="/sessions/{main.id}/cost/">how this was computed</a>' in body


def test_each_turn_shows_its_cost_and_a_model_without_a_price_says_so(indexed, client, viewer):
    body = client.get(Session.objects.get(kind="main").get_absolute_url()).content.decode()
    assert '">$0.108</span>' in body
    assert '<span class="usage cost" title="No price for claude-fable-9">no price</span>' in body


@pytest.mark.parametrize("prefix", ["", "/api"])
def test_the_cost_page_lists_tokens_by_kind_times_rate_per_model(indexed, client, viewer, prefix):
    main = Session.objects.get(kind="main")
    response = client.get(f"{prefix}/sessions/{main.id}/cost" + ("/" if not prefix else ""))
    if prefix:
        data = response.json()
        opus = data["models"][0]
        assert opus["model"] == "claude-opus-4-6"
        assert opus["lines"][0]["tokens"]["cache_write_1h"] == 6000
        assert opus["lines"][0]["rates"]["cache_write_1h"] == 10.0
        assert data["subagents_cost"] == pytest.approx(SUBAGENT_COST)
    else:
        body = response.content.decode()
        assert (
            '<tr><th scope="row">cache write, 1 h</th><td class="num">6,000</td><td class="num">10.0</td><td class="num">$0.06</td></tr>'
            in body
        )
        assert "claude-fable-9 · no price" in body


def priced_over_three_days(settings) -> Session:
    """claude-fable-9 on 1 and 2 March at one rate, on 3 March from a dearer provider (prices.toml)."""
    settings.DATA_DIR.mkdir(exist_ok=True)
    (settings.DATA_DIR / "prices.toml").write_text(
        '[models."claude-fable-9"]\ninput = 1\noutput = 2\n[models."dear/claude-fable-9"]\ninput = 4\noutput = 8\n'
    )
    prices.clear_cache()
    source = Session.objects.first().source
    lines = {
        prices.line_key("claude-fable-9", provider, day, context): {
            "input": 1_234_567,
            "output": 1000,
            "turns": 3,
        }
        for provider, day, context in (
            ("", "2026-03-01", 0),
            ("", "2026-03-02", 32_000),
            ("dear", "2026-03-03", 0),
        )
    }
    return Session.objects.create(source=source, key="three-days", format="claude_code", usage_lines=lines)


def cost_tables(body: str) -> list[str]:
    return re.findall(r'<table class="cost-lines">.*?</table>', body, re.S)


def test_the_cost_page_shows_one_table_for_days_at_the_same_rates(indexed, client, viewer, settings):
    session = priced_over_three_days(settings)
    body = client.get(f"/sessions/{session.id}/cost/").content.decode()
    tables = cost_tables(body)
    assert len(tables) == 2
    assert "<caption>2026-03-01 to 2026-03-02, 2 days · 6 turns · " in tables[0]
    assert "over 32.0k" not in tables[0]  # the same rates whatever the input's size
    assert '<td class="num">2,469,134</td>' in tables[0]


def test_the_cost_page_prints_counts_with_thousands_separators(indexed, client, viewer, settings):
    session = priced_over_three_days(settings)
    body = client.get(f"/sessions/{session.id}/cost/").content.decode()
    assert '<tr><th scope="row">input</th><td class="num">1,234,567</td>' in cost_tables(body)[1]
    assert '<th scope="row">Total</th><td class="num">1,235,567</td>' in cost_tables(body)[1]


# --- A reply counted once, however many lines and files hold it ----------------------------------


def main_file(root: Path) -> Path:
    return root / "-home-me-shop" / "5e55a0e1-0000-4000-8000-000000000001.jsonl"


def without_subagents(tmp_path: Path) -> Path:
    root = shutil.copytree(COST_TREE, tmp_path / "projects")
    shutil.rmtree(root / "-home-me-shop" / "5e55a0e1-0000-4000-8000-000000000001")
    return root


def retold(line: bytes, uuid: str, session: str = "") -> bytes:
    """A line written again under another uuid (and session id): what a clone or a repeat holds."""
    record = orjson.loads(line)
    record["uuid"] = uuid
    if session:
        record["sessionId"] = session
    return orjson.dumps(record) + b"\n"


def test_a_reply_written_again_after_another_reply_is_counted_once(tmp_path):
    root = without_subagents(tmp_path)
    path = main_file(root)
    lines = path.read_bytes().splitlines(keepends=True)
    first_reply = [line for line in lines if b'"msg_1"' in line][-1]
    path.write_bytes(b"".join(lines) + retold(first_reply, "a-again"))  # msg_2 came between
    index_roots([RootSpec(root, "claude_code")])
    session = Session.objects.get()
    assert session.cost == pytest.approx(MAIN_COST)
    assert session.output_tokens == 500 + 50  # msg_1's last line, then msg_2 (claude-fable-9)


CLONE = "c10e0000-0000-4000-8000-000000000002"


def write_clone(root: Path, new_reply: bool = True) -> Path:
    """A session continued in a new file: the first one's lines copied, then a reply of its own."""
    lines = main_file(root).read_bytes().splitlines(keepends=True)
    copied = [retold(line, f"clone-{n}", CLONE) for n, line in enumerate(lines)]
    if new_reply:
        own = orjson.loads(lines[-1])
        own |= {"uuid": "clone-own", "parentUuid": f"clone-{len(lines) - 1}", "sessionId": CLONE}
        own["timestamp"] = "2026-02-11T09:00:00.000Z"
        own["message"] |= {"id": "msg_clone", "model": "claude-opus-4-6"}
        own["message"]["usage"] = {"input_tokens": 7, "output_tokens": 40}
        copied.append(orjson.dumps(own) + b"\n")
    clone = main_file(root).with_name(CLONE + ".jsonl")
    clone.write_bytes(b"".join(copied))
    return clone


CLONE_OWN_COST = (7 * 5 + 40 * 25) / 1e6


def test_a_session_continued_in_another_file_counts_only_its_own_replies(tmp_path):
    root = without_subagents(tmp_path)
    index_roots([RootSpec(root, "claude_code")])
    write_clone(root)
    index_roots([RootSpec(root, "claude_code")])
    original = Session.objects.get(session_uuid="5e55a0e1-0000-4000-8000-000000000001")
    clone = Session.objects.get(session_uuid=CLONE)
    assert original.cost == pytest.approx(MAIN_COST)
    assert clone.cost == pytest.approx(CLONE_OWN_COST)
    assert clone.output_tokens == 40
    assert sorted(clone.copied_usage.values_list("message_id", "counted_in")) == [
        ("msg_1", original.id),
        ("msg_2", original.id),
    ]
    lines = clone.usage_lines.values()
    assert sum(prices.line_tokens(tokens) for tokens in lines) == clone.total_tokens


@pytest.mark.parametrize("lookups", [copies.LOOKUPS, 0], ids=["looked-up", "whole-index"])
def test_a_first_index_of_both_files_counts_each_copied_reply_once(tmp_path, monkeypatch, lookups):
    monkeypatch.setattr(copies, "LOOKUPS", lookups)  # few sessions look up their replies; many scan
    root = without_subagents(tmp_path)
    write_clone(root)
    index_roots([RootSpec(root, "claude_code")])
    sessions = list(Session.objects.all())
    assert sum(s.cost for s in sessions) == pytest.approx(MAIN_COST + CLONE_OWN_COST)
    assert sum(s.output_tokens for s in sessions) == 500 + 50 + 40
    assert sum(s.copied_usage.count() for s in sessions) == 2


def _settled_as_they_are() -> tuple:
    rows = sorted(CopiedUsage.objects.values_list("id", "session_id", "message_id", "counted_in_id"))
    totals = sorted(Session.objects.values_list("id", "output_tokens", "cost", "usage_lines"))
    return rows, totals


def test_settling_again_what_is_settled_writes_nothing(tmp_path):
    root = without_subagents(tmp_path)
    write_clone(root)
    index_roots([RootSpec(root, "claude_code")])
    before = _settled_as_they_are()
    assert len(before[0]) == 2
    with transaction.atomic(), CaptureQueriesContext(connection) as statements:
        copies.settle(CopiedUsage.objects.values_list("message_id", flat=True))
    written = [
        q["sql"] for q in statements.captured_queries if q["sql"].startswith(("INSERT", "DELETE", "UPDATE"))
    ]
    assert written == []
    assert _settled_as_they_are() == before  # the same rows, not deleted and made again


def test_a_pass_beside_a_larger_index_settles_only_the_replies_it_read(tmp_path, monkeypatch):
    """Past LOOKUPS sessions read whole a pass looks at every reply of the index at once,
    but only when they are most of it: a machine's first pass beside others' sessions
    settled all of theirs again."""
    root = without_subagents(tmp_path)
    write_clone(root)
    index_roots([RootSpec(root, "claude_code")])
    before = _settled_as_they_are()
    other = tmp_path / "go"
    other.mkdir()
    (other / "20260226-143012-44444444.jsonl").write_text(
        '{"type":"session","id":"44444444","version":1,"timestamp":"2026-02-26T14:30:12Z","cwd":"/q"}\n'
        '{"type":"message","id":"dddd0001","parent_id":"","timestamp":"2026-02-26T14:30:13Z","role":"user",'
        '"message":{"role":"user","content":[{"type":"text","text":"Hello"}]}}\n'
        '{"type":"message","id":"dddd0002","parent_id":"dddd0001","timestamp":"2026-02-26T14:31:13Z",'
        '"role":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"Hi."}],'
        '"model":"claude-sonnet-4-5","provider":"anthropic","usage":{"input":10,"output":5}}}\n'
    )
    monkeypatch.setattr(copies, "LOOKUPS", 0)
    settled: list[str] = []
    settle = copies.settle
    monkeypatch.setattr(copies, "settle", lambda ids: settle(settled.extend(ids) or ids))
    index_roots([RootSpec(other, "go_agent")])
    assert Session.objects.count() == 3
    assert settled == []  # not the claude sessions' msg_1 and msg_2
    assert _settled_as_they_are()[0] == before[0]


def test_appending_to_both_files_keeps_the_copies_counted_once(tmp_path):
    root = without_subagents(tmp_path)
    index_roots([RootSpec(root, "claude_code")])
    clone = write_clone(root, new_reply=False)
    index_roots([RootSpec(root, "claude_code")])
    for path in (main_file(root), clone):
        with path.open("ab") as appended:
            appended.write(b'{"type":"user","uuid":"later","message":{"role":"user","content":"Thanks"}}\n')
    index_roots([RootSpec(root, "claude_code")])
    assert sum(s.cost for s in Session.objects.all() if s.cost) == pytest.approx(MAIN_COST)


def test_when_the_session_that_counted_a_reply_goes_its_copy_counts_it(tmp_path):
    root = without_subagents(tmp_path)
    index_roots([RootSpec(root, "claude_code")])
    write_clone(root)
    index_roots([RootSpec(root, "claude_code")])
    main_file(root).unlink()
    index_roots([RootSpec(root, "claude_code")])
    clone = Session.objects.get()
    assert clone.cost == pytest.approx(MAIN_COST + CLONE_OWN_COST)
    assert not clone.copied_usage.exists()


def test_a_rewritten_original_still_counts_its_replies_once(tmp_path):
    root = without_subagents(tmp_path)
    index_roots([RootSpec(root, "claude_code")])
    write_clone(root)
    index_roots([RootSpec(root, "claude_code")])
    path = main_file(root)
    path.write_bytes(b"\n" + path.read_bytes())  # its first bytes changed: read again whole
    index_roots([RootSpec(root, "claude_code")])
    assert sum(s.cost for s in Session.objects.all()) == pytest.approx(MAIN_COST + CLONE_OWN_COST)
    assert CopiedUsage.objects.count() == 2


GO_PARENT = "20260226-143012-22222222.jsonl"


def test_a_go_agent_fork_does_not_count_the_replies_it_copied_from_its_parent(tmp_path):
    """The fork is indexed first, yet the parent counts the reply: a main session before a fork."""
    reply = (
        '{"type":"message","id":"bbbb0002","parent_id":"bbbb0001","timestamp":"2026-02-26T14:31:13Z",'
        '"role":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"Done."}],'
        '"model":"claude-sonnet-4-5","provider":"anthropic","usage":{"input":100,"output":50}}}\n'
    )
    prompt = (
        '{"type":"message","id":"bbbb0001","parent_id":"","timestamp":"2026-02-26T14:30:13Z","role":"user",'
        '"message":{"role":"user","content":[{"type":"text","text":"Refactor the auth module."}]}}\n'
    )
    root = tmp_path / "sessions"
    root.mkdir()
    (root / "20260226-153000-33333333.jsonl").write_text(
        '{"type":"session","id":"33333333","version":1,"timestamp":"2026-02-26T15:30:00Z","cwd":"/p"}\n'
        f'{{"type":"branch","id":"cccc0001","timestamp":"2026-02-26T15:30:00Z",'
        f'"parent_session_path":"{root / GO_PARENT}","fork_entry_id":"bbbb0002"}}\n' + prompt + reply
    )
    index_roots([RootSpec(root, "go_agent")])
    (root / GO_PARENT).write_text(
        '{"type":"session","id":"22222222","version":1,"timestamp":"2026-02-26T14:30:12Z","cwd":"/p"}\n'
        + prompt
        + reply
    )
    index_roots([RootSpec(root, "go_agent")])
    parent, fork = Session.objects.get(kind="main"), Session.objects.get(kind="fork")
    assert parent.cost == pytest.approx((100 * 3 + 50 * 15) / 1e6)
    assert (fork.cost, fork.total_tokens) == (None, 0)
    assert list(fork.copied_usage.values_list("message_id", "counted_in")) == [("bbbb0002", parent.id)]


@pytest.mark.parametrize("prefix", ["", "/api"])
def test_the_cost_page_says_which_session_counts_the_copied_replies(tmp_path, client, viewer, prefix):
    root = without_subagents(tmp_path)
    index_roots([RootSpec(root, "claude_code")])
    write_clone(root)
    index_roots([RootSpec(root, "claude_code")])
    original, clone = (
        Session.objects.get(session_uuid=u) for u in ("5e55a0e1-0000-4000-8000-000000000001", CLONE)
    )
    response = client.get(f"{prefix}/sessions/{clone.id}/cost" + ("/" if not prefix else ""))
    if prefix:
        assert response.json()["copied"] == [
            {
                "id": original.id,
                "title": original.display_title,
                "replies": 2,
                "tokens": original.total_tokens,
            }
        ]
    else:
        body = response.content.decode()
        assert (
            f'2 replies, {original.total_tokens / 1000:.1f}k tokens: counted in <a href="/sessions/{original.id}/cost/">'
            in body
        )


def test_the_transcript_header_says_how_many_replies_are_counted_in_another_session(tmp_path, client, viewer):
    root = without_subagents(tmp_path)
    index_roots([RootSpec(root, "claude_code")])
    write_clone(root)
    index_roots([RootSpec(root, "claude_code")])
    clone = Session.objects.get(session_uuid=CLONE)
    body = client.get(clone.get_absolute_url()).content.decode()
    assert "$0.001 · 2 replies copied from another session, counted there · " in body


def test_a_session_all_of_whose_replies_are_counted_elsewhere_says_so_not_no_price(tmp_path, client, viewer):
    root = without_subagents(tmp_path)
    index_roots([RootSpec(root, "claude_code")])
    write_clone(root, new_reply=False)
    index_roots([RootSpec(root, "claude_code")])
    clone = Session.objects.get(session_uuid=CLONE)
    page = client.get(f"/sessions/{clone.id}/cost/").content.decode()
    assert '<p class="cost-total">Nothing of its own: every reply is counted in another session</p>' in page
    header = client.get(clone.get_absolute_url()).content.decode()
    assert '<dd class="cost">none of its own · 2 replies copied from another session, counted there' in header
