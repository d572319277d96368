"""The secrets report: likely secrets and personal data in memory files and transcripts,
masked, with a per-process cache of each file's findings."""

from __future__ import annotations

import hashlib
import hmac
import math
import re
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import NamedTuple

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
    """A payment card number: 13 to 19 digits, a known network's first digits, and Luhn's check;
    not a provider's documented test card."""
    number = "".join(c for c in value if c.isdigit())
    if not 13 <= len(number) <= 19 or not _CARD_START.match(number) or number in DOCUMENTED_EXAMPLES:
        return False
    digits = [int(c) for c in number]
    total = sum(d if i % 2 == 0 else (d * 2 - 9 if d > 4 else d * 2) for i, d in enumerate(reversed(digits)))
    return total % 10 == 0


# Visa 4, Mastercard 51-55 and 22-27, American Express 34 and 37, Discover and UnionPay 6, Diners 36.
_CARD_START = re.compile(r"4\d|5[1-5]|2[2-7]|3[467]|6\d")


# Values that documentation and templates put where a secret goes: never a leak.
_PLACEHOLDER = re.compile(
    r"(?i)(.)\1{7}|x{5}|\*{3}|\.{3}|[<>{}]|\$\(|your|example|placeholder|changeme|dummy|redacted|replace_?me"
    r"|^(?:pass(?:word|wd)?|secret)$"
)

# Providers' documented sample values, copied into tutorials and tests everywhere.
DOCUMENTED_EXAMPLES = frozenset(
    {
        "AKIAIOSFODNN7EXAMPLE",  # AWS's access key id in its documentation
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",  # and its secret access key
        "sk_test_4eC39HqLyjWDarjtT1zdp7dc",  # Stripe's test key in its API reference
        "sk_test_BQokikJOvBiI2HlWgH4olfQ2",  # and the one before it
        "4242424242424242",  # Stripe's test Visa card, digits only
    }
)

# jwt.io's sample payloads ({"sub": "1234567890", "name": "John Doe", ...}): whatever the
# signature, a token carrying one is the site's example.
_JWT_IO_PAYLOADS = (
    "eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ",
    "eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiYWRtaW4iOnRydWUsImlhdCI6MTUxNjIzOTAyMn0",
)


def not_a_secret(value: str) -> bool:
    """A placeholder (sk-ant-xxxxxxxx, xoxb-your-bot-token, ${TOKEN}) or a provider's
    documented example (AKIAIOSFODNN7EXAMPLE, jwt.io's token, Stripe's test card)."""
    if value in DOCUMENTED_EXAMPLES or any(payload in value for payload in _JWT_IO_PAYLOADS):
        return True
    return _PLACEHOLDER.search(value) is not None


@dataclass(frozen=True, slots=True)
class Rule:
    """One kind of finding: where to look, what to report, and how to undo a leak of it.

    prefixes: literal text every match starts with (in any case when regex ignores case).
    The scanner finds all rules' prefixes in a line at once (PrefixIndex) and tries a regex
    only where one of its prefixes starts; a rule without prefixes reads the whole line.
    Each regex is linear: from a prefix it reads no further than the next place the same
    rule could start, unless it matches, and then the next try starts past the match, as
    re.finditer's would.
    group: the part of the match reported, masked and fingerprinted (0: all of it).
    check: a test the value must pass. secret: a credential rather than personal data; a
    placeholder or a documented example of one is not reported.
    """

    kind: str
    prefixes: tuple[str, ...]
    regex: re.Pattern
    rotate: str  # a one-line hint: how to replace a leaked value of this kind
    group: int = 0
    check: Callable[[str], bool] | None = None
    secret: bool = True

    def may_match(self, text: str) -> bool:
        """False: the rule matches on no line of text (one search of it all)."""
        return self.regex.search(text) is not None

    def finditer(self, line: str, starts: Iterable[int] | None = None) -> Iterator[re.Match]:
        """The rule's matches in line, in order, none overlapping; starts: where its prefixes
        start (found here when not given)."""
        if not self.prefixes:
            yield from self.regex.finditer(line)
            return
        if starts is None:
            starts = PREFIX_INDEX.starts(line).get(id(self), [])
        end = 0
        for start in starts:
            if start < end:
                continue
            match = self.regex.match(line, start)
            if match:
                end = match.end()
                yield match


class EmailRule(Rule):
    """The e-mail rule, tried only before an "@" and at most twice for each.

    Its lookbehind lets an address start where a run of the local part's characters starts,
    or just after a "%" inside one. Run as is, the regex tries every start after each "%" of
    a run and reads on to the run's end from each: a line of "%" costs the square of its
    length. All the starts of one run reach the same "@" and the same domain, so they match
    or fail alike, and the leftmost wins: its start, else (after a word character outside
    ASCII, which the lookbehind refuses) the place after its first "%".
    Each is tried no earlier than where the last match ended, as regex.finditer does.
    """

    __slots__ = ()

    def may_match(self, text: str) -> bool:
        return "@" in text  # the regex itself, run as is, would cost the square of a run of "%"

    def finditer(self, line: str, starts: Iterable[int] | None = None) -> Iterator[re.Match]:
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


# A run of the characters an address's local part holds, ending in "@". It starts only where
# such a run starts, so each character of a line is read once whatever the run holds.
_LOCAL_RUN = re.compile(r"(?<![A-Za-z0-9._%+-])[A-Za-z0-9._%+-]+@")

# What follows a key's name before its value: a closing quote, then ":", "=" or "=>".
_ASSIGN = r"[\"']?\s*(?:=>|[:=])\s*[\"']?"

# Each token's shape, from its provider's documentation or gitleaks' rule list. Specific
# kinds come first: a later match overlapping an earlier one is dropped, so "sk-ant-..." is
# not also an "sk-" key, nor a Stripe key in STRIPE_SECRET_KEY=... a secret_assignment.
# Kind names are part of each finding's fingerprint: a new kind gets a new name, and an old
# one is never renamed.
RULES = (
    Rule(
        "private_key",
        ("-----BEGIN ",),
        re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"),
        "Make a new key pair, trust its public key where the old one was trusted, and remove the old one.",
    ),
    Rule(
        "anthropic_key",
        ("sk-ant-",),
        re.compile(r"\bsk-ant-[A-Za-z0-9_-]{16,}"),
        "Delete the key in the Claude Console (console.anthropic.com, API keys) and create a new one.",
    ),
    Rule(
        "openrouter_key",
        ("sk-or-",),
        re.compile(r"\bsk-or-v1-[0-9a-f]{64}(?![A-Za-z0-9_-])"),
        "Delete the key at openrouter.ai/settings/keys and create a new one.",
    ),
    Rule(
        "openai_key",
        ("sk-",),
        re.compile(r"\bsk-(?!or-)[A-Za-z0-9_-]{20,}"),  # a malformed OpenRouter key is no OpenAI key
        "Revoke the key at platform.openai.com/api-keys and create a new one.",
        check=_mixed,
    ),
    Rule(
        "github_token",
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
        re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})"),
        "Revoke it in GitHub's Settings, Developer settings (or the app's settings), and make a new one.",
    ),
    Rule(
        "gitlab_token",
        ("glpat-", "gldt-", "glrt-", "glptt-", "glsoat-", "glcbt-", "glft-", "glimt-", "gloas-"),
        re.compile(r"\bgl(?:pat|dt|rt|ptt|soat|cbt|ft|imt|oas)-[A-Za-z0-9_.-]{20,}"),
        "Revoke it in GitLab's access token settings (user, project or group) and create a new one.",
    ),
    Rule(
        "slack_token",
        ("xox", "xapp-", "hooks.slack.com/"),
        re.compile(
            r"\bxox[abposre]-[A-Za-z0-9-]{10,}|\bxapp-[A-Za-z0-9-]{10,}"
            r"|hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/+-]{20,}"
        ),
        "Regenerate it in the app's settings at api.slack.com/apps; a webhook: remove it, add a new one.",
    ),
    Rule(
        "stripe_key",
        ("sk_live_", "sk_test_", "rk_live_", "rk_test_", "whsec_"),
        re.compile(r"\b(?:[sr]k_(?:live|test)_[A-Za-z0-9]{10,}|whsec_[A-Za-z0-9+/=]{24,})"),
        "Roll the key in Stripe's Dashboard, Developers, API keys (a webhook's secret: its endpoint).",
    ),
    Rule(
        "twilio_key",
        ("SK",),
        re.compile(r"\bSK[0-9a-fA-F]{32}\b"),
        "Delete the API key in the Twilio Console and create a new one.",
    ),
    Rule(
        "aws_access_key",
        ("AKIA", "ASIA", "ABIA", "ACCA"),
        re.compile(r"\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b"),
        "Create a new access key in IAM, move its users to it, then deactivate and delete this one.",
    ),
    # A secret access key is 40 characters of base64 with no prefix: found by its name, as
    # ~/.aws/credentials, the environment and `aws sts` (SecretAccessKey) write it.
    Rule(
        "aws_secret_key",
        ("secret", "aws"),
        re.compile(
            rf"(?i)(?:secret[_-]?access[_-]?key|aws[_-]?secret[_-]?key){_ASSIGN}([A-Za-z0-9/+]{{40}})(?![A-Za-z0-9/+=])"
        ),
        "Create a new access key in IAM, move its users to it, then deactivate and delete this one.",
        group=1,
    ),
    Rule(
        "google_api_key",
        ("AIza",),
        re.compile(r"\bAIza[0-9A-Za-z_-]{35}"),
        "Regenerate the key in Google Cloud Console, APIs & Services, Credentials, and restrict it.",
    ),
    Rule(
        "huggingface_token",
        ("hf_", "api_org_"),
        re.compile(r"\b(?:hf|api_org)_[A-Za-z]{34}(?![A-Za-z0-9])"),
        "Invalidate it at huggingface.co/settings/tokens and create a new one.",
    ),
    Rule(
        "npm_token",
        ("npm_",),
        re.compile(r"\bnpm_[A-Za-z0-9]{36}(?![A-Za-z0-9])"),
        "Revoke it (npm token revoke, or npmjs.com, Access Tokens) and create a new one.",
    ),
    # .npmrc: //registry.npmjs.org/:_authToken=..., whatever the token's shape.
    Rule(
        "npm_token",
        ("_authtoken",),
        re.compile(r"(?i)_authToken\s*=\s*[\"']?([A-Za-z0-9_./+=~-]{16,})"),
        "Revoke it (npm token revoke, or the registry's settings) and create a new one.",
        group=1,
    ),
    Rule(
        "pypi_token",
        ("pypi-AgE",),
        re.compile(r"\bpypi-AgE[A-Za-z0-9_-]{50,}"),
        "Remove it at pypi.org, Account settings, API tokens, and create a new one scoped to one project.",
    ),
    # scheme://user:password@host: the password. It reads no further than the next "/", so
    # not past the next "://".
    Rule(
        "url_password",
        ("://",),
        re.compile(r"://[^\s/?#@:\"'<>]*:([^\s/?#@\"'<>]+)@[A-Za-z0-9\[]"),
        "Change the account's password on that service, then wherever the URL is configured.",
        group=1,
    ),
    Rule(
        "bearer_token",
        ("Bearer",),
        re.compile(r"\bBearer\s+([A-Za-z0-9._~+/-]{16,}=*)"),
        "Revoke it where it was issued (end the session or delete the token) and issue a new one.",
        group=1,
        check=_mixed,
    ),
    # After bearer_token, so that "Bearer eyJ..." stays the bearer_token it always was (a
    # kind is part of the fingerprint).
    Rule(
        "jwt",
        ("eyJ",),
        re.compile(r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}"),
        "End the session it belongs to; if it lives long, rotate the key that signs it.",
    ),
    # A value named as a secret: no word boundary before the name, so AWS_SECRET_ACCESS_KEY=,
    # STRIPE_SECRET_KEY= and _authToken= match too.
    Rule(
        "secret_assignment",
        ("api", "secret", "client", "access", "auth", "token", "passw", "pwd"),
        re.compile(
            r"(?i)(?:api[_-]?key|secret(?:[_-]?key)?|client[_-]?secret|access[_-]?(?:key|token)"
            rf"|auth[_-]?token|token|password|passwd|pwd){_ASSIGN}([A-Za-z0-9_./+=~-]{{16,}})"
        ),
        "Find the service that issued it, revoke it there, and issue a new one.",
        group=1,
        check=lambda v: _mixed(v) and _entropy(v) >= 3.5,
    ),
    # Off unless asked for (high_entropy=True): random-looking runs are everywhere in code
    # sessions (hashes, ids, base64 data).
    Rule(
        "high_entropy",
        (),
        re.compile(r"(?<![A-Za-z0-9+/_=-])[A-Za-z0-9+/_-]{32,}={0,2}(?![A-Za-z0-9+/_=-])"),
        "Find what it is; if it is a credential, revoke it where it was issued.",
        check=lambda v: _mixed(v) and _entropy(v) >= 4.2,
    ),
    # IBAN: a country, two check digits, then the account in groups of four or not at all.
    Rule(
        "iban",
        (),
        re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?\b"),
        "Personal data: remove it; an account number is changed only by the bank.",
        check=_iban_ok,
        secret=False,
    ),
    # A card number, its digits in groups or not; the network and Luhn's check are checked after.
    Rule(
        "card_number",
        (),
        re.compile(r"(?<![\w.-])\d(?:[ -]?\d){12,18}(?![\w.-]?\d)"),
        "Personal data: remove it, and ask the bank to replace the card if it was a real one.",
        check=_card_ok,
        secret=False,
    ),
    EmailRule(
        "email",
        (),
        re.compile(r"(?<![\w.+-])[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}(?![\w-])"),
        "Personal data: remove it.",
        secret=False,
    ),
    # International: +CC then two to five groups; the digit count is checked after.
    Rule(
        "phone",
        (),
        re.compile(r"(?<![\w+])\+\d{1,3}(?:[ .-]?\(?\d{1,4}\)?){2,5}(?![\w.-]?\d)"),
        "Personal data: remove it.",
        check=_phone_digits_ok,
        secret=False,
    ),
    # National: (415) 555-2671, 415-555-2671, 06 12 34 56 78, 020 7183 8750, 07700 900123.
    # The guards keep out ISO dates, versions, IP addresses and longer digit runs.
    Rule(
        "phone",
        (),
        re.compile(
            r"(?<![\w.:/+-])(?:\(\d{3}\) ?\d{3}[ .-]\d{4}|\d{3}[ .-]\d{3}[ .-]\d{4}"
            r"|0[1-9](?:[ .-]?\d{2}){4}|0\d{2} \d{4} \d{4}|0\d{4} \d{6})(?![\w.:-]?\d)"
        ),
        "Personal data: remove it.",
        secret=False,
    ),
)

KINDS = tuple(dict.fromkeys(rule.kind for rule in RULES))
_USUAL_RULES = tuple(rule for rule in RULES if rule.kind != "high_entropy")
# The credential rules with a literal prefix, in RULES' order (the order decides overlaps):
# what the indexer looks for in every entry (index/findings.py).
CREDENTIAL_RULES = tuple(rule for rule in RULES if rule.secret and rule.prefixes)


class PrefixIndex:
    """Where each rule's prefixes start in a line, in two passes of one regex each: the
    prefixes written in one case on the line, the others on the line lowercased (a regex
    ignoring case reads text at a third of the speed).

    Each regex lists its prefixes longest first, so that where several start the longest is
    found; it then starts the rules of every prefix it begins with ("sk-ant-": the rules of
    "sk-ant-" and of "sk-"). Each search resumes one character after the last prefix found,
    so that prefixes overlapping it are found too.
    """

    def __init__(self, rules: Iterable[Rule]):
        with_prefixes = [rule for rule in rules if rule.prefixes]
        exact = [rule for rule in with_prefixes if not rule.regex.flags & re.IGNORECASE]
        any_case = [rule for rule in with_prefixes if rule.regex.flags & re.IGNORECASE]
        self.exact, self.exact_rules = self._alternation(exact, lower=False)
        self.lower, self.lower_rules = self._alternation(any_case, lower=True)
        self.any_case = re.compile(self.lower.pattern, re.IGNORECASE)  # where lowering moves text

    @staticmethod
    def _alternation(rules: list[Rule], lower: bool) -> tuple[re.Pattern, dict[str, tuple[Rule, ...]]]:
        prefixes = sorted(
            {p.lower() if lower else p for rule in rules for p in rule.prefixes}, key=len, reverse=True
        )
        starting = {
            found: tuple(
                rule
                for rule in rules
                if any(found.startswith(p.lower() if lower else p) for p in rule.prefixes)
            )
            for found in prefixes
        }
        return re.compile("|".join(map(re.escape, prefixes))), starting

    def starts(self, line: str) -> dict[int, list[int]]:
        """By id(rule): where its prefixes start in line, in order."""
        found: dict[int, list[int]] = {}
        lowered = line.lower()
        # "İ" lowers to two characters, which would move what follows: then read the line itself.
        moved = len(lowered) != len(line)
        for regex, text, rules_of, lower in (
            (self.exact, line, self.exact_rules, False),
            (self.any_case, line, self.lower_rules, True)
            if moved
            else (self.lower, lowered, self.lower_rules, True),
        ):
            match = regex.search(text)
            while match:
                for rule in rules_of[match.group().lower() if lower else match.group()]:
                    found.setdefault(id(rule), []).append(match.start())
                match = regex.search(text, match.start() + 1)
        return found


PREFIX_INDEX = PrefixIndex(RULES)


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


def scan_secrets(
    text: str, ignore: tuple[str, ...] = (), *, high_entropy: bool = False
) -> list[SecretFinding]:
    """Likely secrets and personal data in text; e-mail addresses in ignore (any case) are skipped.
    high_entropy: also report random-looking runs no rule names (SESSIONVIEWER_SECRETS_HIGH_ENTROPY)."""
    return [finding for finding, _ in secret_values(text, ignore, high_entropy=high_entropy)]


def secret_values(
    text: str,
    ignore: tuple[str, ...] = (),
    *,
    high_entropy: bool = False,
    rules: tuple[Rule, ...] | None = None,
):
    """scan_secrets, each finding with the text it found: for fingerprints and purges, never
    to be shown or kept. rules: only these (in RULES' order), whatever high_entropy says."""
    ignored = {item.casefold() for item in ignore}
    if rules is None:
        rules = RULES if high_entropy else _USUAL_RULES
    # A rule without prefixes reads every line: one search of the whole text first says whether
    # it can match on any (no rule's pattern reads across a line's end, and "\r" or "\n" after
    # a match is what its end of line is to it), which most texts' lines then skip.
    rules = tuple(rule for rule in rules if rule.prefixes or rule.may_match(text))
    prefixed = any(rule.prefixes for rule in rules)  # else no line's prefixes are looked for
    for number, line in enumerate(text.split("\n"), start=1):
        line = line.removesuffix("\r")
        starts = PREFIX_INDEX.starts(line) if prefixed else {}
        taken: list[tuple[int, int]] = []  # the spans found so far, in order, none overlapping
        found = []
        for rule in rules:
            if rule.prefixes and id(rule) not in starts:
                continue  # none of its prefixes in this line
            kind, group = rule.kind, rule.group
            kept, next_taken = [], 0
            for match in rule.finditer(line, starts.get(id(rule))):
                start, end = match.span(group)
                value = match.group(group)
                if rule.check is not None and not rule.check(value):
                    continue
                if kind == "email" and value.casefold() in ignored:
                    continue
                # A rule's spans come in order: one walk along taken finds every overlap,
                # where comparing each span with all of taken costs the square of their number.
                while next_taken < len(taken) and taken[next_taken][1] <= start:
                    next_taken += 1
                if next_taken < len(taken) and taken[next_taken][0] < end:
                    continue
                kept.append((start, end))
                # A placeholder or an example keeps its span, so that no later rule reports it
                # or a piece of it (the parts of jwt.io's token as random strings).
                if not (rule.secret and not_a_secret(value)):
                    found.append((SecretFinding(kind, number, start + 1, _mask(kind, value)), value))
            taken = sorted(taken + kept)  # two ordered runs, which sorted merges in linear time
        yield from sorted(found, key=lambda pair: pair[0].column)


def credentials_in(text: str) -> list[tuple[SecretFinding, str]]:
    """The credentials the rules find in text, each with its value: for a fingerprint, never
    to be shown or kept."""
    return list(secret_values(text, rules=CREDENTIAL_RULES)) if text else []


def with_masks(text: str, found: Iterable[tuple[SecretFinding, str]]) -> str:
    """text with each value found replaced by its finding's mask, the longest first (a value
    holding another is masked whole)."""
    for finding, value in sorted(found, key=lambda pair: len(pair[1]), reverse=True):
        text = text.replace(value, finding.masked)
    return text


class JsonSecret(NamedTuple):
    """A finding in one string of a decoded JSON value; line and column are the string's."""

    path: tuple[str | int, ...]  # the keys and indexes that lead to the string
    in_key: bool  # in the name path[-1] itself, not in its value
    finding: SecretFinding
    value: str  # what was found: for fingerprints, never to be shown or kept


def json_secret_values(
    data, ignore: tuple[str, ...] = (), *, high_entropy: bool = False, rules: tuple[Rule, ...] | None = None
) -> Iterator[JsonSecret]:
    """secret_values over every string of a decoded JSON value, in document order.

    The strings, not the JSON text: there, the "n" of a "\\n" escape runs into the word after
    it, which then has no word boundary to start at. A string under a name is read as
    name=value, so AWS_SECRET_ACCESS_KEY's value is found by its name.
    """
    stack: list[tuple[tuple[str | int, ...], object]] = [((), data)]  # no recursion: any depth
    while stack:
        path, item = stack.pop()
        if isinstance(item, str):
            for finding, value in secret_values(item, ignore, high_entropy=high_entropy, rules=rules):
                yield JsonSecret(path, False, finding, value)
        elif isinstance(item, list):
            stack.extend(((*path, index), child) for index, child in reversed(list(enumerate(item))))
        elif isinstance(item, dict):
            for name, child in reversed(list(item.items())):
                name = str(name)
                if isinstance(child, str) and "\n" not in name:
                    stack.append(((*path, name), _Named(name, child)))
                else:
                    stack.append(((*path, name), child))
                    stack.append(((*path, name), _Named(name, None)))
        elif isinstance(item, _Named):
            yield from _named_secret_values(path, item, ignore, high_entropy, rules)


class _Named(NamedTuple):
    name: str
    value: str | None  # None: the name alone, its value read on its own


def _named_secret_values(path, named: _Named, ignore, high_entropy: bool, rules) -> Iterator[JsonSecret]:
    """The findings of name=value, each placed in the name or in the value."""
    if named.value is None:
        for finding, value in secret_values(named.name, ignore, high_entropy=high_entropy, rules=rules):
            yield JsonSecret(path, True, finding, value)
        return
    shift = len(named.name) + 1  # "name=" before the value's first line
    text = f"{named.name}={named.value}"
    for finding, value in secret_values(text, ignore, high_entropy=high_entropy, rules=rules):
        if finding.line > 1:
            yield JsonSecret(path, False, finding, value)
        elif finding.column > shift:
            yield JsonSecret(path, False, replace(finding, column=finding.column - shift), value)
        else:
            yield JsonSecret(path, True, finding, value)


def fingerprint(kind: str, value: str, key: str) -> str:
    """A finding's identity across versions of a file, keyed (HMAC-SHA256 with the site's secret
    key) so that a short value, a phone number say, cannot be found again from it by trying them all."""
    return hmac.new(key.encode(), f"{kind}\0{value}".encode(), hashlib.sha256).hexdigest()


def fingerprinted(text: str, ignore: tuple[str, ...], key: str, *, high_entropy: bool = False) -> list[dict]:
    """Each finding of text as a snapshot keeps it: masked, placed, and fingerprinted."""
    return [
        {
            "kind": finding.kind,
            "line": finding.line,
            "column": finding.column,
            "masked": finding.masked,
            "fp": fingerprint(finding.kind, value, key),
        }
        for finding, value in secret_values(text, ignore, high_entropy=high_entropy)
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


def scan_file(path: Path, ignore: tuple[str, ...], *, high_entropy: bool = False):
    """(line number, finding) of one file, read as the report reads it."""
    # Line by line, so a large transcript is never held in memory whole.
    with open_regular(path) as handle:
        for number, raw in enumerate(handle, start=1):
            line = raw.decode("utf-8", errors="replace").rstrip("\n")
            for finding in scan_secrets(line, ignore, high_entropy=high_entropy):
                yield number, finding


def iter_tree_findings(root: Path, jid: str | None = None, *, high_entropy: bool = False):
    """scan_tree, lazily: a caller can stop after enough findings without reading the rest.

    A file scanned to its end keeps its findings in FINDINGS, under its size, mtime
    and inode: the report's later pages, and the next visit, read only what changed.
    """
    for owner, relative, path in _memory_files(real_path(Path(root)), jid):
        ignore = (owner,) if owner else ()
        try:
            yield from _file_findings(path, relative, ignore, high_entropy)
        except OSError:
            continue


def _file_findings(path: Path, relative: str, ignore: tuple[str, ...], high_entropy: bool):
    info = path.stat()
    version = (info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino, ignore, high_entropy)
    cached = FINDINGS.get(path, version)
    if cached is not None:
        yield from cached
        return
    found = []
    for number, finding in scan_file(path, ignore, high_entropy=high_entropy):
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


def scan_tree(root: Path, jid: str | None = None, *, high_entropy: bool = False) -> list[SecretFinding]:
    """scan_secrets over every memory file and transcript (or one JID's); a JID's own address is
    not reported in its folder."""
    return list(iter_tree_findings(root, jid, high_entropy=high_entropy))
