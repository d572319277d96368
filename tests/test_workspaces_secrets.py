"""The secrets report: what scan_secrets flags and masks, and the per-file cache."""

import random
import re
from pathlib import Path

import pytest

from sessionviewer import workspaces as ws
from sessionviewer.workspaces import (
    iter_tree_findings,
    scan_secrets,
    scan_tree,
    search_memory,
    secrets,
)

from . import secret_inputs
from .workspace_files import (
    make_tree,
)

# Secrets


@pytest.mark.parametrize(
    ("text", "kind", "secret"),
    [
        ("mail me at jane.doe+x@mail.example.org please", "email", "jane.doe+x@mail.example.org"),
        ("call +33 6 12 34 56 78 now", "phone", "+33 6 12 34 56 78"),
        ("call +1 (415) 555-2671", "phone", "+1 (415) 555-2671"),
        ("call (415) 555-2671", "phone", "(415) 555-2671"),
        ("call 415-555-2671", "phone", "415-555-2671"),
        ("appelle le 06 12 34 56 78", "phone", "06 12 34 56 78"),
        ("ring 020 7183 8750", "phone", "020 7183 8750"),
        ("key sk-proj-4fT9xQ2mZ8vL1rN6kP3sW7yB", "openai_key", "sk-proj-4fT9xQ2mZ8vL1rN6kP3sW7yB"),
        ("key sk-ant-api03-Zx8vQ2mN7pL4rT9wK3sB", "anthropic_key", "sk-ant-api03-Zx8vQ2mN7pL4rT9wK3sB"),
        ("ghp_" + "a1B2" * 9, "github_token", "ghp_" + "a1B2" * 9),
        ("gho_" + "Z9y8" * 9, "github_token", "gho_" + "Z9y8" * 9),
        ("github_pat_11ABCDEFG0abcdefghij_klmnopqrstuvwxyz0123456789", "github_token", None),
        ("xoxb-123456789012-abcdefABCDEF", "slack_token", "xoxb-123456789012-abcdefABCDEF"),
        ("xoxp-123456789012-abcdef", "slack_token", "xoxp-123456789012-abcdef"),
        ("aws AKIAZ7QK3M5XR2WPLN4D", "aws_access_key", "AKIAZ7QK3M5XR2WPLN4D"),
        ("AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q", "google_api_key", None),
        ("Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.abc123", "bearer_token", "eyJhbGciOiJIUzI1NiJ9.abc123"),
        ('api_key = "Zx8vQ2mN7pL4rT9wK3sB"', "secret_assignment", "Zx8vQ2mN7pL4rT9wK3sB"),
        ('{"password": "h7Fq2LmX9pRt4VwZ"}', "secret_assignment", "h7Fq2LmX9pRt4VwZ"),
        ("-----BEGIN RSA PRIVATE KEY-----", "private_key", None),
        ("-----BEGIN OPENSSH PRIVATE KEY-----", "private_key", None),
        ("-----BEGIN PRIVATE KEY-----", "private_key", None),
        ("IBAN FR14 2004 1010 0505 0001 3M02 606 please", "iban", "FR14 2004 1010 0505 0001 3M02 606"),
        ("pay to GB82WEST12345698765432", "iban", "GB82WEST12345698765432"),
        ("DE89 3704 0044 0532 0130 00", "iban", "DE89 3704 0044 0532 0130 00"),
        ("card 4111 1111 1111 1111 exp 12/29", "card_number", "4111 1111 1111 1111"),
        ("card 5500-0000-0000-0004", "card_number", "5500-0000-0000-0004"),
        ("amex 378282246310005", "card_number", "378282246310005"),
    ],
)
def test_scan_secrets_flags_and_masks(text, kind, secret):
    findings = scan_secrets(text)
    assert [f.kind for f in findings] == [kind]
    if secret:
        assert findings[0].column == text.index(secret) + 1
        assert secret not in findings[0].masked
        assert len(findings[0].masked) == len(secret)


@pytest.mark.parametrize(
    "text",
    [
        "Released version 1.2.3 on 2025-06-01 at 14:30:22",
        "created 2025-02-08T19:00:00.123456789+00:00",
        "archive 20250601-143022.jsonl",
        "msg a1b2c3d4-e5f6-7890-abcd-ef1234567890",
        "host 192.168.100.200 port 5222",
        "version 10.0.19045.3803",
        "sender alice@muc said hi",
        "a risk-assessment-framework-document-name",
        "token = placeholder_value_here",
        "Bearer of good news arrived yesterday",
        "order 123456789012345 shipped",
        "price 1 234 567 890",
        "IBAN FR14 2004 1010 0505 0001 3M02 607 (one digit off)",
        "card 4111 1111 1111 1112 fails Luhn",
        "ticket 1234 5678 9012 3456",
        "batch 20250601143022123 done",
        "id US12 3456 7890 1234",
    ],
)
def test_scan_secrets_ignores_common_look_alikes(text):
    assert scan_secrets(text) == []


def test_scan_secrets_reports_line_and_column():
    findings = scan_secrets("hello\r\n  write to bob@example.org\n")
    assert [(f.kind, f.line, f.column, f.masked) for f in findings] == [("email", 2, 12, "b**@example.org")]


def test_scan_secrets_reports_an_anthropic_key_once():
    findings = scan_secrets("ANTHROPIC_API_KEY=sk-ant-api03-Zx8vQ2mN7pL4rT9wK3sB")
    assert [f.kind for f in findings] == ["anthropic_key"]


def test_a_span_overlapping_any_earlier_finding_is_dropped():
    text = "keys sk-ant-api03-Zx8vQ2mN7pL4rT9wK3sB and sk-ant-api03-Qw8vQ2mN7pL4rT9wK3sB, bob@example.org"
    findings = scan_secrets(text)  # "sk-" matches both keys again: the first and the second taken
    assert [(f.kind, f.column) for f in findings] == [
        ("anthropic_key", 6),
        ("anthropic_key", 44),
        ("email", 79),
    ]


def test_a_card_number_keeps_only_its_last_four_digits():
    assert scan_secrets("card 4111 1111 1111 1111")[0].masked == "**** **** **** 1111"


def test_scan_secrets_masks_all_but_the_last_two_phone_digits():
    assert scan_secrets("+33 6 12 34 56 78")[0].masked == "+** * ** ** ** 78"


def test_scan_secrets_skips_ignored_addresses_in_any_case():
    assert scan_secrets("from Alice@Example.com", ignore=("alice@example.com",)) == []


def test_scan_tree_finds_nothing_in_the_sample_but_its_own_addresses_are_not_reported(sample):
    assert scan_tree(sample) == []


def test_scan_tree_reports_file_and_line_in_memory_and_transcripts(sample):
    alice = sample / "alice@example.com"
    with (alice / "memory.md").open("a") as handle:
        handle.write("- 2025-06-04: gave her key AKIAZ7QK3M5XR2WPLN4D\n")
    with (alice / "sessions" / "20250601-143022.md").open("a") as handle:
        handle.write("\n### user\nmy number is +33 6 12 34 56 78\n")
    findings = {(f.file, f.line, f.kind) for f in scan_tree(sample)}
    assert findings == {
        ("alice@example.com/memory.md", 3, "aws_access_key"),
        ("alice@example.com/sessions/20250601-143022.md", 14, "phone"),
    }


def test_scan_tree_of_one_jid_reads_only_that_folder(sample):
    (sample / "memory.md").write_text("- root@shop.example\n")
    (sample / "bob@example.com" / "context.md").write_text("- bob's friend erin@shop.example\n")
    with (sample / "alice@example.com" / "memory.md").open("a") as handle:
        handle.write("- frank@shop.example\n")
    assert {f.file for f in scan_tree(sample, "bob@example.com")} == {"bob@example.com/context.md"}


def test_iter_tree_findings_is_lazy(sample):
    for jid in ("alice@example.com", "bob@example.com"):
        (sample / jid / "memory.md").write_text("- a@shop.example\n- b@shop.example\n")
    findings = iter_tree_findings(sample)
    first = next(findings)
    assert first.file == "alice@example.com/memory.md" and first.line == 1
    findings.close()


def _counting_scans(monkeypatch) -> list[str]:
    scanned = []
    real = secrets.scan_file

    def counting(path, ignore, **options):
        scanned.append(path.name if path.parent.name != "sessions" else f"sessions/{path.name}")
        return real(path, ignore, **options)

    monkeypatch.setattr(secrets, "scan_file", counting)
    return scanned


def test_a_second_scan_reads_only_the_files_that_changed(sample, monkeypatch):
    (sample / "alice@example.com" / "memory.md").write_text("- a@shop.example\n")
    (sample / "bob@example.com" / "memory.md").write_text("- b@shop.example\n")
    first = scan_tree(sample)
    scanned = _counting_scans(monkeypatch)
    assert scan_tree(sample) == first and scanned == []
    with (sample / "bob@example.com" / "memory.md").open("a") as handle:
        handle.write("- c@shop.example\n")
    third = scan_tree(sample)
    assert scanned == ["memory.md"]  # bob's, alone
    secrets.FINDINGS.clear()
    assert third == scan_tree(sample)  # what a scan without the cache finds
    assert len(third) == len(first) + 1


def test_a_scan_stopped_inside_a_file_keeps_nothing_of_that_file(sample, monkeypatch):
    (sample / "alice@example.com" / "memory.md").write_text("- a@shop.example\n- b@shop.example\n")
    findings = iter_tree_findings(sample, "alice@example.com")
    assert next(findings).line == 1
    findings.close()
    assert [f.line for f in scan_tree(sample, "alice@example.com") if f.file.endswith("memory.md")] == [1, 2]


def test_the_findings_cache_keeps_one_version_per_file_and_what_fits_its_limit():
    cache = secrets.FindingsCache(limit=5)
    finding = ws.SecretFinding("email", 1, 1, "a*@x")
    a, b, c = Path("a.md"), Path("b.md"), Path("c.md")
    cache.put(a, (1,), [finding] * 2)  # 3 with its entry
    cache.put(b, (1,), [finding])  # 2: full
    assert cache.get(a, (1,)) is not None and cache.get(a, (2,)) is None  # another version of a
    cache.put(c, (1,), [])  # over the limit: c is read again next time, a and b stay
    assert cache.get(c, (1,)) is None and cache.get(b, (1,)) is not None
    cache.put(a, (2,), [])  # a changed: its new findings replace the old, which frees room
    assert cache.get(a, (1,)) is None and cache.get(a, (2,)) == []
    cache.put(c, (1,), [finding])
    assert cache.get(c, (1,)) == [finding] and cache.size == 5


def test_scan_tree_keeps_line_numbers_with_crlf_and_bad_bytes(tmp_path):
    make_tree(tmp_path, {"a@example.com/memory.md": b"caf\xe9\r\n\r\n- +33 6 12 34 56 78\r\n"})
    (finding,) = scan_tree(tmp_path)
    assert (finding.line, finding.column, finding.kind) == (3, 3, "phone")


def test_search_and_the_secrets_scan_pass_over_a_fifo(tmp_path, fifo):
    root = make_tree(
        tmp_path / "memory",
        {"alice@example.com/user.md": "mail bob@example.org", "alice@example.com/sessions/": ""},
    )
    fifo(root / "alice@example.com" / "memory.md")
    fifo(root / "alice@example.com" / "sessions" / "20250101-000000.jsonl")
    assert [hit.file for hit in search_memory(root, "mail")] == ["user.md"]
    assert [f.file for f in scan_tree(root)] == ["alice@example.com/user.md"]
    assert fifo.opened == []


def test_a_finding_names_its_jid_and_none_in_a_global_file():
    in_jid = ws.SecretFinding("email", 2, 3, "b**@x.org", "a@example.com/memory.md")
    assert in_jid.to_dict() == {
        "file": "a@example.com/memory.md",
        "jid": "a@example.com",
        "line": 2,
        "column": 3,
        "kind": "email",
        "masked": "b**@x.org",
    }
    assert ws.SecretFinding("email", 1, 1, "b**@x.org", "identity.md").to_dict()["jid"] == ""


# Linear time (issue 26): the only timed tests here, as the issue asks. A pattern that can
# start at every character of a run and scan to its end (the e-mail address after each "%")
# costs the square of the line's length: 31 s for one 200 KB memory.md line. Each input is
# scanned at 30 KB and at 300 KB: linear costs some 10 times more, quadratic some 100 times.
# Not 100 KB and 1 MB: with a rule per kind and every input for every rule, those sizes
# took CI two and a half minutes, and the ratio tells the two apart as well at these.

SMALL, LARGE = 30_000, 300_000
CEILING = 1.5  # CPU seconds for 300 KB: generous, the slowest linear scan takes a third of it
LINEAR = 30  # the most LARGE may cost over SMALL: 10 linear, 100 quadratic
FLOOR = 0.002  # a 30 KB scan faster than this is counted as this, so clock noise is no ratio


def _assert_linear(scan, shape: tuple[str, str]) -> None:
    # Past a tenth of the ceiling at 30 KB, even a linear scan would pass it at 300 KB: fail
    # there, rather than spend the hours a quadratic scan of 300 KB takes.
    small_ceiling = CEILING * SMALL / LARGE
    small = secret_inputs.cpu_seconds(scan, secret_inputs.text(shape, SMALL), runs=2, enough=small_ceiling)
    assert small < small_ceiling, f"30 KB took {small:.2f} s"
    line = secret_inputs.text(shape, LARGE)
    large = secret_inputs.cpu_seconds(scan, line, runs=1, enough=CEILING)
    if CEILING > large >= LINEAR * max(small, FLOOR):  # once more before failing, for a noisy neighbour
        large = min(large, secret_inputs.cpu_seconds(scan, line, runs=1, enough=CEILING))
    assert large < CEILING, f"300 KB took {large:.2f} s"
    assert large / max(small, FLOOR) < LINEAR, f"30 KB: {small:.4f} s, 300 KB: {large:.4f} s"


@pytest.mark.scan_time
def test_the_linear_time_check_tells_a_quadratic_scan_at_these_sizes():
    # An address finder that starts at every character of a run and scans to its end.
    quadratic = re.compile(r"[\w.%+-]+@[\w-]+\.\w+")
    with pytest.raises(AssertionError):
        _assert_linear(lambda text: list(quadratic.finditer(text)), ("", "a"))


@pytest.mark.scan_time
@pytest.mark.parametrize("shape", secret_inputs.ADVERSARIAL.values(), ids=secret_inputs.ADVERSARIAL)
@pytest.mark.parametrize("rule", secrets.RULES, ids=[f"{n}-{r.kind}" for n, r in enumerate(secrets.RULES)])
def test_each_rule_scans_adversarial_input_in_linear_time(rule, shape):
    _assert_linear(lambda text: list(rule.finditer(text)), shape)


# Pieces of addresses, to join at random: starts after "%", after a word character not in
# ASCII, inside a domain that a run of the next address starts in.
ADDRESS_PIECES = ["a", "Z9", "%", "%41", "@", "@b.co", "x@y.org", ".", "-", "+", "_", "é", " ", ".io", "é%"]


def test_the_email_finder_finds_what_its_regex_finds_from_every_start():
    (pattern,) = [rule for rule in secrets.RULES if rule.kind == "email"]
    rng = random.Random(26)
    found = 0
    for _ in range(20_000):
        line = "".join(rng.choices(ADDRESS_PIECES, k=rng.randint(1, 12)))
        expected = [m.span() for m in pattern.regex.finditer(line)]
        assert [m.span() for m in pattern.finditer(line)] == expected, line
        found += len(expected)
    assert found > 5_000


def _scan_every_rule(text: str) -> list:
    return scan_secrets(text, high_entropy=True)


def test_every_kind_has_a_dense_line_to_time():
    assert set(secret_inputs.DENSE) == set(secrets.KINDS)
    for kind, unit in secret_inputs.DENSE.items():
        assert {f.kind for f in _scan_every_rule(unit * 3)} == {kind}


@pytest.mark.scan_time
@pytest.mark.parametrize("kind", secret_inputs.DENSE)
def test_a_line_dense_with_findings_is_scanned_in_linear_time(kind):
    _assert_linear(_scan_every_rule, ("", secret_inputs.DENSE[kind]))
