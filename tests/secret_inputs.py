"""Lines that cost a backtracking secrets scan the square of their length (issue 26), for the
linear-time tests of the secrets report and for bench/bench_secrets.py, which reads this file
on its own: it imports nothing of the project. Also each rule's find and near miss
(RULE_CASES), for the rules' tests and the index's scan."""

import gc
import math
import time

# (what comes first, what is repeated): runs of each character a pattern's classes hold,
# the starts of each pattern repeated, and a start followed by a long run.
ADVERSARIAL = {
    **{f"run of {c!r}": ("", c) for c in "%@.-_+/=:()'\"~ \t1aAé"},
    "word characters": ("", "aB3_"),
    "letters and digits": ("", "a1"),
    "url-encoded": ("", "a%20b%3D"),
    "percent hex": ("", "%41"),
    "a%": ("", "a%"),
    "%a@": ("", "%a@"),
    "a@": ("", "a@"),
    "a@b.": ("", "a@b."),
    "@a.": ("", "@a."),
    "a.": ("", "a."),
    "a-": ("", "a-"),
    "a=": ("", "a="),
    "a/": ("", "a/"),
    ".1": ("", ".1"),
    "1.": ("", "1."),
    "1 ": ("", "1 "),
    "1-": ("", "1-"),
    "01 ": ("", "01 "),
    "123 ": ("", "123 "),
    "+1 ": ("", "+1 "),
    "+1": ("", "+1"),
    "(1) ": ("", "(1) "),
    "+12 (3)": ("", "+12 (3)"),
    "sk-": ("", "sk-"),
    "sk-ant-": ("", "sk-ant-"),
    "AKIA": ("", "AKIA"),
    "ASIA ": ("", "ASIA "),
    "eyJ": ("", "eyJ"),
    "ghp_": ("", "ghp_"),
    "github_pat_": ("", "github_pat_"),
    "xoxb-": ("", "xoxb-"),
    "AIza": ("", "AIza"),
    "Bearer ": ("", "Bearer "),
    "token=": ("", "token="),
    "password: ": ("", "password: "),
    "api_key ": ("", "api_key "),
    "-----BEGIN ": ("", "-----BEGIN "),
    "-----BEGIN A ": ("", "-----BEGIN A "),
    "FR14 ": ("", "FR14 "),
    "AB12": ("", "AB12"),
    "BEGIN then words": ("-----BEGIN ", "RSA "),
    "BEGIN then a word": ("-----BEGIN ", "A"),
    "Bearer then spaces": ("Bearer", " "),
    "password then spaces": ("password", " "),
    "password= then spaces": ("password=", " "),
    "address then labels": ("x@", "a."),
    "address then hyphens": ("x@", "a-"),
    "+ then digits": (" +", "1"),
    "sk-ant- then hyphens": ("sk-ant-", "-"),
    # The prefixes of the rules added for issue 31, and the runs their patterns read.
    "sk-or-": ("", "sk-or-"),
    "sk-or-v1- then hex": ("sk-or-v1-", "a"),
    "sk_live_": ("", "sk_live_"),
    "whsec_": ("", "whsec_"),
    "SK": ("", "SK"),
    "SK then hex": ("SK", "0"),
    "glpat-": ("", "glpat-"),
    "xapp-": ("", "xapp-"),
    "hooks.slack.com/services/": ("", "hooks.slack.com/services/"),
    "hf_": ("", "hf_"),
    "npm_": ("", "npm_"),
    "_authToken=": ("", "_authToken="),
    "pypi-AgE": ("", "pypi-AgE"),
    "://": ("", "://"),
    "://a:": ("", "://a:"),
    ":// then a user": ("://", "a"),
    "://a: then a password": ("://a:", "b"),
    "aws_secret_access_key=": ("", "aws_secret_access_key="),
    "SecretAccessKey then base64": ('"SecretAccessKey": "', "a/+1"),
    "secret": ("", "secret"),
    "eyJa.": ("", "eyJa."),
    "eyJ then a header": ("eyJ", "a"),
    "two JWT parts then a run": ("eyJabcdefghijk.eyJabcdefghijk.", "a"),
}


# One of each kind, repeated: a line of many findings, each checked against the ones before.
DENSE = {
    "private_key": "-----BEGIN RSA PRIVATE KEY----- ",
    "anthropic_key": "sk-ant-api03-Zx8vQ2mN7pL4rT9wK3sB ",
    "openai_key": "sk-proj-4fT9xQ2mZ8vL1rN6kP3sW7yB ",
    "github_token": "ghp_" + "a1B2" * 9 + " ",
    "slack_token": "xoxb-123456789012-abcdefABCDEF ",
    "aws_access_key": "AKIAZ7QK3M5XR2WPLN4D ",
    "openrouter_key": "sk-or-v1-" + "0a1b2c3d" * 8 + " ",
    "gitlab_token": "glpat-Ab1Cd2Ef3Gh4Ij5Kl6Mn ",
    "stripe_key": "sk_live_51Hq2mN7pL4rT9wK3sB ",
    "twilio_key": "SK" + "0a1b2c3d" * 4 + " ",
    "aws_secret_key": "aws_secret_access_key=Zx8vQ2mN7pL4rT9wK3sBq1W2e3R4t5Y6u7I8o9P0 ",
    "huggingface_token": "hf_AbCdEfGhIjKlMnOpQrStUvWxYzAbCdEfGh ",
    "npm_token": "npm_" + "a1B2c3" * 6 + " ",
    "pypi_token": "pypi-AgEIcHlwaS5vcmc" + "Ab1_" * 13 + " ",
    "url_password": "postgres://app:Hunter2Secret@db.internal/app ",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.Zx8vQ2mN7pL4rT9wK3sB ",
    "high_entropy": "Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op8Qr9St0UvWx ",
    "google_api_key": "AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q ",
    "bearer_token": "Bearer eyJhbGciOiJIUzI1NiJ9.abc123 ",
    "secret_assignment": 'api_key = "Zx8vQ2mN7pL4rT9wK3sB" ',
    "iban": "GB82WEST12345698765432 ",
    "card_number": "4111 1111 1111 1111 ",
    "email": "a@b.co ",
    "phone": "+33 6 12 34 56 78 415-555-2671 ",
}


def text(shape: tuple[str, str], size: int) -> str:
    head, unit = shape
    return head + unit * ((size - len(head)) // len(unit))


def cpu_seconds(scan, text: str, runs: int, enough: float = math.inf) -> float:
    """The least CPU time of runs scans of text, stopping once one took enough. The process's
    time, not the wall clock's, so that other work on the machine counts little."""
    best = math.inf
    for _ in range(runs):
        gc.disable()  # a collection falling in one run and not another is no measure either
        try:
            start = time.process_time()
            scan(text)
            best = min(best, time.process_time() - start)
        finally:
            gc.enable()
        if best >= enough:
            break
    return best


HEX64 = "0a1b2c3d4e5f6a7b" * 4
JWT = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.Zx8vQ2mN7pL4rT9wK3sB"

# (kind, a line holding one, the value it reports, a line that looks like one and is not).
# Written here, not read from secrets.RULES: the table under test cannot vouch for itself.
RULE_CASES = [
    ("private_key", "-----BEGIN OPENSSH PRIVATE KEY-----", "-----BEGIN OPENSSH PRIVATE KEY-----",
     "-----BEGIN PUBLIC KEY-----"),
    ("anthropic_key", "ANTHROPIC_API_KEY=sk-ant-api03-Zx8vQ2mN7pL4rT9wK3sB", "sk-ant-api03-Zx8vQ2mN7pL4rT9wK3sB",
     "key sk-ant-api03-Zx8vQ2m"),
    ("openrouter_key", f"OPENROUTER_API_KEY=sk-or-v1-{HEX64}", f"sk-or-v1-{HEX64}",
     f"key sk-or-v1-{HEX64[:-1]} here"),
    ("openai_key", "export OPENAI_API_KEY=sk-proj-4fT9xQ2mZ8vL1rN6kP3sW7yB", "sk-proj-4fT9xQ2mZ8vL1rN6kP3sW7yB",
     "key sk-4fT9xQ2mZ8vL1rN6kP3"),
    ("github_token", "GH_TOKEN=ghp_" + "a1B2" * 9, "ghp_" + "a1B2" * 9, "ref ghp_" + "a1B2" * 7 + "a"),
    ("gitlab_token", "token glpat-Ab1Cd2Ef3Gh4Ij5Kl6Mn", "glpat-Ab1Cd2Ef3Gh4Ij5Kl6Mn", "see glpat-Ab1Cd2Ef3Gh4Ij5Kl6"),
    ("slack_token", "SLACK_BOT_TOKEN=xoxb-123456789012-Ab1Cd2Ef3Gh4", "xoxb-123456789012-Ab1Cd2Ef3Gh4",
     "prefix xoxb-12345678"),
    ("slack_token", "POST https://hooks.slack.com/services/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",
     "hooks.slack.com/services/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", "docs at https://hooks.slack.com/"),
    ("stripe_key", "STRIPE_SECRET_KEY=sk_live_51Hq2mN7pL4rT9wK3sBxY", "sk_live_51Hq2mN7pL4rT9wK3sBxY",
     "publishable pk_live_51Hq2mN7pL4rT9wK3sBxY"),
    ("twilio_key", "TWILIO_API_KEY=SK" + HEX64[:32], "SK" + HEX64[:32], "sid SK" + HEX64[:31]),
    ("aws_access_key", "aws_access_key_id = AKIAZ7QK3M5XR2WPLN4D", "AKIAZ7QK3M5XR2WPLN4D", "id AKIAZ7QK3M5XR2WPLN4"),
    ("aws_secret_key", "aws_secret_access_key = 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",
     "Zx8vQ2mN7pL4rT9wK3sBq1W2e3R4t5Y6u/+8o9P0", "Zx8vQ2mN7pL4rT9wK3sBq1W2e3R4t5Y6u/+8o9P0 alone, with no name"),
    ("google_api_key", "key=AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q", "AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q",
     "key AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6"),
    ("huggingface_token", "HF_TOKEN=hf_AbCdEfGhIjKlMnOpQrStUvWxYzAbCdEfGh", "hf_AbCdEfGhIjKlMnOpQrStUvWxYzAbCdEfGh",
     "call hf_AbCdEfGhIjKlMnOpQrStUvWxYzAbCdEf1h"),
    ("npm_token", "NPM_TOKEN=npm_" + "a1B2c3" * 6, "npm_" + "a1B2c3" * 6, "npm_" + "a1B2c3" * 5 + "a1B2c"),
    ("npm_token", "//registry.npmjs.org/:_authToken=Zx8vQ2mN7pL4rT9wK3sB", "Zx8vQ2mN7pL4rT9wK3sB",
     "//registry.npmjs.org/:_authToken=${NPM_TOKEN}"),
    ("pypi_token", "twine pypi-AgEIcHlwaS5vcmc" + "Ab1Cd2Ef3G_-" * 4, "pypi-AgEIcHlwaS5vcmc" + "Ab1Cd2Ef3G_-" * 4,
     "twine pypi-AgEIcHlwaS5vcmc" + "Ab1Cd2Ef3G_-" * 2),
    ("url_password", "DATABASE_URL=postgres://app:Hunter2Secret@db.internal:5432/app", "Hunter2Secret",
     "DATABASE_URL=postgres://db.internal:5432/app"),
    ("bearer_token", "Authorization: Bearer abc123def456ghi789jkl", "abc123def456ghi789jkl",
     "Authorization: Bearer abcdefghijklmnopqrstu"),
    ("jwt", f"id_token: {JWT}", JWT, "id " + JWT.rpartition(".")[0]),
    ("secret_assignment", 'config = {"client_secret": "h7Fq2LmX9pRt4VwZ"}', "h7Fq2LmX9pRt4VwZ",
     'config = {"client_secret": "correct-horse-battery"}'),
    ("high_entropy", "blob Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op8Qr9St0UvWx", "Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op8Qr9St0UvWx",
     "commit 3f2a9c1b7e4d8f6a0b5c2e9d1f7a3b8c4e6d2f0a"),
    ("iban", "IBAN DE89 3704 0044 0532 0130 00", "DE89 3704 0044 0532 0130 00", "IBAN FR14 2004 1010 0505 0001 3M02 607"),
    ("card_number", "card 5500-0000-0000-0004", "5500-0000-0000-0004", "card 5500-0000-0000-0005"),
    ("email", "mail jane.doe@mail.example.org", "jane.doe@mail.example.org", "sender alice@muc said hi"),
    ("phone", "call +33 6 12 34 56 78", "+33 6 12 34 56 78", "call +33 6 12"),
    ("phone", "call 415-555-2671", "415-555-2671", "released on 2025-06-01"),
]  # fmt: skip


# The values the fixtures plant (tests/fixtures/<format>/secrets_in_every_block.*,
# claude_code/secrets_appended.jsonl, codex/secrets_in_arguments_and_output.jsonl), for the
# index's findings and the transcript's masks alike.
ANTHROPIC = "sk-ant-api03-Zx8vQ2mN7pL4rT9wK3sBq7Hd"
GHP = "ghp_R4nd0mT0k3nV4lu3F0rT3st1ngAbCdEf12"
AWS_KEY = "AKIAZ7Q4RT2MPL9WX3KD"
NPM_CLAUDE = "npm_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
STRIPE = "sk_live_51HxQk2eZvKYlo2C8aB3dE9fG"
SLACK = "xoxb-2048163201-4096327702-Qm8vR2nT5wK9pL3x"
GHS = "ghs_Q7mZ2vK9pL4rT8wX3nB6cD1fG5hJ0kS2aE"
NPM = "npm_Q7mZ2vK9pL4rT8wX3nB6cD1fG5hJ0kS2aE4y"
PAT = "github_pat_11ABCDEFG0aBcDeFgHiJkLmN_oPqRsTuVwXyZ0123456789"
HF = "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"
AWS_ID = "AKIAQ7MZ2VK9PL4RT8WX"
ANTHROPIC_PI = "sk-ant-api03-Q7mZ2vK9pL4rT8wX3nB6cD1f"
