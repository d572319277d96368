"""One rule tells a room from a person: readers/fluux_xmpp.py owns it, and the index and the
persona editor both use it, so a JID is a room on every page or on none."""

import io
import shutil
from pathlib import Path

import pytest
from django.core.management import call_command

from sessionviewer import workspaces as ws
from sessionviewer.models import Session
from sessionviewer.readers import fluux_xmpp

FIXTURES = Path(__file__).parent / "fixtures" / "fluux_xmpp"
LOBBY = "lobby@chat.example.org"


@pytest.fixture
def chat_domain_room(tmp_path: Path) -> Path:
    """A memory root with one JID on a chat. domain, whose history has no "nick@muc" sender:
    its domain alone says it is a room."""
    folder = tmp_path / "memory" / LOBBY
    folder.mkdir(parents=True)
    shutil.copy(FIXTURES / "one_to_one.jsonl", folder / "history.jsonl")
    return tmp_path / "memory"


@pytest.mark.django_db
def test_a_jid_on_a_chat_domain_is_indexed_as_a_room(chat_domain_room):
    call_command("index", f"fluux_xmpp={chat_domain_room}", stdout=io.StringIO(), stderr=io.StringIO())
    session = Session.objects.get(jid=LOBBY)
    assert session.peer_kind == "group"


def test_a_jid_on_a_chat_domain_is_a_room_in_the_editor(chat_domain_room):
    assert ws.is_room(LOBBY)
    assert [entry.is_room for entry in ws.list_workspace(chat_domain_room).jids] == [True]


@pytest.mark.parametrize("prefix", fluux_xmpp.ROOM_DOMAIN_PREFIXES)
def test_the_editor_and_the_reader_agree_on_every_room_domain(prefix):
    jid = f"room@{prefix}example.org"
    assert ws.is_room(jid) is fluux_xmpp.is_room_jid(jid) is True


@pytest.mark.parametrize("jid", ["alice@example.org", "conference.example.org", "chat@example.org"])
def test_the_editor_and_the_reader_agree_on_what_is_not_a_room(jid):
    assert ws.is_room(jid) is fluux_xmpp.is_room_jid(jid) is False
