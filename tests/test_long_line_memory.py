"""Indexing a very long line (a pasted log, issue 19) holds its text a bounded number of times.

Each step is measured with tracemalloc on a generated line of a few MB: the reader, the
session's title, the batch a reading process hands over, and what goes into its pipe.
The bounds are in multiples of the line, with room to spare; before these fixes each
step held two to eight times what it holds now (bench/README.md, "Size benchmark").
"""

import io
import marshal
import pickle
import time
import tracemalloc

import orjson
import pytest

from sessionviewer import readers
from sessionviewer.index import fold, worker

LOG_LINE = "2026-01-01T12:00:00Z worker-3 GET /api/items?page=%d 200 12ms request served\n"


@pytest.fixture
def long_line(tmp_path):
    """A Claude Code session whose first line is a prompt of about 4 MB, and its size."""
    log = "".join(LOG_LINE % n for n in range(50_000))
    lines = [
        {"type": "user", "uuid": "u1", "parentUuid": None, "message": {"role": "user", "content": log}},
        {
            "type": "assistant",
            "uuid": "a1",
            "parentUuid": "u1",
            "message": {"role": "assistant", "content": "Read."},
        },
    ]
    path = tmp_path / "log.jsonl"
    path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    return path, len(log)


@pytest.fixture
def traced():
    tracemalloc.start()
    yield
    tracemalloc.stop()


def test_a_long_prompt_titles_its_session_without_splitting_all_of_it(long_line, traced):
    text = "".join(LOG_LINE % n for n in range(50_000))
    tracemalloc.reset_peak()
    before = tracemalloc.get_traced_memory()[0]
    title = fold.title_of(text)
    assert tracemalloc.get_traced_memory()[1] - before < len(text) / 10
    assert title == fold.cut_title(" ".join(text.split()), fold.TITLE_LENGTH)


@pytest.mark.parametrize("spaces", [0, 1, 799, 800, 801, 5_000])
def test_a_title_folds_whitespace_as_the_whole_text_would(spaces):
    text = " \n" * spaces + "word " * 30 + "\t" * spaces + "last " * 50
    assert fold.title_of(text) == fold.cut_title(" ".join(text.split()), fold.TITLE_LENGTH)


def test_a_reader_keeps_only_the_head_of_a_long_first_line(long_line):
    path, _ = long_line
    reader = readers.SessionReader(path, "claude_code", keep_head=worker.HEAD_BYTES)
    list(reader)
    assert reader.head == path.read_bytes()[: worker.HEAD_BYTES]


def test_a_reader_lets_go_of_a_long_lines_bytes_once_its_entry_is_made(long_line, traced):
    path, size = long_line
    entries = iter(readers.SessionReader(path, "claude_code"))
    first = next(entries)  # the reader waits at this line: its text is held, not its bytes too
    assert len(first.text) == size
    assert tracemalloc.get_traced_memory()[0] < 1.5 * size


def test_a_batch_handed_over_holds_a_long_text_once(long_line, traced):
    path, size = long_line
    job = worker.Job(path, "claude_code", 0, 0, fold.SessionState(format="claude_code"))
    batches = worker.read_job(job)
    batch = next(batches)  # the reading waits here while the batch is written or sent
    assert sum(len(value) for row in batch.rows for value in row if isinstance(value, str)) > size
    assert tracemalloc.get_traced_memory()[0] < 1.5 * size


def test_a_batchs_rows_go_into_the_pipe_marshalled_on_their_own(long_line, traced):
    path, size = long_line
    job = worker.Job(path, "claude_code", 0, 0, fold.SessionState(format="claude_code"))
    batch = next(worker.read_job(job))
    rows = marshal.loads(marshal.dumps(batch.rows))  # noqa: S302 - a copy, made here
    before = tracemalloc.get_traced_memory()[0]
    sent = worker._for_the_pipe(batch)
    # The rows as marshal writes them take the place of the rows: not a second copy in the pickle.
    assert tracemalloc.get_traced_memory()[0] - before < size / 2
    header, marshalled = sent
    batch = pickle.loads(header)  # noqa: S301 - made just above
    assert batch.rows == len(marshalled)
    assert marshal.loads(marshalled) == rows  # noqa: S302 - made just above


def test_a_worker_lets_go_of_a_long_batch_once_it_is_in_the_pipe(long_line, traced, tmp_path, monkeypatch):
    path, size = long_line
    short = tmp_path / "short.jsonl"
    short.write_bytes(path.read_bytes().splitlines(keepends=True)[1])
    jobs = [
        worker.Job(p, "claude_code", 0, 0, fold.SessionState(format="claude_code")) for p in (path, short)
    ]
    out = tmp_path / "pipe"
    held = []
    read_job = worker.read_job

    def watched(job, number):
        if number == 1:  # the long batch is written out: what the worker still holds of it
            # The writer thread drops its batch just after its last write returns: a machine
            # under load can be looked at in between. It is then waiting for the next batch
            # (this reading holds it back), so what it holds by then no longer changes.
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and (
                out.stat().st_size < size or tracemalloc.get_traced_memory()[0] >= size / 2
            ):
                time.sleep(0.01)
            held.append(tracemalloc.get_traced_memory()[0])
        yield from read_job(job, number)

    monkeypatch.setattr(worker, "read_job", watched)
    with out.open("wb") as batches_out:
        worker.serve(io.BytesIO(pickle.dumps(jobs) + pickle.dumps(None)), batches_out)
    assert out.stat().st_size > size
    assert held[0] < size / 2
