"""The secrets report: likely secrets and personal data in memory files and transcripts,
masked, with a per-process cache of each file's findings."""

from __future__ import annotations

import hashlib
import hmac
import math
import re
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from sessionviewer.workspaces.listing import jid_folders, regular_files
from sessionviewer.workspaces.paths import SESSIONS_DIR, open_regular, real_path, resolve_jid_dir


@dataclass(frozen=True, slots=True)
class SecretFinding:
    kind: str
    line: int
    column: int  # 1-based, in characters
    masked: str
    file: str = ""  # relative to the root, set by scan_tree

    def to_dict(self) -> dict:
        jid, _, rest = self.file.partition("/")
        return {
            "file": self.file,
            "jid": jid if rest else "",  # "": a global file
            "line": self.line,
            "column": self.column,
            "kind": self.kind,
            "masked": self.masked,
        }


def _entropy(value: str) -> float:
    counts = [value.count(c) for c in set(value)]
    return -sum(n / len(value) * math.log2(n / len(value)) for n in counts)


def _mixed(value: str) -> bool:
    return any(c.isdigit() for c in value) and any(c.isalpha() for c in value)


def _phone_digits_ok(value: str) -> bool:
    digits = sum(c.isdigit() for c in value)
    return 8 <= digits <= 15  # E.164 allows at most 15


def _iban_ok(value: str) -> bool:
    """ISO 13616: 15 to 34 characters whose rearranged digits leave 1 modulo 97."""
    compact = value.replace(" ", "")
    if not 15 <= len(compact) <= 34:
        return False
    digits = "".join(str(int(c, 36)) for c in compact[4:] + compact[:4])
    return int(digits) % 97 == 1


def _card_ok(value: str) -> bool:
    """A payment card number: 13 to 19 digits, a known network's first digits, and Luhn's check."""
    digits = [int(c) for c in value if c.isdigit()]
    if not 13 <= len(digits) <= 19 or not _CARD_START.match("".join(map(str, digits[:2]))):
        return False
    total = sum(d if i % 2 == 0 else (d * 2 - 9 if d > 4 else d * 2) for i, d in enumerate(reversed(digits)))
    return total % 10 == 0


# Visa 4, Mastercard 51-55 and 22-27, American Express 34 and 37, Discover and UnionPay 6, Diners 36.
_CARD_START = re.compile(r"4\d|5[1-5]|2[2-7]|3[467]|6\d")


@dataclass(frozen=True, slots=True)
class Pattern:
    """One kind of finding: a regex, the group holding the value, and a check the value must pass."""

    kind: str
    regex: re.Pattern
    group: int = 0
    check: Callable[[str], bool] | None = None

    def finditer(self, line: str) -> Iterator[re.Match]:
        return self.regex.finditer(line)


# A run of the characters an address's local part holds, ending in "@". It starts only where
# such a run starts, so each character of a line is read once whatever the run holds.
_LOCAL_RUN = re.compile(r"(?<![A-Za-z0-9._%+-])[A-Za-z0-9._%+-]+@")


class EmailPattern(Pattern):
    """The e-mail pattern, tried only before an "@" and at most twice for each.

    Its lookbehind lets an address start where a run of the local part's characters starts,
    or just after a "%" inside one. Run as is, the regex tries every start after each "%" of
    a run and reads on to the run's end from each: a line of "%" costs the square of its
    length. All the starts of one run reach the same "@" and the same domain, so they match
    or fail alike, and the leftmost wins: its start, else (after a word character outside
    ASCII, which the lookbehind refuses) the place after its first "%".
    Each is tried no earlier than where the last match ended, as regex.finditer does.
    """

    __slots__ = ()

    def finditer(self, line: str) -> Iterator[re.Match]:
        if "@" not in line:
            return
        end = 0
        for run in _LOCAL_RUN.finditer(line):
            start, at = run.start(), run.end() - 1
            starts = [start] if start >= end else []
            percent = line.find("%", max(start, end - 1), at - 1)
            if percent != -1:
                starts.append(percent + 1)
            for first in starts:
                match = self.regex.match(line, first)
                if match:
                    end = match.end()
                    yield match
                    break


# Specific kinds come first: a later match overlapping an earlier one is dropped, so
# "sk-ant-..." is not also an "sk-" key.
PATTERNS = (
    Pattern("private_key", re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----")),
    Pattern("anthropic_key", re.compile(r"\bsk-ant-[A-Za-z0-9_-]{16,}")),
    Pattern("openai_key", re.compile(r"\bsk-[A-Za-z0-9_-]{20,}"), check=_mixed),
    Pattern("github_token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})")),
    Pattern("slack_token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}")),
    Pattern("aws_access_key", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    Pattern("google_api_key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}")),
    Pattern("bearer_token", re.compile(r"\bBearer\s+([A-Za-z0-9._~+/-]{16,}=*)"), 1, check=_mixed),
    Pattern(
        "secret_assignment",
        re.compile(
            r"(?i)\b(?:api[_-]?key|secret(?:[_-]?key)?|client[_-]?secret|access[_-]?(?:key|token)"
            r"|auth[_-]?token|token|password|passwd|pwd)[\"']?\s*[:=]\s*[\"']?([A-Za-z0-9_./+=~-]{16,})"
        ),
        1,
        check=lambda v: _mixed(v) and _entropy(v) >= 3.5,
    ),
    # IBAN: a country, two check digits, then the account in groups of four or not at all.
    Pattern(
        "iban",
        re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?\b"),
        check=_iban_ok,
    ),
    # A card number, its digits in groups or not; the network and Luhn's check are checked after.
    Pattern("card_number", re.compile(r"(?<![\w.-])\d(?:[ -]?\d){12,18}(?![\w.-]?\d)"), check=_card_ok),
    EmailPattern(
        "email",
        re.compile(r"(?<![\w.+-])[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}(?![\w-])"),
    ),
    # International: +CC then two to five groups; the digit count is checked after.
    Pattern(
        "phone",
        re.compile(r"(?<![\w+])\+\d{1,3}(?:[ .-]?\(?\d{1,4}\)?){2,5}(?![\w.-]?\d)"),
        check=_phone_digits_ok,
    ),
    # National: (415) 555-2671, 415-555-2671, 06 12 34 56 78, 020 7183 8750, 07700 900123.
    # The guards keep out ISO dates, versions, IP addresses and longer digit runs.
    Pattern(
        "phone",
        re.compile(
            r"(?<![\w.:/+-])(?:\(\d{3}\) ?\d{3}[ .-]\d{4}|\d{3}[ .-]\d{3}[ .-]\d{4}"
            r"|0[1-9](?:[ .-]?\d{2}){4}|0\d{2} \d{4} \d{4}|0\d{4} \d{6})(?![\w.:-]?\d)"
        ),
    ),
)


KINDS = tuple(dict.fromkeys(pattern.kind for pattern in PATTERNS))


def _mask(kind: str, value: str) -> str:
    if kind == "private_key":
        return value  # the BEGIN line itself is not secret, and says what kind of key follows
    if kind == "email":
        local, _, domain = value.partition("@")
        return local[0] + "*" * (len(local) - 1) + "@" + domain
    if kind in ("phone", "card_number"):
        # The last digits only (two of a phone number, four of a card, as receipts print them).
        keep = 4 if kind == "card_number" else 2
        total = sum(c.isdigit() for c in value)
        seen = 0
        out = []
        for c in value:
            if c.isdigit():
                seen += 1
                out.append(c if seen > total - keep else "*")
            else:
                out.append(c)
        return "".join(out)
    if len(value) <= 8:
        return value[0] + "*" * (len(value) - 1)
    return value[:4] + "*" * (len(value) - 6) + value[-2:]


def scan_secrets(text: str, ignore: tuple[str, ...] = ()) -> list[SecretFinding]:
    """Likely secrets and personal data in text; e-mail addresses in ignore (any case) are skipped."""
    return [finding for finding, _ in secret_values(text, ignore)]


def secret_values(text: str, ignore: tuple[str, ...] = ()):
    """scan_secrets, each finding with the text it found: for fingerprints and purges, never
    to be shown or kept."""
    ignored = {item.casefold() for item in ignore}
    for number, line in enumerate(text.split("\n"), start=1):
        line = line.removesuffix("\r")
        taken: list[tuple[int, int]] = []  # the spans found so far, in order, none overlapping
        found = []
        for pattern in PATTERNS:
            kind, group, check = pattern.kind, pattern.group, pattern.check
            kept, next_taken = [], 0
            for match in pattern.finditer(line):
                start, end = match.span(group)
                value = match.group(group)
                if check and not check(value):
                    continue
                if kind == "email" and value.casefold() in ignored:
                    continue
                # A pattern's spans come in order: one walk along taken finds every overlap,
                # where comparing each span with all of taken costs the square of their number.
                while next_taken < len(taken) and taken[next_taken][1] <= start:
                    next_taken += 1
                if next_taken < len(taken) and taken[next_taken][0] < end:
                    continue
                kept.append((start, end))
                found.append((SecretFinding(kind, number, start + 1, _mask(kind, value)), value))
            taken = sorted(taken + kept)  # two ordered runs, which sorted merges in linear time
        yield from sorted(found, key=lambda pair: pair[0].column)


def fingerprint(kind: str, value: str, key: str) -> str:
    """A finding's identity across versions of a file, keyed (HMAC-SHA256 with the site's secret
    key) so that a short value, a phone number say, cannot be found again from it by trying them all."""
    return hmac.new(key.encode(), f"{kind}\0{value}".encode(), hashlib.sha256).hexdigest()


def fingerprinted(text: str, ignore: tuple[str, ...], key: str) -> list[dict]:
    """Each finding of text as a snapshot keeps it: masked, placed, and fingerprinted."""
    return [
        {
            "kind": finding.kind,
            "line": finding.line,
            "column": finding.column,
            "masked": finding.masked,
            "fp": fingerprint(finding.kind, value, key),
        }
        for finding, value in secret_values(text, ignore)
    ]


def _memory_files(base: Path, only_jid: str | None = None):
    """(jid or None, path relative to the root, real path) of every memory file and transcript."""
    if only_jid is None:
        for name, path in regular_files(base, (".md",)):
            yield None, name, path
        jid_dirs = jid_folders(base)
    else:
        jid_dirs = [(only_jid, resolve_jid_dir(base, only_jid))]
    for jid, jid_dir in jid_dirs:
        for name, path in regular_files(jid_dir, (".md", ".jsonl")):
            yield jid, f"{jid}/{name}", path
        for name, path in regular_files(jid_dir, (".md", ".jsonl"), SESSIONS_DIR):
            yield jid, f"{jid}/{SESSIONS_DIR}/{name}", path


def scan_file(path: Path, ignore: tuple[str, ...]):
    """(line number, finding) of one file, read as the report reads it."""
    # Line by line, so a large transcript is never held in memory whole.
    with open_regular(path) as handle:
        for number, raw in enumerate(handle, start=1):
            line = raw.decode("utf-8", errors="replace").rstrip("\n")
            for finding in scan_secrets(line, ignore):
                yield number, finding


def iter_tree_findings(root: Path, jid: str | None = None):
    """scan_tree, lazily: a caller can stop after enough findings without reading the rest.

    A file scanned to its end keeps its findings in FINDINGS, under its size, mtime
    and inode: the report's later pages, and the next visit, read only what changed.
    """
    for owner, relative, path in _memory_files(real_path(Path(root)), jid):
        ignore = (owner,) if owner else ()
        try:
            yield from _file_findings(path, relative, ignore)
        except OSError:
            continue


def _file_findings(path: Path, relative: str, ignore: tuple[str, ...]):
    info = path.stat()
    version = (info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino, ignore)
    cached = FINDINGS.get(path, version)
    if cached is not None:
        yield from cached
        return
    found = []
    for number, finding in scan_file(path, ignore):
        found.append(SecretFinding(finding.kind, number, finding.column, finding.masked, relative))
        yield found[-1]
    # Only once the whole file was read: a caller that stops keeps nothing.
    FINDINGS.put(path, version, found)


class FindingsCache:
    """The findings of files read whole, one entry per file, at most `limit` findings in all.

    An entry holds for one version of its file (size, mtime, ctime, inode, and the
    address not to report); a changed file's scan replaces it. Once full, the files
    already kept stay and later ones are read each time: the report reads the files
    in one order, and dropping the oldest would drop the next one it needs. Shared by
    a process's threads, so every change holds the lock.
    """

    def __init__(self, limit: int):
        self.limit, self.size = limit, 0
        self.entries: dict[Path, tuple[tuple, list[SecretFinding]]] = {}
        self.lock = threading.Lock()

    def get(self, path: Path, version: tuple) -> list[SecretFinding] | None:
        with self.lock:
            kept_version, found = self.entries.get(path, (None, None))
            return found if kept_version == version else None

    def put(self, path: Path, version: tuple, found: list[SecretFinding]) -> None:
        with self.lock:
            _, old = self.entries.pop(path, (None, None))
            if old is not None:
                self.size -= len(old) + 1
            if self.size + len(found) + 1 <= self.limit:  # an empty file costs its entry
                self.entries[path] = (version, found)
                self.size += len(found) + 1

    def clear(self) -> None:
        with self.lock:
            self.entries.clear()
            self.size = 0


# About 150 bytes a finding: a worker keeps at most some 8 MB of them.
FINDINGS = FindingsCache(limit=50_000)


def scan_tree(root: Path, jid: str | None = None) -> list[SecretFinding]:
    """scan_secrets over every memory file and transcript (or one JID's); a JID's own address is
    not reported in its folder."""
    return list(iter_tree_findings(root, jid))
