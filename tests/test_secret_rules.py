"""The secrets scanner's table of rules (issue 31): each rule's find and near miss,
placeholders and documented examples, names before values, decoded JSON strings, and the
masks and fingerprints that findings recorded before the table must keep."""

import json

import pytest

from sessionviewer.workspaces import secrets
from sessionviewer.workspaces.secrets import fingerprinted, json_secret_values, scan_secrets, secret_values

from .secret_inputs import HEX64, RULE_CASES


def _values(text: str, kind: str) -> list[tuple[str, str, int]]:
    # high_entropy is off unless asked for; asked for only in its own cases, as it would find
    # some of the other near misses
    found = secret_values(text, high_entropy=kind == "high_entropy")
    return [(finding.kind, value, finding.column) for finding, value in found]


def test_every_kind_has_a_case():
    assert {kind for kind, *_ in RULE_CASES} == set(secrets.KINDS)


@pytest.mark.parametrize(("kind", "text", "value", "near_miss"), RULE_CASES, ids=[c[0] for c in RULE_CASES])
def test_each_rule_finds_its_value(kind, text, value, near_miss):
    assert _values(text, kind) == [(kind, value, text.index(value) + 1)]


@pytest.mark.parametrize(("kind", "text", "value", "near_miss"), RULE_CASES, ids=[c[0] for c in RULE_CASES])
def test_each_rule_passes_over_its_near_miss(kind, text, value, near_miss):
    assert _values(near_miss, kind) == []


@pytest.mark.parametrize(
    "text",
    [
        "ANTHROPIC_API_KEY=sk-ant-xxxxxxxx",
        "ANTHROPIC_API_KEY=sk-ant-xxxxxxxxxxxxxxxxxxxxxxxx",
        "SLACK_BOT_TOKEN=xoxb-your-bot-token",
        "OPENAI_API_KEY=sk-proj-YOUR_API_KEY_GOES_HERE_1234",
        "GITHUB_TOKEN=ghp_" + "0" * 36,
        "api_key = <paste-your-key-1234567890>",
        "postgres://user:password@localhost:5432/db",
        "postgres://app:${DB_PASSWORD}@db:5432/app",
        "aws_access_key_id = AKIAIOSFODNN7EXAMPLE",
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "STRIPE_SECRET_KEY=sk_test_4eC39HqLyjWDarjtT1zdp7dc",
        "card 4242 4242 4242 4242 exp 12/34",
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIy"
        "fQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
        "Authorization: Bearer eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwi"
        "aWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
    ],
)
def test_placeholders_and_documented_examples_are_not_secrets(text):
    assert scan_secrets(text, high_entropy=True) == []


AWS_SECRET = "Zx8vQ2mN7pL4rT9wK3sBq1W2e3R4t5Y6u/+8o9P0"
NAMED = "h7Fq2LmX9pRt4VwZ"


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        (f"AWS_SECRET_ACCESS_KEY={AWS_SECRET}", "aws_secret_key"),
        (f'"SecretAccessKey": "{AWS_SECRET}",', "aws_secret_key"),
        (f"export AWS_SECRET_ACCESS_KEY={NAMED}", "secret_assignment"),
        (f"STRIPE_SECRET_KEY={NAMED}", "secret_assignment"),
        (f"MY_SERVICE_PASSWORD={NAMED}", "secret_assignment"),
        (f"//npm.example.com/:_authToken={NAMED}", "npm_token"),
    ],
)
def test_a_name_inside_a_longer_name_still_names_its_value(text, kind):
    # The rule before the table wanted a word boundary before the name, which "_" denies.
    ((finding, value),) = secret_values(text)
    assert (finding.kind, value) == (kind, AWS_SECRET if kind == "aws_secret_key" else NAMED)


def test_an_openrouter_key_is_reported_as_one_not_as_an_openai_key():
    assert [f.kind for f in scan_secrets(f"sk-or-v1-{HEX64}")] == ["openrouter_key"]


def test_a_specific_token_named_as_a_secret_is_reported_once_under_its_own_kind():
    text = "STRIPE_SECRET_KEY=sk_live_51Hq2mN7pL4rT9wK3sBxY password=ghp_" + "a1B2" * 9
    assert [f.kind for f in scan_secrets(text)] == ["stripe_key", "github_token"]


def test_high_entropy_strings_are_reported_only_when_asked_for():
    text = "blob Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op8Qr9St0UvWx"
    assert scan_secrets(text) == []
    assert [f.kind for f in scan_secrets(text, high_entropy=True)] == ["high_entropy"]


def test_a_line_whose_lowering_moves_its_characters_is_read_in_place():
    # "İ" lowers to two characters: the names are then looked for in the line itself.
    text = "İİ password = h7Fq2LmX9pRt4VwZ and İ"
    assert [(f.kind, f.column) for f in scan_secrets(text)] == [("secret_assignment", 15)]


def test_prefixes_overlapping_one_another_are_all_tried():
    # "_authToken" holds "token", and "sk-ant-" starts with "sk-": each rule is tried.
    text = "_authToken=${X} token=h7Fq2LmX9pRt4VwZ sk-ant-short sk-4fT9xQ2mZ8vL1rN6kP3sW7yB"
    assert [f.kind for f in scan_secrets(text)] == ["secret_assignment", "openai_key"]


def test_every_rule_says_in_one_line_how_to_rotate_its_kind():
    for rule in secrets.RULES:
        assert rule.rotate.strip() and "\n" not in rule.rotate, rule.kind


# Decoded JSON


def test_a_secret_after_an_escaped_newline_is_found_in_the_decoded_string():
    line = json.dumps({"type": "tool_result", "content": [{"text": "printenv:\nAKIAZ7QK3M5XR2WPLN4D\n"}]})
    assert "\\nAKIA" in line and scan_secrets(line) == []  # the raw line: "nAKIA" has no word boundary
    (found,) = json_secret_values(json.loads(line))
    assert found.path == ("content", 0, "text") and not found.in_key
    assert (found.finding.kind, found.finding.line, found.finding.column) == ("aws_access_key", 2, 1)
    assert found.value == "AKIAZ7QK3M5XR2WPLN4D"


def test_a_string_is_read_with_its_name_and_placed_in_its_value():
    data = {"env": {"AWS_SECRET_ACCESS_KEY": "Zx8vQ2mN7pL4rT9wK3sBq1W2e3R4t5Y6u/+8o9P0", "HOME": "/home/a"}}
    (found,) = json_secret_values(data)
    assert (found.path, found.in_key, found.finding.kind, found.finding.column) == (
        ("env", "AWS_SECRET_ACCESS_KEY"),
        False,
        "aws_secret_key",
        1,
    )


def test_a_finding_in_a_name_is_placed_in_the_name():
    data = {"contacts": {"bob@example.org": {"since": 2020}, "carol@example.org": "friend"}}
    found = [(f.path, f.in_key, f.finding.masked) for f in json_secret_values(data)]
    assert found == [
        (("contacts", "bob@example.org"), True, "b**@example.org"),
        (("contacts", "carol@example.org"), True, "c****@example.org"),
    ]


def test_json_strings_are_read_in_document_order_at_any_depth():
    deep: list = ["mail a@example.org"]
    for _ in range(5000):  # deeper than Python's recursion limit
        deep = [deep]
    data = {"first": "mail b@example.org", "deep": deep, "last": ["mail c@example.org", 7, None, True]}
    assert [f.finding.masked for f in json_secret_values(data)] == [
        "b@example.org",
        "a@example.org",
        "c@example.org",
    ]


# What findings recorded before the table keep. Computed once on main at 63f20ca (the scanner
# before this table) by:
#   .venv/bin/python -c "from sessionviewer.workspaces.secrets import fingerprinted;
#     print(fingerprinted(TEXT, (), 'fingerprint-test-key'))"
FINGERPRINT_KEY = "fingerprint-test-key"
BEFORE_THE_TABLE = [
    ("export OPENAI_API_KEY=sk-proj-4fT9xQ2mZ8vL1rN6kP3sW7yB", "openai_key", "sk-p**************************yB",
     "2b019c4f3a3ee6efe87572126f815b79f0141a60d4ba24d585d65c164e010882"),
    ("ANTHROPIC_API_KEY=sk-ant-api03-Zx8vQ2mN7pL4rT9wK3sB", "anthropic_key", "sk-a***************************sB",
     "6a507eeb1e2e9b4e8d067cd130ab5b552b1c98de1a199b3e32723aba6bb731ef"),
    ("token ghp_" + "a1B2" * 9, "github_token", "ghp_**********************************B2",
     "fab29977a1954ecf6075a3d7fbc8a1cac2f957081c63c6328dfa7398219decbc"),
    ("slack xoxb-123456789012-abcdefABCDEF", "slack_token", "xoxb************************EF",
     "cfdfa8a0d4254d38f9d79fd5bfcd158a6eecd439325d0cc136be92d52715e9af"),
    ("aws AKIAZ7QK3M5XR2WPLN4D", "aws_access_key", "AKIA**************4D",
     "199fd623ec19e9187732446c03a00ab51c92024c3d8e32b27296fdc317fc424a"),
    ("key AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q", "google_api_key", "AIza*********************************6Q",
     "8514fa6b76bea46a77b2bb64b0407655849b451c5283e641d8d7e3e65ae6f456"),
    ("Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.abc123", "bearer_token", "eyJh*********************23",
     "9cd508f3163862ad9f04f169b37e83b5f1a347f508e2d2d600d96a4d7cd70755"),
    ('api_key = "Zx8vQ2mN7pL4rT9wK3sB"', "secret_assignment", "Zx8v**************sB",
     "a17af8014770a35b91353902a33884dbba758bac0c5e82308005dd7078a7f309"),
    ("-----BEGIN RSA PRIVATE KEY-----", "private_key", "-----BEGIN RSA PRIVATE KEY-----",
     "a004647a1a55ba920ecaed088b1c55c5ee39ed7ea524ce7e22e15fd11c5fb551"),
    ("pay to GB82WEST12345698765432", "iban", "GB82****************32",
     "d2c66be9d72199d4c4b5fbb200f7eadcaf6db49a6220373f39ae9255e03f0ad7"),
    ("card 4111 1111 1111 1111", "card_number", "**** **** **** 1111",
     "c4450c3c11639479a4f20ddc4e295dfb39e5ba3e62646768e5654a81802a512b"),
    ("mail jane.doe@mail.example.org", "email", "j*******@mail.example.org",
     "a2e4077371523a27f04b57464b09b5eb9d0d50c7dbe26a7ffe2a936ca2b247b2"),
    ("call +33 6 12 34 56 78", "phone", "+** * ** ** ** 78",
     "b53b073fd1cd772939ba9f1e76dc76ae8a7afb5dd165db7e4a464216d6d0e686"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("text", "kind", "masked", "fp"), BEFORE_THE_TABLE, ids=[c[1] for c in BEFORE_THE_TABLE]
)
def test_a_kind_found_before_the_table_keeps_its_mask_and_fingerprint(text, kind, masked, fp):
    (found,) = fingerprinted(text, (), FINGERPRINT_KEY)
    assert (found["kind"], found["masked"], found["fp"]) == (kind, masked, fp)
