"""Each format's module declares what the rest of the app knows of it (readers.Format): the
code outside readers/ asks readers.format_of and never imports a format's module."""

from __future__ import annotations

import pytest

from sessionviewer import readers
from sessionviewer.index import fold
from sessionviewer.readers import FORMATS, Entry, format_of


@pytest.mark.parametrize("key", FORMATS)
def test_every_format_declares_itself_under_its_own_key(key):
    declared = format_of(key)
    assert isinstance(declared, readers.Format)
    assert declared.key == key == readers.format_module(key).FORMAT
    assert declared.name and declared.mark.startswith("marks/")


def test_a_working_directory_makes_a_project_in_every_format_but_fluux():
    assert {key for key in FORMATS if format_of(key).makes_projects} == set(FORMATS) - {"fluux_xmpp"}


def test_an_unknown_key_is_refused_and_named_as_it_is():
    with pytest.raises(ValueError, match="someday_agent"):
        format_of("someday_agent")
    assert readers.format_name("someday_agent") == "someday_agent"


def _folded(key: str, **entry) -> fold.SessionState:
    state = fold.SessionState(format=key)
    fold.fold_entries(
        state, [Entry(id="1", parent_id=None, kind=readers.MESSAGE, role=readers.USER, **entry)]
    )
    return state


def test_a_room_member_makes_a_group_chat_only_where_the_format_says_so():
    assert _folded("fluux_xmpp", sender="alice@muc").peer_kind == "group"
    assert _folded("go_agent", sender="alice@muc").peer_kind == ""


def test_a_working_directory_is_a_project_only_where_the_format_says_so():
    assert _folded("codex", extra={"cwd": "/home/dev/shop"}).project == "~/shop"
    assert _folded("fluux_xmpp", extra={"cwd": "/home/dev/shop"}).project == ""
