"""Threading rules on small entry lists built here; no files, no database."""

from datetime import UTC, datetime, timedelta

import pytest

from sessionviewer.readers import (
    ASSISTANT,
    COMPACTION,
    HEADER,
    MESSAGE,
    SUMMARY,
    TEXT,
    TOOL,
    TOOL_CALL,
    TOOL_RESULT,
    USER,
    Block,
    Entry,
)
from sessionviewer.threads import UnknownLeaf, active_leaf, build_thread, summaries_by_leaf

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _entry(id, parent, kind, role, at, blocks, **fields):
    timestamp = None if at is None else T0 + timedelta(seconds=at)
    return Entry(id=id, parent_id=parent, kind=kind, role=role, timestamp=timestamp, blocks=blocks, **fields)


def user(id, parent=None, at=None, **fields):
    return _entry(id, parent, MESSAGE, USER, at, [Block(TEXT, text=id)], **fields)


def reply(id, parent=None, at=None, calls=(), **fields):
    blocks = [Block(TOOL_CALL, name="bash", call_id=call) for call in calls] or [Block(TEXT, text=id)]
    return _entry(id, parent, MESSAGE, ASSISTANT, at, blocks, **fields)


def result(id, parent, call, at=None, **fields):
    return _entry(id, parent, MESSAGE, TOOL, at, [Block(TOOL_RESULT, call_id=call)], **fields)


def line(id, parent=None, kind="progress", at=None, **fields):
    return _entry(id, parent, kind, "", at, [], **fields)


def session(*entries):
    for number, entry in enumerate(entries, 1):
        entry.line = number
    return list(entries)


def ids(thread):
    return [item.entry.id for item in thread.items]


def item(thread, id):
    return next(i for i in thread.items if i.entry.id == id)


# Rule 1: the active leaf


def test_linear_chain_is_the_thread_in_file_order():
    entries = session(user("u1"), reply("a1", "u1"), user("u2", "a1"), reply("a2", "u2"))
    thread = build_thread(entries)
    assert ids(thread) == ["u1", "a1", "u2", "a2"]
    assert thread.leaf_id == "a2"
    assert thread.leaves == ["a2"]
    assert thread.branch_points == {}
    assert thread.problems == []


def test_reply_without_a_prompt_before_it_starts_the_thread():
    entries = session(reply("a1", message_id="m1"), reply("a2", "a1", message_id="m1"), user("u1", "a2"))
    assert ids(build_thread(entries)) == ["a1", "a2", "u1"]


def test_active_leaf_is_the_newest_branch_by_timestamp():
    entries = session(
        user("u1", at=0),
        reply("a1", "u1", at=1),
        user("new", "a1", at=50),
        reply("new-reply", "new", at=51),
        user("old", "a1", at=10),
        reply("old-reply", "old", at=11),
    )
    assert active_leaf(entries) == "new-reply"


def test_active_leaf_ties_and_missing_timestamps_go_to_the_later_line():
    entries = session(
        user("u1", at=0),
        reply("a1", "u1", at=1),
        user("first", "a1", at=5),
        reply("first-reply", "first", at=6),
        user("second", "a1", at=6),
        reply("second-reply", "second"),
    )
    assert active_leaf(entries) == "second-reply"


def test_active_leaf_ignores_a_summary_pointing_at_an_old_entry():
    entries = session(
        line("s", kind=SUMMARY, leaf_id="u1", summary="Old title"),
        user("u1", at=0),
        reply("a1", "u1", at=1),
        user("u2", "a1", at=2),
    )
    assert active_leaf(entries) == "u2"


def clock_stepped_back(*more):
    """Branch "old" written first at 10:00; then, after a rewind to a1, branch "new" written
    with a clock an hour behind: the newest branch has the oldest times."""
    hour = 3600
    return session(
        user("u1", at=hour),
        reply("a1", "u1", at=hour + 1),
        user("old", "a1", at=hour + 10),
        reply("old-reply", "old", at=hour + 11),
        user("new", "a1", at=20),
        reply("new-reply", "new", at=21),
        *more,
    )


def test_without_a_summary_a_clock_that_stepped_back_picks_the_abandoned_branch():
    assert active_leaf(clock_stepped_back()) == "old-reply"


def test_a_summary_naming_a_message_of_the_file_wins_over_timestamps():
    entries = clock_stepped_back(line("s", kind=SUMMARY, leaf_id="new-reply", summary="The new way"))
    thread = build_thread(entries)
    assert thread.leaf_id == "new-reply"
    assert {"new", "new-reply"} <= set(ids(thread)) and "old-reply" not in ids(thread)
    assert "old-reply" in thread.leaves  # the other branch stays one switch away


def test_a_summarys_message_that_went_on_leads_to_the_newest_leaf_below_it():
    entries = clock_stepped_back(
        line("s", kind=SUMMARY, leaf_id="new", summary="The new way"),
        user("later", "new-reply", at=30),
        reply("later-reply", "later", at=31),
    )
    assert active_leaf(entries) == "later-reply"


def test_the_last_summary_naming_a_message_of_the_file_wins():
    entries = clock_stepped_back(
        line("s1", kind=SUMMARY, leaf_id="new-reply", summary="The new way"),
        line("s2", kind=SUMMARY, leaf_id="old-reply", summary="The old way"),
    )
    assert active_leaf(entries) == "old-reply"


def test_a_summary_naming_a_message_of_another_file_keeps_the_timestamp_rule():
    entries = clock_stepped_back(line("s", kind=SUMMARY, leaf_id="elsewhere", summary="Another file"))
    assert active_leaf(entries) == "old-reply"


def test_empty_session_has_an_empty_thread():
    thread = build_thread([])
    assert thread.items == []
    assert thread.leaf_id is None
    assert thread.leaves == []


def test_session_without_conversation_has_no_leaf():
    entries = session(line("h", kind=HEADER), line("s", kind=SUMMARY, leaf_id="x", summary="t"))
    thread = build_thread(entries)
    assert active_leaf(entries) is None
    assert thread.leaf_id is None
    assert ids(thread) == ["h", "s"]


# Rule 2: compaction


def test_claude_compact_boundary_continues_at_its_logical_parent():
    entries = session(
        user("u1"),
        reply("a1", "u1"),
        line("snap", kind="file-history-snapshot"),
        line("b", None, kind=COMPACTION, logical_parent_id="a1"),
        user("sum", "b", is_meta=True, extra={"is_compact_summary": True}),
        user("u2", "sum"),
        reply("a2", "u2"),
    )
    entries[4].blocks = [Block(TEXT, text="This session is being continued")]
    thread = build_thread(entries)
    assert ids(thread) == ["u1", "a1", "snap", "b", "sum", "u2", "a2"]
    assert [i.compacted for i in thread.items] == [True, True, True, False, False, False, False]
    assert item(thread, "b").summary == "This session is being continued"
    assert [i.entry.id for i in thread.compactions] == ["b"]


def test_compact_boundary_with_missing_logical_parent_follows_the_last_message_before_it():
    entries = session(
        user("u1"),
        reply("a1", "u1"),
        line("snap", kind="file-history-snapshot"),
        line("b", None, kind=COMPACTION, logical_parent_id="gone"),
        user("u2", "b"),
    )
    thread = build_thread(entries)
    assert ids(thread) == ["u1", "a1", "snap", "b", "u2"]
    assert thread.items[1].compacted
    assert not thread.items[4].compacted


def test_first_kept_id_compacts_the_entries_before_it():
    entries = session(
        line("h", kind=HEADER),
        user("u1", ""),
        reply("a1", "u1", calls=["c1"]),
        result("r1", "a1", "c1"),
        reply("a2", "r1"),
        line("c", "a2", kind=COMPACTION, first_kept_id="r1", summary="## Goal"),
        user("u2", "c"),
    )
    thread = build_thread(entries)
    assert [i.entry.id for i in thread.items if i.compacted] == ["h", "u1", "a1"]
    assert item(thread, "c").summary == "## Goal"
    assert thread.problems == []


def test_first_kept_id_not_on_the_thread_compacts_everything_before_and_is_recorded():
    entries = session(user("u1"), reply("a1", "u1"), line("c", "a1", kind=COMPACTION, first_kept_id="nope"))
    thread = build_thread(entries)
    assert [i.compacted for i in thread.items] == [True, True, False]
    assert thread.problems == ["line 3: first kept entry 'nope' is not on this thread"]


# Rule 3: streamed replies, parallel tool results and side lines


def test_parallel_tool_calls_and_results_hanging_off_the_chain_are_on_the_thread():
    # Claude Code: a result's parent is the line holding its call; the next reply follows one result.
    entries = session(
        user("u1"),
        reply("a1", "u1", calls=["x"], message_id="m1"),
        reply("a2", "a1", calls=["y"], message_id="m1"),
        line("p", "a2"),
        result("ry", "a2", "y"),
        result("rx", "a1", "x"),
        reply("a3", "rx", message_id="m2"),
    )
    thread = build_thread(entries)
    assert ids(thread) == ["u1", "a1", "a2", "p", "ry", "rx", "a3"]
    assert thread.leaf_id == "a3"
    assert thread.leaves == ["a3"]


def test_streamed_reply_continues_through_a_progress_line():
    entries = session(
        user("u1"),
        reply("a1", "u1", calls=["x"], message_id="m1"),
        line("p", "a1"),
        reply("a2", "p", calls=["y"], message_id="m1"),
        result("rx", "a1", "x"),
        result("ry", "a2", "y"),
        user("u2", "ry"),
    )
    thread = build_thread(entries)
    assert ids(thread) == ["u1", "a1", "p", "a2", "rx", "ry", "u2"]
    assert thread.branch_points == {}


def test_side_lines_and_meta_lines_off_the_chain_are_on_the_thread():
    entries = session(
        user("u1"),
        reply("a1", "u1"),
        line("hook", "a1", kind="system"),
        user("hook-context", "a1", is_meta=True),
        user("u2", "a1"),
    )
    assert ids(build_thread(entries)) == ["u1", "a1", "hook", "hook-context", "u2"]


def test_prompt_starting_another_branch_is_not_on_the_thread():
    entries = session(
        user("u1", at=0),
        reply("a1", "u1", at=1),
        user("old", "a1", at=2),
        reply("old-reply", "old", at=3),
        user("new", "a1", at=4),
        reply("new-reply", "new", at=5),
    )
    assert ids(build_thread(entries)) == ["u1", "a1", "new", "new-reply"]


# Rule 4: branch points


def test_three_alternatives_at_one_branch_point_are_all_listed():
    entries = session(
        user("u1", at=0),
        reply("a1", "u1", at=1),
        user("b1", "a1", at=2),
        reply("b1-reply", "b1", at=3),
        user("b2", "a1", at=4),
        reply("b2-reply", "b2", at=9),
        user("b3", "a1", at=6),
        reply("b3-reply", "b3", at=7),
    )
    thread = build_thread(entries)
    assert thread.leaf_id == "b2-reply"
    assert thread.leaves == ["b1-reply", "b2-reply", "b3-reply"]
    assert thread.branch_points == {"a1": [("b1", "b1-reply"), ("b2", "b2-reply"), ("b3", "b3-reply")]}
    assert item(thread, "a1").alternatives == ("b1-reply", "b2-reply", "b3-reply")
    assert item(thread, "a1").current == 1


def test_a_listed_leaf_shows_its_branch():
    entries = session(
        user("u1"),
        reply("a1", "u1"),
        user("b1", "a1"),
        reply("b1-reply", "b1"),
        user("b2", "a1"),
        reply("b2-reply", "b2"),
    )
    thread = build_thread(entries, leaf="b1-reply")
    assert ids(thread) == ["u1", "a1", "b1", "b1-reply"]
    assert thread.leaf_id == "b1-reply"
    assert item(thread, "a1").current == 0


def test_any_entry_can_end_the_thread():
    entries = session(user("u1"), reply("a1", "u1"), user("u2", "a1"), reply("a2", "u2"))
    thread = build_thread(entries, leaf="a1")
    assert ids(thread) == ["u1", "a1"]
    assert thread.leaf_id == "a1"


def test_unknown_leaf_raises():
    entries = session(user("u1"), reply("a1", "u1"))
    with pytest.raises(UnknownLeaf):
        build_thread(entries, leaf="nope")


def test_branch_behind_a_non_conversational_line_is_listed():
    # pi: a thinking_level_change sits between a reply and the prompt that followed it;
    # going back to the reply and typing again makes the reply a branch point.
    entries = session(
        user("u1"),
        reply("a1", "u1"),
        line("level", "a1", kind="thinking_level_change"),
        user("old", "level"),
        reply("old-reply", "old"),
        user("new", "a1"),
        reply("new-reply", "new"),
    )
    thread = build_thread(entries)
    assert thread.leaves == ["old-reply", "new-reply"]
    assert thread.branch_points == {"a1": [("old", "old-reply"), ("new", "new-reply")]}


def test_regenerated_reply_is_an_alternative_too():
    entries = session(
        user("u1", at=0),
        reply("first", "u1", at=1, message_id="m1"),
        reply("second", "u1", at=2, message_id="m2"),
    )
    thread = build_thread(entries)
    assert thread.leaf_id == "second"
    assert thread.leaves == ["first", "second"]


# Rule 5: missing and broken links


def test_entries_without_parents_follow_file_order():
    entries = session(
        line("s", kind=SUMMARY, leaf_id="u2", summary="Title"),
        user("u1"),
        reply("a1"),
        line("snap", kind="file-history-snapshot"),
        user("u2"),
        reply("a2"),
    )
    thread = build_thread(entries)
    assert ids(thread) == ["s", "u1", "a1", "snap", "u2", "a2"]
    assert thread.leaves == ["a2"]


def test_parentless_side_line_does_not_break_a_linked_chain():
    entries = session(
        line("snap1", kind="file-history-snapshot"),
        line("p", kind="progress"),
        user("u1", "p"),
        reply("a1", "u1"),
        line("snap2", kind="file-history-snapshot"),
        line("queue", kind="queue-operation"),
        user("u2", "a1"),
    )
    thread = build_thread(entries)
    assert ids(thread) == ["snap1", "p", "u1", "a1", "snap2", "queue", "u2"]
    assert thread.branch_points == {}


def test_dangling_parent_is_recorded_and_follows_the_last_message():
    entries = session(user("u1"), reply("a1", "u1"), line("raw", kind="raw"), user("u2", "elsewhere"))
    thread = build_thread(entries)
    assert ids(thread) == ["u1", "a1", "raw", "u2"]
    assert thread.problems == ["line 4: parent 'elsewhere' is not in this file; following line 2"]


def test_cycle_is_recorded_and_does_not_hang():
    entries = session(user("u0"), user("a", "b"), reply("b", "a"))
    thread = build_thread(entries)
    assert ids(thread) == ["u0", "a", "b"]
    assert thread.problems == ["line 2: parent 'b' closes a cycle through lines 2, 3; following line 1"]


def test_parent_written_later_is_recorded():
    entries = session(user("u0"), user("a", "c"), reply("b", "a"), reply("c", "u0"))
    thread = build_thread(entries)
    assert "line 2: parent 'c' is written later, at line 4; following line 1" in thread.problems


def test_self_parent_is_recorded():
    entries = session(user("u1"), reply("a1", "a1"))
    thread = build_thread(entries)
    assert ids(thread) == ["u1", "a1"]
    assert thread.problems == ["line 2: entry 'a1' is its own parent; following line 1"]


def test_first_entry_with_dangling_parent_starts_the_thread():
    entries = session(user("u1", "previous-file"), reply("a1", "u1"))
    thread = build_thread(entries)
    assert ids(thread) == ["u1", "a1"]
    assert thread.problems == ["line 1: parent 'previous-file' is not in this file; starting the thread here"]


def test_repeated_id_links_to_the_latest_entry_written_before():
    entries = session(
        user("u1", at=0),
        reply("x", "u1", at=1),
        user("u2", "x", at=2),
        reply("x", "u2", at=3),
        user("u3", "x", at=4),
    )
    thread = build_thread(entries)
    assert [i.entry.line for i in thread.items] == [1, 2, 3, 4, 5]
    assert thread.leaves == ["u3"]


def test_repeated_id_as_leaf_picks_the_one_that_is_a_leaf():
    entries = session(
        user("u1"),
        reply("dup", "u1", message_id="m1"),
        reply("a2", "u1", message_id="m2"),
        user("dup", "a2"),
        reply("a3", "dup"),
    )
    thread = build_thread(entries, leaf="dup")
    assert [i.entry.line for i in thread.items] == [1, 2]


# Rule 6: sidechains


def test_sidechain_lines_are_not_the_main_thread():
    entries = session(
        user("u1"),
        reply("a1", "u1", calls=["task"]),
        user("warmup", "a1", is_sidechain=True),
        reply("agent", "warmup", is_sidechain=True),
        result("r", "a1", "task"),
    )
    thread = build_thread(entries)
    assert ids(thread) == ["u1", "a1", "r"]
    with pytest.raises(UnknownLeaf):
        build_thread(entries, leaf="agent")


def test_subagent_file_is_its_own_thread():
    entries = session(user("w", "in-main-file", is_sidechain=True), reply("a", "w", is_sidechain=True))
    thread = build_thread(entries)
    assert ids(thread) == ["w", "a"]
    assert thread.problems == []


# Summaries, speed, serialising


def test_summaries_by_leaf_maps_leaf_ids_to_the_latest_summary():
    entries = session(
        line("s1", kind=SUMMARY, leaf_id="x", summary="First"),
        line("s2", kind=SUMMARY, leaf_id="y", summary="Other"),
        line("s3", kind=SUMMARY, leaf_id="x", summary="Second"),
        user("u1"),
    )
    assert summaries_by_leaf(entries) == {"x": "Second", "y": "Other"}


def _long_session(turns):
    entries, parent = [line("snap", kind="file-history-snapshot")], None
    for t in range(turns):
        prompt = user(f"u{t}", parent, at=4 * t)
        first = reply(f"a{t}", prompt.id, at=4 * t + 1, calls=[f"x{t}"], message_id=f"m{t}")
        second = reply(f"b{t}", first.id, at=4 * t + 1, calls=[f"y{t}"], message_id=f"m{t}")
        progress = line(f"p{t}", second.id)
        ry = result(f"ry{t}", second.id, f"y{t}", at=4 * t + 2)
        rx = result(f"rx{t}", first.id, f"x{t}", at=4 * t + 2)
        answer = reply(f"c{t}", rx.id, at=4 * t + 3, message_id=f"n{t}")
        snapshot = line(f"s{t}", kind="file-history-snapshot")
        entries += [prompt, first, second, progress, ry, rx, answer, snapshot]
        parent = answer.id
    return session(*entries)


def test_a_twenty_thousand_entry_session_threads_every_entry():
    # How fast is measured in bench/, never asserted here.
    entries = _long_session(2500)
    assert len(entries) > 20_000
    assert len(build_thread(entries).items) == len(entries)


def test_thread_to_dict_names_leaves_and_branches():
    entries = session(user("u1"), reply("a1", "u1"), user("b1", "a1"), user("b2", "a1"))
    data = build_thread(entries).to_dict()
    assert data["leaf_id"] == "b2"
    assert data["branch_points"] == {"a1": [{"child": "b1", "leaf": "b1"}, {"child": "b2", "leaf": "b2"}]}
    assert data["items"][2]["entry"]["id"] == "b2"
