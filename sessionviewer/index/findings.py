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

from sessionviewer import readers
from sessionviewer.row_codec import stored_id
from sessionviewer.workspaces.secrets import (
    RULES,
    PrefixIndex,
    fingerprint,
    json_secret_values,
    secret_values,
)

# The credential rules with a literal prefix, in RULES' order (the order decides overlaps).
CREDENTIAL_RULES = tuple(rule for rule in RULES if rule.secret and rule.prefixes)
WITH_HIGH_ENTROPY = tuple(rule for rule in RULES if rule.secret)

# Whether a text may hold a credential, before any line is split or any rule's regex tried:
# the case-sensitive prefixes (sk-, ghp_, AKIA, ...), then, in the lowercased text, a name
# and an assignment. Every rule that ignores case (secret_assignment, aws_secret_key and
# .npmrc's _authToken) needs a name ending in one of these before its value, and on the
# history corpus their bare names (token, client, api) were in a third of the texts.
_EXACT_PREFIXES = PrefixIndex(CREDENTIAL_RULES).exact
_NAMED = re.compile(r"(?:key|secret|token|passw(?:or)?d|pwd)[\"']?\s*(?:=>|[:=])")

Finding = tuple[int, str, int, str, str, str]  # line, entry id, block, kind, masked, fingerprint


def may_hold_secret(text: str) -> bool:
    """False: no credential rule can match anywhere in text."""
    return _EXACT_PREFIXES.search(text) is not None or _NAMED.search(text.lower()) is not None


def entry_findings(entries: list[readers.Entry], key: str, *, high_entropy: bool = False) -> list[Finding]:
    """The possible secrets in these entries' blocks: text, thinking, tool output, and every
    string of a tool call's arguments (a JSON text decoded first), in block order."""
    found: list[Finding] = []
    for entry in entries:
        for number, block in enumerate(entry.blocks):
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
            if not (high_entropy or may_hold_secret(orjson.dumps(arguments).decode())):
                return
            for secret in json_secret_values(arguments, rules=rules):
                yield secret.finding.kind, secret.finding.masked, secret.value
            return
        text = arguments if isinstance(arguments, str) else ""
    elif block.type in _TEXT_BLOCKS:
        text = block.text
    else:
        return  # images, attachments, reactions: nothing typed or printed
    if text and (high_entropy or may_hold_secret(text)):
        for finding, value in secret_values(text, rules=rules):
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
