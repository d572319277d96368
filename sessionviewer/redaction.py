"""What a redacted export takes out of a session, and the taking out.

Plain Python over reader entries: review_values lists what a person may want out of a session
(the scanner's findings, paths under a home directory, e-mail addresses, host names, and the
files its tool calls touched elsewhere); a Redaction replaces each chosen value, everywhere it
occurs, with "[redacted: KIND]". Values are replaced in the entries and the session's fields
before anything is rendered, so that a title, a file path, a diff and a code fence are all
rendered from redacted text.
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import html
import json
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from sessionviewer import readers
from sessionviewer.workspaces import secrets

HOME_PATH = "home_path"
FILE_PATH = "file_path"  # a file a tool call touched, outside any home directory
SESSION_FILE = "session_file"  # the session's own file, outside any home directory
EMAIL = "email"
HOST = "host"
WORD = "word"  # the person's own: a client's name
# Listed, left unchecked until the person checks them: /etc/hosts or /srv/app/config.py says
# little about anyone, and taking each out would leave a diff without the files it changed.
UNCHECKED = frozenset({FILE_PATH})

# A path under a home directory, up to where a path usually stops in prose or code.
_HOME = re.compile(
    r"(?P<home>/home/|/Users/|[A-Za-z]:\\Users\\)(?P<user>[^\s/\\\"'`<>|;,()\[\]{}]+)(?P<rest>[/\\][^\s\"'`<>|;,()\[\]{}]*)?"
)
# The host of a URL (after any user:password@), and of ssh, scp, rsync and curl commands.
_URL_HOST = re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]*://(?:[^/\s@]*@)?(\[[0-9a-fA-F:]+\]|[A-Za-z0-9.-]+)")
_COMMAND = re.compile(r"\b(ssh|scp|rsync|sftp|mosh)\s[^\n;&|]*")  # curl's hosts are in its URLs
# An argument naming a host: [user@]host[:path]; a bare word only as ssh's first argument.
_ARGUMENT_HOST = re.compile(r"(?:[^@\s]+@)?([A-Za-z0-9][A-Za-z0-9.-]*)(:(?!\\).*)?")
_LOGIN_COMMANDS = frozenset({"ssh", "sftp", "mosh"})
_OPTIONS_WITH_VALUE = frozenset("bcDEeFIiJLlmOoPpQRSWw")  # ssh's and scp's
_NOT_HOSTS = frozenset({"localhost", "127.0.0.1", "0.0.0.0", "::1"})  # noqa: S104 - names to skip
_TRAILING = ".,:;"


@dataclass(frozen=True, slots=True)
class Candidate:
    """One value a person may take out: its kind, and how the review page shows it (masked)."""

    kind: str
    value: str  # never shown: the page names it by its id
    masked: str

    def id(self, key: str) -> str:
        """An opaque name for the review form: the value cannot be read back from it."""
        return hmac.new(
            key.encode(), f"redact\0{self.kind}\0{self.value}".encode(), hashlib.sha256
        ).hexdigest()[:24]


def _mask(value: str) -> str:
    if len(value) <= 8:
        return value[0] + "*" * (len(value) - 1)
    return value[:3] + "*" * min(len(value) - 5, 20) + value[-2:]


def strings_of(value) -> Iterator[str]:
    """Every string in a value: dataclass fields, dicts (keys too), lists, tuples."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            yield item
        elif isinstance(item, dict):
            for name, child in item.items():
                if isinstance(name, str):
                    yield name
                stack.append(child)
        elif isinstance(item, list | tuple):
            stack.extend(item)
        elif dataclasses.is_dataclass(item) and not isinstance(item, type):
            stack.extend(getattr(item, f.name) for f in dataclasses.fields(item))


def _hosts(text: str) -> Iterator[str]:
    for match in _URL_HOST.finditer(text):
        yield match.group(1)
    if not any(word in text for word in ("ssh", "scp", "rsync", "sftp", "mosh")):
        return
    for command in _COMMAND.finditer(text):
        arguments = iter(command.group().split()[1:])
        first = True
        for argument in arguments:
            if argument.startswith("-"):
                if len(argument) == 2 and argument[1] in _OPTIONS_WITH_VALUE:
                    next(arguments, None)  # -p 22, -i key: the value is no host
                continue
            match = _ARGUMENT_HOST.fullmatch(argument.strip("\"'"))
            named = match and ("@" in argument or match.group(2) is not None)
            if (
                match
                and not match.group(1).isdigit()
                and (named or (first and command.group(1) in _LOGIN_COMMANDS))
            ):
                yield match.group(1)
            first = False


# The scanner's rules without a literal prefix to look for first (e-mail, phone, card, IBAN):
# they read every text; the credential rules only a text that may hold a credential.
PERSONAL_RULES = tuple(rule for rule in secrets.RULES if not rule.secret)


def values_in(text: str, *, high_entropy: bool = False, credentials: bool = True) -> Iterator[Candidate]:
    """The candidates of one text: findings, home paths, e-mail addresses and host names.
    credentials False: the text can hold none (the index's prefilter said so), and the
    credential rules are not run over it."""
    rules = None if credentials or high_entropy else PERSONAL_RULES  # None: every rule, as asked
    for finding, value in secrets.secret_values(text, high_entropy=high_entropy, rules=rules):
        if finding.kind == EMAIL:  # the scanner's mask keeps the domain, often the client's name
            local, _, domain = value.partition("@")
            if not any(c.isalnum() for c in local):
                continue  # a decorator on a diff's line (+@app.get), no one's address
            yield Candidate(EMAIL, value, f"{_mask(local)}@{_mask(domain)}")
        else:
            yield Candidate(finding.kind, value, finding.masked)
    for match in _HOME.finditer(text):
        path = match.group().rstrip(_TRAILING)
        masked = match["home"] + _mask(match["user"]) + path[match.end("user") - match.start() :]
        yield Candidate(HOME_PATH, path, masked)
    for host in _hosts(text):
        host = host.strip(_TRAILING)
        if host and host.casefold() not in _NOT_HOSTS:
            yield Candidate(HOST, host, _mask(host))


def _path_masked(path: str) -> str:
    """A path with its first folder and its file's name, the folders between masked: enough to
    tell /srv/app/config.py from /etc/hosts, not to read a client's name in /srv/clientcorp/."""
    parts = path.split("/")
    if len(parts) <= 3:
        return path
    return "/".join([*parts[:2], *(_mask(part) if part else part for part in parts[2:-1]), parts[-1]])


# Texts are scanned joined, a batch at a time: most of a session's strings are short (an id, a
# role, a model's name), and a call per string cost more than its scan. A blank line between
# two texts keeps them apart: no pattern here, nor any of the scanner's (one line at a time),
# reads across one.
_BATCH = 1 << 20


def _batches(texts: Iterable[str], may_hold_credential) -> Iterator[tuple[str, bool]]:
    """(texts joined, whether the credential rules are run over them): apart, those the
    prefilter passes and those it does not (all of them passing without a prefilter)."""
    pending: dict[bool, list[str]] = {True: [], False: []}
    sizes = {True: 0, False: 0}
    for text in texts:
        if not text:
            continue
        credential = may_hold_credential is None or may_hold_credential(text)
        pending[credential].append(text)
        sizes[credential] += len(text)
        if sizes[credential] >= _BATCH:
            yield "\n\n".join(pending[credential]), credential
            pending[credential], sizes[credential] = [], 0
    for credential, waiting in pending.items():
        if waiting:
            yield "\n\n".join(waiting), credential


def review_values(
    texts: Iterable[str],
    machine: str = "",
    *,
    high_entropy: bool = False,
    paths: Iterable[str] = (),
    own_file: str = "",
    findings: Iterable[tuple[str, str, str]] = (),
    may_hold_credential: Callable[[str], bool] | None = None,
) -> list[Candidate]:
    """Every candidate in the texts, once each, the scanner's findings first, then by kind.
    paths: the files the session's tool calls touched; those outside a home directory (which
    are home paths already) are file paths; own_file, the session's file, too, of its own kind
    (listed checked: it tells where the sessions are kept, nothing about the work). findings: (kind, masked, value) of what the index
    found in the session's blocks, a secret under a JSON key's name among them.
    may_hold_credential: False for a text no credential rule can match (the index's
    prefilter, which this module may not import); None: every text is scanned for them."""
    found: dict[tuple[str, str], Candidate] = {}
    for kind, masked, value in findings:
        found.setdefault((kind, value), Candidate(kind, value, masked))
    listed = {value for _, value in found}  # a finding is listed once, as the index named it
    for text, credential in _batches(texts, None if high_entropy else may_hold_credential):
        for candidate in values_in(text, high_entropy=high_entropy, credentials=credential):
            if candidate.value not in listed:
                found.setdefault((candidate.kind, candidate.value), candidate)
    if own_file and not _HOME.search(own_file):
        found.setdefault((SESSION_FILE, own_file), Candidate(SESSION_FILE, own_file, _path_masked(own_file)))
    for path in paths:
        path = path.strip()
        if path and path != own_file and not _HOME.search(path):
            found.setdefault((FILE_PATH, path), Candidate(FILE_PATH, path, _path_masked(path)))
    if machine:
        found.setdefault((HOST, machine), Candidate(HOST, machine, _mask(machine)))
    order = {HOME_PATH: 1, SESSION_FILE: 2, FILE_PATH: 3, EMAIL: 4, HOST: 5}
    return sorted(found.values(), key=lambda c: (order.get(c.kind, 0), c.kind, c.masked))


def review_rows(
    candidates: Iterable[Candidate], key: str, checked: Iterable[str] | None = None
) -> list[dict]:
    """The review's list as its page shows it and its JSON twin gives it: each candidate's id,
    kind, label and masked text (never its value), and whether it is checked. checked: the ids
    the person sent; None: the defaults, every kind checked but UNCHECKED's."""
    sent = None if checked is None else set(checked)
    rows = []
    for candidate in candidates:
        row_id = candidate.id(key)
        rows.append(
            {
                "id": row_id,
                "kind": candidate.kind,
                "label": candidate.kind.replace("_", " "),
                "masked": candidate.masked,
                "checked": candidate.kind not in UNCHECKED if sent is None else row_id in sent,
            }
        )
    return rows


def session_texts(session, entries: Iterable[readers.Entry], extras: Iterable = ()) -> Iterator[str]:
    """The strings of a session row (its text fields) and of its entries."""
    yield from session_fields(session).values()
    yield from (text for extra in extras for text in strings_of(extra))
    for entry in entries:
        yield from strings_of(entry)


# The session fields a page or an export shows, all redacted.
SESSION_FIELDS = (
    "title",
    "summary_title",
    "first_prompt",
    "path",
    "key",
    "project",
    "project_dir",
    "cwd",
    "git_branch",
    "jid",
    "agent",
    "channel",
    "account",
    "peer_kind",
    "peer_id",
    "parent_path",
    "parent_tool_id",
    "fork_entry_id",
    "agent_id",
    "session_uuid",
    "index_error",
)


def session_fields(session) -> dict[str, str]:
    return {name: getattr(session, name) or "" for name in SESSION_FIELDS}


class Redaction:
    """The chosen values (value -> kind), replaced longest first so that a value holding
    another is taken out whole; counts says how many values of each kind were chosen. The
    person's words are found in any case: a client's name is written many ways."""

    def __init__(self, values: dict[str, str]):
        self.values = {value: kind for value, kind in values.items() if value}
        self.counts = dict(sorted(Counter(self.values.values()).items()))
        for value, kind in list(self.values.items()):
            if kind == HOME_PATH:
                for form in _home_forms(value):
                    self.values.setdefault(form, kind)
        self._pattern = _alternation(self.values)
        # The forms a value takes once rendered: HTML-escaped, JSON-escaped (either way), both.
        self._forms: dict[str, str] = {}
        for value, kind in self.values.items():
            for form in _forms_of(value):
                self._forms.setdefault(form, kind)
        self._rendered = _alternation(self._forms)

    def _kind(self, found: str, kinds: dict[str, str]) -> str:
        return kinds.get(found) or WORD  # not found as is: a word, in another case

    def __bool__(self) -> bool:
        return bool(self.values)

    def text(self, text: str) -> str:
        if self._pattern is None or not text:
            return text
        return self._pattern.sub(lambda m: f"[redacted: {self._kind(m.group(), self.values)}]", text)

    def rendered(self, text: str) -> str:
        """A last pass over what was rendered: any form of a value still there (none should be,
        the entries were redacted before) is taken out too."""
        if self._rendered is None:
            return text
        return self._rendered.sub(lambda m: f"[redacted: {self._kind(m.group(), self._forms)}]", text)

    def value(self, value):
        """A copy of value with every string redacted (dict keys too); dataclasses copied."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self.value(name): self.value(child) for name, child in value.items()}
        if isinstance(value, list):
            return [self.value(child) for child in value]
        if isinstance(value, tuple):
            return tuple(self.value(child) for child in value)
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            changes = {f.name: self.value(getattr(value, f.name)) for f in dataclasses.fields(value)}
            return dataclasses.replace(value, **changes)
        return value

    def summary(self) -> str:
        """What the export's header says was taken out."""
        if not self.counts:
            return "Nothing was redacted."
        return f"Redacted: {counts_text(self.counts)}."


def counts_text(counts: dict[str, int]) -> str:
    """How many values of each kind: "9 home paths, 1 host"."""
    return ", ".join(
        f"{count} {kind.replace('_', ' ')}{'' if count == 1 else 's'}" for kind, count in counts.items()
    )


def _home_forms(path: str) -> list[str]:
    """The other ways a session writes a path under a home directory: as a project, the home
    as "~" (~/projects/shop, index.fold.fold_home); as Claude Code's project folder, each
    character not a letter or digit as "-" (-home-alice-projects-shop)."""
    match = _HOME.fullmatch(path)
    if match is None:
        return []
    forms = [re.sub(r"[^A-Za-z0-9]", "-", path)]
    rest = (match["rest"] or "").replace("\\", "/")
    if rest.strip("/"):
        forms.append("~" + rest)
    return forms


def _forms_of(value: str) -> set[str]:
    as_json = {json.dumps(value, ensure_ascii=ascii)[1:-1] for ascii in (False, True)}
    escaped = {html.escape(form, quote=quote) for form in (value, *as_json) for quote in (True, False)}
    return {value, *as_json, *escaped}


def _alternation(values: dict[str, str]) -> re.Pattern | None:
    """One pattern of every value, longest first; the person's words in any case."""
    ordered = sorted(values, key=len, reverse=True)
    pieces = [f"(?i:{re.escape(v)})" if values[v] == WORD else re.escape(v) for v in ordered]
    return re.compile("|".join(pieces)) if pieces else None


def chosen(candidates: Iterable[Candidate], ids: Iterable[str], key: str, words: Iterable[str]) -> Redaction:
    """The Redaction of the candidates whose ids were checked, and the person's own words."""
    checked = set(ids)
    values = {c.value: c.kind for c in candidates if c.id(key) in checked}
    for word in words:
        word = word.strip()
        if word:
            values.setdefault(word, WORD)
    return Redaction(values)
