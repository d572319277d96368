"""How long a redaction review and a redacted copy of a session's entries take, by size: a
measurement, not a test (tests/test_redaction.py holds the behaviour).

Entries are the demo's Claude Code transcripts, read by their reader and repeated to each
count: review_values over every string of them, every rule over every text (what
/sessions/<id>/redact/ did on each request until 6 December 2026), then with the credential
rules only over the texts the index's prefilter passes (index.findings.may_hold_secret, what
the review does now, once per version of a session), then Redaction.value over each entry
with every value found checked (what a redacted export does before rendering). CPU seconds
of this process, the best of --repeat.

    .venv/bin/python bench/bench_redaction.py
    .venv/bin/python bench/bench_redaction.py --counts 1000,10000 --repeat 3
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sessionviewer import readers, redaction  # noqa: E402
from sessionviewer.index.findings import may_hold_secret  # noqa: E402


def demo_entries() -> list[readers.Entry]:
    entries = []
    for path in sorted((ROOT / "demo" / "claude").rglob("*.jsonl")):
        entries += readers.read_session(path, "claude_code").entries
    return entries


def best(call, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.process_time()
        call()
        times.append(time.process_time() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--counts", default="1000,10000")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    base = demo_entries()
    print(f"{'entries':>8} {'MB of text':>10} {'values':>7} {'review s':>9} {'guarded s':>9} {'redact s':>9}")
    for count in (int(n) for n in args.counts.split(",")):
        entries = (base * (count // len(base) + 1))[:count]
        texts = [text for entry in entries for text in redaction.strings_of(entry)]
        size = sum(len(text) for text in texts) / 1e6
        found = redaction.review_values(texts)
        chosen = redaction.Redaction({c.value: c.kind for c in found})
        guarded = redaction.review_values(texts, may_hold_credential=may_hold_secret)
        assert guarded == found, "the prefilter dropped a value"
        review = best(lambda texts=texts: redaction.review_values(texts), args.repeat)
        quick = best(
            lambda texts=texts: redaction.review_values(texts, may_hold_credential=may_hold_secret),
            args.repeat,
        )
        redact = best(lambda entries=entries, chosen=chosen: [chosen.value(e) for e in entries], args.repeat)
        print(f"{count:>8} {size:>10.1f} {len(found):>7} {review:>9.2f} {quick:>9.2f} {redact:>9.2f}")


if __name__ == "__main__":
    main()
