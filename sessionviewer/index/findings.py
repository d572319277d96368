"""Possible secrets in the entries the index reads: the credential rules of the secrets scanner
(workspaces/secrets.py) over each block's text, as the worker reads the entry, so an append
scans only its new lines. No Django: the reading process imports it.

Each finding is (line, entry id, block index, kind, masked value, fingerprint). The value is
never kept: the fingerprint is secrets.fingerprint's keyed HMAC, as the memory findings'.

Only credentials are looked for here. E-mail addresses, phone numbers, card numbers and IBANs
(the personal-data rules) have no literal prefix to look for first, so each would read every
line of every entry, and they are in most sessions' tool output (git logs, fixtures): they
stay in the memory report, where a person's own files are read on demand.
"""

from __future__ import annotations

import re

import orjson
from ahocorasick_rs import AhoCorasick

from sessionviewer import readers
from sessionviewer.row_codec import stored_id
from sessionviewer.workspaces.secrets import (
    CREDENTIAL_RULES,
    RULES,
    PrefixIndex,
    credentials_in,
    fingerprint,
    json_secret_values,
    secret_values,
    with_masks,
)

WITH_HIGH_ENTROPY = tuple(rule for rule in RULES if rule.secret)

# Whether a text may hold a credential, before any line is split or any rule's regex tried:
# one Aho-Corasick pass (ahocorasick-rs) over the lowercased text finds every place where a
# rule's literal prefix or a credential's name starts, and each place is then checked in the
# text itself. A regex alternating the prefixes read text at about 25 ns a byte, twenty
# substring searches (one per prefix) at about 9; the automaton reads it at about 2.
#  - A case-sensitive prefix (sk-, AKIA, ...) must be there in its own case. "k_live_" stands
#    for sk_live_ and rk_live_.
#  - The prefixes too common as text ("SK", "://") must start their rule's shape: Twilio's key
#    whole, and "://" only where an "@" follows it on its line (url_password).
#  - A name (every rule that ignores case: secret_assignment, aws_secret_key, .npmrc's
#    _authToken) must end in one of these, then an assignment and a value of 16 characters or
#    more. Their bare names (token, client, api) were in a third of the texts; this is in none.
_EXACT = ("-----BEGIN ", "sk-", "k_live_", "k_test_", "whsec_", "github_pat_", "xox", "xapp-",
          "hooks.slack.com/", "AKIA", "ASIA", "ABIA", "ACCA", "AIza", "hf_", "api_org_", "npm_",
          "pypi-AgE", "Bearer", "eyJ", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "glpat-", "gldt-",
          "glrt-", "glptt-", "glsoat-", "glcbt-", "glft-", "glimt-", "gloas-")  # fmt: skip
_SHAPED = re.compile(r"SK[0-9a-fA-F]{32}|://[^\s/?#@\"'<>]*:[^\s/?#@\"'<>]+@")
_NAMED = re.compile(r"(?:key|secret|token|passw(?:or)?d|pwd)[\"']?\s*(?:=>|[:=])\s*[\"']?[a-z0-9_./+=~-]{16}")
_NAMES = ("key", "secret", "token", "passw", "pwd")


def _place_checks():
    """The automaton's patterns (lowercased, each once) and, for each, what confirms a place
    where it starts: (text, lowered, start) -> bool."""
    checks: dict[str, list] = {}
    for prefix in _EXACT:
        checks.setdefault(prefix.lower(), []).append(
            lambda text, lowered, start, prefix=prefix: text.startswith(prefix, start)
        )
    for prefix in ("sk", "://"):
        checks.setdefault(prefix, []).append(
            lambda text, lowered, start: _SHAPED.match(text, start) is not None
        )
    for name in _NAMES:
        checks.setdefault(name, []).append(
            lambda text, lowered, start: _NAMED.match(lowered, start) is not None
        )
    return list(checks), [tuple(found) for found in checks.values()]


_PATTERNS, _CHECKS = _place_checks()
_AUTOMATON = AhoCorasick(_PATTERNS)

Finding = tuple[int, str, int, str, str, str]  # line, entry id, block, kind, masked, fingerprint


def _places(text: str):
    """Each place in text where a credential may start, in order; None: the text lowers to
    another length ("İ" to two characters), so places in the lowered text are not its own."""
    lowered = text.lower()
    if len(lowered) != len(text):
        return None
    return (
        start
        for pattern, start, _ in _AUTOMATON.find_matches_as_indexes(lowered, overlapping=True)
        if any(check(text, lowered, start) for check in _CHECKS[pattern])
    )


def may_hold_secret(text: str) -> bool:
    """False: no credential rule can match anywhere in text."""
    places = _places(text)
    if places is None:
        return _EXACT_PREFIXES.search(text) is not None or _NAMED.search(text.lower()) is not None
    return next(places, None) is not None


_EXACT_PREFIXES = PrefixIndex(CREDENTIAL_RULES).exact


def credentials_found(text: str) -> list:
    """secrets.credentials_in, scanned only where may_hold_secret says a credential can start:
    what a page masks in a title or a hit (12.5 us a title scanned, 2.9 with the prefilter)."""
    return credentials_in(text) if text and may_hold_secret(text) else []


def masked_credentials(text: str) -> str:
    """text with every credential the rules find in it replaced by its mask (through
    credentials_found): a title or a first prompt shown where the findings are listed, or on
    a row of the list, must not show what they mask."""
    return with_masks(text, credentials_found(text))


def _lines_to_scan(text: str) -> list[str]:
    """The lines of text where a prefix or a named assignment starts (the rules read one line
    at a time): a long tool output is split and scanned only where it may hold a credential."""
    places = _places(text)
    if places is None:
        return text.split("\n")
    lines = {}
    for start in places:
        first = text.rfind("\n", 0, start) + 1
        if first in lines:
            continue
        end = text.find("\n", start)
        lines[first] = text[first : end if end != -1 else len(text)]
    return [lines[first] for first in sorted(lines)]


def entry_findings(entries: list[readers.Entry], key: str, *, high_entropy: bool = False) -> list[Finding]:
    """The possible secrets in these entries' blocks: text, thinking, tool output, and every
    string of a tool call's arguments (a JSON text decoded first), in block order."""
    found: list[Finding] = []
    for entry in entries:
        for number, block in enumerate(entry.blocks):
            # Most blocks hold nothing: tested here, before a generator is made for them.
            if block.type in _TEXT_BLOCKS and not (high_entropy or may_hold_secret(block.text)):
                continue
            for kind, masked, value in block_secrets(block, high_entropy=high_entropy):
                found.append(
                    (entry.line, stored_id(entry.id), number, kind, masked, fingerprint(kind, value, key))
                )
    return found


def block_secrets(block: readers.Block, *, high_entropy: bool = False):
    """(kind, masked, value) of each possible secret in one block; the value is for the
    fingerprint, and for a reveal, never to be kept."""
    rules = WITH_HIGH_ENTROPY if high_entropy else CREDENTIAL_RULES
    if block.type == readers.TOOL_CALL:
        arguments = block.arguments
        if isinstance(arguments, str):
            if not (high_entropy or may_hold_secret(arguments)):
                return
            arguments = _decoded(arguments)
        if isinstance(arguments, (dict, list)):
            if not (high_entropy or may_hold_secret("\n".join(_named_strings(arguments)))):
                return
            for secret in json_secret_values(arguments, rules=rules):
                yield secret.finding.kind, secret.finding.masked, secret.value
            return
        text = arguments if isinstance(arguments, str) else ""
    elif block.type in _TEXT_BLOCKS:
        text = block.text
    else:
        return  # images, attachments, reactions: nothing typed or printed
    if not text:
        return
    if high_entropy:
        lines = [text]
    elif may_hold_secret(text):
        lines = _lines_to_scan(text)
    else:
        return
    for line in lines:
        for finding, value in secret_values(line, rules=rules):
            yield finding.kind, finding.masked, value


_TEXT_BLOCKS = frozenset({readers.TEXT, readers.THINKING, readers.TOOL_RESULT})


def _decoded(arguments: str):
    """A tool call's arguments written as a JSON text (Codex), decoded; else the text itself."""
    if arguments[:1] in ("{", "["):
        try:
            return orjson.loads(arguments)
        except orjson.JSONDecodeError:
            pass
    return arguments


def _named_strings(data) -> list[str]:
    """The strings of a decoded JSON value as json_secret_values reads them: a string under a
    name as name=value, other names alone. Without recursion: a tool input may nest at any depth."""
    found: list[str] = []
    pending = [data]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            found.append(item)
        elif isinstance(item, list):
            pending.extend(item)
        elif isinstance(item, dict):
            for name, child in item.items():
                if isinstance(child, str):
                    found.append(f"{name}={child}")
                else:
                    found.append(str(name))
                    pending.append(child)
    return found
