"""Session.unsaved makes the session Session(**values) makes, by Django's short way (issue 27)."""

from __future__ import annotations

import pytest
from django.db.models.signals import post_init, pre_init

from sessionviewer.models import Session, Source


def fields_of(session: Session) -> dict:
    return {field.attname: getattr(session, field.attname) for field in Session._meta.concrete_fields}


@pytest.mark.django_db
def test_the_same_values_as_djangos_init():
    source = Source.objects.create(path="/tmp/root", format="claude_code")
    ours = Session.unsaved(source=source, key="a/b.jsonl")
    djangos = Session(source=source, key="a/b.jsonl")
    assert fields_of(ours) == fields_of(djangos)
    assert ours.source is source  # the related object is kept, as Django's init keeps it
    assert (ours._state.adding, ours._state.db) == (True, djangos._state.db)
    ours.path = "/tmp/root/a/b.jsonl"
    ours.save()
    assert Session.objects.get(id=ours.id).key == "a/b.jsonl"


def test_each_session_gets_its_own_dicts_and_lists():
    first, second = Session.unsaved(), Session.unsaved()
    mutable = [
        f.attname for f in Session._meta.concrete_fields if isinstance(getattr(first, f.attname), dict | list)
    ]
    assert {"usage_lines", "extra", "models_used"} <= set(mutable)
    for name in mutable:
        assert getattr(first, name) is not getattr(second, name)
    first.usage_lines["opus"] = {"turns": 1}
    assert second.usage_lines == {}


def test_nothing_listens_to_a_sessions_init():
    # Session.unsaved sends neither signal: were a receiver connected (an app's, a field's
    # contribute_to_class), the sessions it makes would miss what the receiver does.
    assert not pre_init.has_listeners(Session)
    assert not post_init.has_listeners(Session)
