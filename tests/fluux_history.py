"""A Fluux chat history written on the spot (its header, then numbered messages) and a
memory root of them indexed, for the tests of the incremental index."""

from pathlib import Path

from sessionviewer.index import index_roots
from sessionviewer.roots import RootSpec

HEADER = '{"type":"session","version":1,"created":"2025-02-08T19:00:00Z","jid":"alice@example.com"}\n'


def message(n: int, role: str = "user") -> str:
    sender = ',"sender":"alice@example.com"' if role == "user" else ""
    return (
        f'{{"type":"message","role":"{role}","content":"message number {n}","msg_id":"m{n}"{sender},'
        f'"ts":"2025-02-08T19:{n // 60:02d}:{n % 60:02d}Z"}}\n'
    )


def run(root: Path):
    """Index the Fluux memory root: the index's summary."""
    return index_roots([RootSpec(root, "fluux_xmpp")])
