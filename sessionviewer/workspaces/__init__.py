"""Fluux Agent memory workspaces: list, explain and edit them the way the agent reads them.

The agent keeps one memory root (``memory.path`` in its config)::

    identity.md personality.md instructions.md        global persona, all optional
    alice@example.com/                                 one folder per bare JID (user or room)
        identity.md personality.md instructions.md     per-JID persona overrides, optional
        user.md  (legacy context.md)                   profile, under "## About this user"
        memory.md                                      notes, under "## Notes and memory"
        knowledge.jsonl                                {"key", "content", "ts"} per line
        history.jsonl  (legacy history.md)             the active session
        sessions/YYYYMMDD-HHMMSS.jsonl (or .md)        archives made by /new
        files/<uuid>_<name>                            downloaded attachments

Plain Python, no Django: the personas views call these functions. Checked against
processone/fluux-agent (``src/agent/memory.rs``, ``src/agent/runtime.rs``,
``src/actors/inference.rs``, ``src/actors/command.rs``, ``src/agent/files.rs``).
One module per concern; callers use the names re-exported here, and memory_files:

memory_files.py   which memory files there are, listed once; the modules here read it
    MemoryFile, MEMORY_FILES, Kind, Scope                   name, kind, scope, prompt section...
    root_names(), jid_names(), editable_names(jid)          read when called
    forgotten_names(), kept_names(), shown_parts(), find(name), legacy_of(name), first_of(kind)
paths.py     names, and paths that never lead outside their folder
    UnsafePath, NotRegularFile                              exceptions
    open_regular(path) -> BinaryIO, read_regular(path) -> bytes    never a FIFO, device or folder
    read_error(exc) -> str                                  how a page says a file is unreadable
    resolve_jid_dir(root, jid) -> Path
    resolve_member(folder, name, subdir=None) -> Path       subdir: "files" or "sessions"
listing.py   what a root holds
    list_workspace(root) -> Workspace                       FileInfo, JidDir
    jid_entry(root, jid) -> JidDir                          one JID, without listing the root
    known_files() -> tuple[str, ...]                        a JID folder's memory files and history
    global_file_info(root, name) -> FileInfo                one global persona file
    is_room(jid, jid_dir=None) -> bool
    list_files(jid_dir) -> list[StoredFile]
    list_sessions(jid_dir) -> list[TranscriptFile]
prompt.py    the effective system prompt
    effective_prompt(root, jid, agent_name, today=None) -> Prompt    Section
    build_prompt(load, jid, agent_name, day) -> Prompt      from other bytes than the disk's
    default_prompt(agent_name) -> str, format_current_date(day) -> str
    rust_trim(text) -> str, is_blank(text) -> bool
memory.py    the memory audit
    jid_status(root, jid) -> JidStatus
    knowledge(jid_dir) -> Knowledge, read_knowledge(path)   KnowledgeEntry, LineProblem
    search_memory(root, query) -> list[SearchHit]
secrets.py   the secrets report
    scan_secrets(text, ignore=(), *, high_entropy=False) -> list[SecretFinding]
    json_secret_values(data, ignore=(), *, high_entropy=False)     JsonSecret: the strings of decoded JSON
    scan_tree(root, jid=None, *, high_entropy=False) -> list[SecretFinding]   .file set; jid: one folder
    iter_tree_findings(root, jid=None, *, high_entropy=False)      the same, lazily, file by file
    RULES                                                   the table: each Rule's kind, prefixes, regex, rotate
writes.py    every change on disk, each a locked, version-checked unit
    Conflict                                                the file changed since it was read
    file_version(path) -> str                               sha256 hex, or "absent"
    load_file(path), load_part(folder, name) -> LoadedFile  text and version, for the editor
    locked(folder)                                          a folder's write lock, across processes
    atomic_write(path, text_or_bytes, expected_version, record) -> str     the new version
    remove_file(path, expected_version, record), remove_override(jid_dir, name, version, record)
    archive_session(jid_dir, now, expected_version, record) -> Path | None /new, never overwriting
    forget_plan(jid_dir) -> ForgetPlan                      what /forget erases, every path checked
    forget_user(jid_dir, expected_version, before_erasing) -> list[str]    /forget
"""

import importlib

# Each name the package gives, by the module that has it. A module is imported when one of
# its names is first asked for (PEP 562), not with the package: the indexer's reading worker
# needs secrets alone, and importing every module cost its start 7-16 ms (bench/README.md).
_NAMES = {
    "listing": (
        "FileInfo",
        "JidDir",
        "StoredFile",
        "TranscriptFile",
        "Workspace",
        "global_file_info",
        "is_room",
        "jid_entry",
        "known_files",
        "list_files",
        "list_sessions",
        "list_workspace",
    ),
    "memory": (
        "JidStatus",
        "Knowledge",
        "KnowledgeEntry",
        "LineProblem",
        "SearchHit",
        "jid_status",
        "knowledge",
        "read_knowledge",
        "search_memory",
        "search_texts",
    ),
    "memory_files": (
        "FILES_DIR",
        "IDENTITY",
        "INSTRUCTIONS",
        "KNOWLEDGE",
        "LEGACY_PROFILE",
        "MEMORY",
        "PERSONA_FILES",
        "PERSONALITY",
        "PROFILE",
        "MemoryFile",
    ),
    "paths": (
        "ABSENT",
        "HISTORY",
        "LEGACY_HISTORY",
        "NAME_MAX",
        "SESSIONS_DIR",
        "NotRegularFile",
        "UnsafePath",
        "open_regular",
        "read_error",
        "read_regular",
        "resolve_jid_dir",
        "resolve_member",
    ),
    "prompt": (
        "Prompt",
        "Section",
        "build_prompt",
        "default_prompt",
        "effective_prompt",
        "format_current_date",
        "is_blank",
        "rust_trim",
    ),
    "secrets": (
        "KINDS",
        "SecretFinding",
        "iter_tree_findings",
        "scan_secrets",
        "scan_tree",
    ),
    "writes": (
        "Conflict",
        "ErasedFile",
        "ForgetPlan",
        "LoadedFile",
        "archive_session",
        "atomic_write",
        "file_version",
        "forget_plan",
        "forget_user",
        "forgettable",
        "forgotten",
        "load_file",
        "load_part",
        "locked",
        "remove_file",
        "remove_override",
    ),
}
_MODULE_OF = {name: module for module, names in _NAMES.items() for name in names}
__all__ = sorted(_MODULE_OF)


def __getattr__(name: str):
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value  # asked once
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
