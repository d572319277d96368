"""index/phases.py: a pass's time by phase, each phase without the phases timed inside it."""

from __future__ import annotations

import pytest

from sessionviewer.index import phases
from sessionviewer.index.phases import Phases


@pytest.fixture
def clock(monkeypatch):
    """perf_counter reads 0, 1, 2, ... seconds: one second between two readings."""
    ticks = iter(range(1000))
    monkeypatch.setattr(phases.time, "perf_counter", lambda: float(next(ticks)))


def test_a_phase_adds_up_over_the_times_it_is_entered(clock):
    timer = Phases()
    for _ in range(3):
        with timer.timing("scan"):
            pass
    assert timer == {"scan": 3.0}


def test_an_inner_phase_is_left_out_of_the_outer_one(clock):
    timer = Phases()
    with timer.timing("write"):  # reads 0
        with timer.timing("prices"):  # 1, 2
            pass
        with timer.timing("prices"):  # 3, 4
            pass
    # write: 5 - 0 = 5 s, of which prices took 2 s
    assert timer == {"write": 3.0, "prices": 2.0}


def test_timed_counts_the_time_to_produce_each_item_to_its_phase(clock):
    timer = Phases()
    with timer.timing("write"):  # 0
        for _item in timer.timed("read", ["a", "b"]):  # a: 1, 2; b: 3, 4; the end: 5, 6
            pass
    # write: 7 - 0 = 7 s, of which the reads took 3 s
    assert timer == {"write": 4.0, "read": 3.0}


def test_timed_yields_every_item_even_one_that_is_none():
    assert list(Phases().timed("read", [None, 0, "x"])) == [None, 0, "x"]


def test_the_line_names_each_phase_in_the_order_first_entered(clock):
    timer = Phases()
    with timer.timing("scan"):  # 0, 1
        pass
    with timer.timing("write"), timer.timing("prices"):  # write: 2, 5; prices: 3, 4
        pass
    assert timer.line() == "scan 1.000 s, write 2.000 s, prices 1.000 s"
