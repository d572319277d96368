"""opencode sessions for tests and the demo, from the fixtures in tests/fixtures/opencode/ (the
shape `opencode export` prints): laid out as opencode 1.1's JSON storage, or inserted into an
opencode.db built from opencode-schema.sql, as opencode 1.2's first run copies them.

    python -m tests.opencode_files demo/opencode   # the demo's storage and database, again
"""

from __future__ import annotations

import sqlite3
import sys
from contextlib import closing
from pathlib import Path

import orjson

FIXTURES = Path(__file__).parent / "fixtures" / "opencode"
SCHEMA = FIXTURES / "opencode-schema.sql"


def fixture(name: str) -> dict:
    return orjson.loads((FIXTURES / name).read_bytes())


def write_json(path: Path, value: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(orjson.dumps(value, option=orjson.OPT_INDENT_2))


def write_storage(root: Path, session: dict) -> None:
    """A session as opencode 1.1 keeps it under root/storage/."""
    storage, info = root / "storage", session["info"]
    write_json(storage / "session" / info["projectID"] / f"{info['id']}.json", info)
    write_json(
        storage / "project" / f"{info['projectID']}.json",
        {"id": info["projectID"], "worktree": info["directory"]},
    )
    for message in session["messages"]:
        write_message_files(storage, message)


def write_message_files(storage: Path, message: dict) -> None:
    info = message["info"]
    write_json(storage / "message" / info["sessionID"] / f"{info['id']}.json", info)
    for part in message["parts"]:
        write_json(storage / "part" / info["id"] / f"{part['id']}.json", part)


class Database:
    """root/opencode.db. Each change opens, commits and closes its own connection, as opencode
    would between turns: no test connection stays open while the index reads."""

    def __init__(self, root: Path):
        self.path = root / "opencode.db"
        root.mkdir(parents=True, exist_ok=True)
        with self.connect() as connection:
            connection.executescript(SCHEMA.read_text())

    def connect(self):
        return closing(sqlite3.connect(self.path, isolation_level=None))

    def add_session(self, session: dict) -> None:
        info = session["info"]
        moments = info.get("time", {})
        with self.connect() as connection:
            connection.execute(
                "INSERT OR IGNORE INTO project (id, worktree, time_created, time_updated, sandboxes) VALUES (?, ?, 0, 0, '[]')",
                (info["projectID"], info["directory"]),
            )
            connection.execute(
                "INSERT INTO session (id, project_id, parent_id, slug, directory, title, version, time_created, time_updated)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    info["id"],
                    info["projectID"],
                    info.get("parentID"),
                    info.get("slug", ""),
                    info["directory"],
                    info["title"],
                    info["version"],
                    moments["created"],
                    moments.get("updated", moments["created"]),
                ),
            )
        for message in session["messages"]:
            self.add_message(message)

    def add_message(self, message: dict) -> None:
        """A message and its parts, their ids taken out of their data as opencode stores them."""
        info = message["info"]
        created = info["time"]["created"]
        data = {k: v for k, v in info.items() if k not in ("id", "sessionID")}
        with self.connect() as connection:
            connection.execute(
                "INSERT INTO message (id, session_id, time_created, time_updated, data) VALUES (?, ?, ?, ?, ?)",
                (
                    info["id"],
                    info["sessionID"],
                    created,
                    info["time"].get("completed", created),
                    orjson.dumps(data).decode(),
                ),
            )
            for part in message["parts"]:
                part_data = {k: v for k, v in part.items() if k not in ("id", "sessionID", "messageID")}
                connection.execute(
                    "INSERT INTO part (id, message_id, session_id, time_created, time_updated, data) VALUES (?, ?, ?, ?, ?, ?)",
                    (
                        part["id"],
                        info["id"],
                        info["sessionID"],
                        created,
                        created,
                        orjson.dumps(part_data).decode(),
                    ),
                )


DEMO_SESSIONS = ("tool_calls.json", "api_error.json", "aborted.json", "in_both.json")


def write_demo(root: Path) -> None:
    """The demo: every fixture in the JSON storage, and the database holding in_both.json (a
    copy, as opencode's first 1.2 run makes it) and tool_calls.json."""
    database = root / "opencode.db"
    database.unlink(missing_ok=True)
    for name in DEMO_SESSIONS:
        write_storage(root, fixture(name))
    store = Database(root)
    store.add_session(fixture("in_both.json"))
    store.add_session(fixture("tool_calls.json"))
    with store.connect() as connection:
        connection.execute("VACUUM")


if __name__ == "__main__":
    write_demo(Path(sys.argv[1]))
