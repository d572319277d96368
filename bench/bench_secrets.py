"""How long the secrets scan takes on lines built to slow a backtracking regex: a measurement,
not a test (tests/test_workspaces_secrets.py holds the bounds).

Each shape of tests/secret_inputs.py is scanned as one line of each size by scan_secrets, as
the secrets report and the index scan a line: ADVERSARIAL (runs of one character, a pattern's
start repeated, a start then a long run) and DENSE (one finding of a kind, repeated). Then
normal memory text: the demo tree's memory files and transcripts, repeated to each size. CPU
seconds of this process, the best of --repeat; the last column is the largest size's time over
the smallest's (sizes 10 times apart: about 10 when linear, 100 when quadratic).

    .venv/bin/python bench/bench_secrets.py
    .venv/bin/python bench/bench_secrets.py --source /tmp/old    # the scan of another checkout
    .venv/bin/python bench/bench_secrets.py --only % --sizes 100000,200000
    .venv/bin/python bench/bench_secrets.py --high-entropy    # with SESSIONVIEWER_SECRETS_HIGH_ENTROPY's rule
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEMO_MEMORY = ROOT / "demo" / "fluux" / "memory"


def load_inputs():
    # By its path: the tests package would import the project, and --source picks which one.
    spec = importlib.util.spec_from_file_location("secret_inputs", ROOT / "tests" / "secret_inputs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def normal_text(size: int) -> str:
    """The demo memory tree's text files, one after another, repeated to about size characters."""
    files = sorted(p for p in DEMO_MEMORY.rglob("*") if p.suffix in (".md", ".jsonl") and p.is_file())
    corpus = "\n".join(p.read_text(encoding="utf-8") for p in files)
    return (corpus * (size // len(corpus) + 1))[:size]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, default=ROOT, help="the checkout whose scan to time")
    parser.add_argument("--sizes", default="100000,1000000", help="line sizes in characters")
    parser.add_argument("--repeat", type=int, default=2, help="runs of each scan, the best kept")
    parser.add_argument(
        "--limit",
        type=float,
        default=10.0,
        help="skip a size where the last time measured, scaled linearly, would pass this",
    )
    parser.add_argument("--only", action="append", help="shape names (repeatable); default: all")
    parser.add_argument("--high-entropy", action="store_true", help="also run the high-entropy rule")
    args = parser.parse_args()
    sys.path.insert(0, str(args.source.resolve()))
    from sessionviewer.workspaces.secrets import scan_secrets

    if args.high_entropy:  # a keyword an older checkout's scan_secrets would refuse
        scan_secrets = functools.partial(scan_secrets, high_entropy=True)

    inputs = load_inputs()
    sizes = [int(size) for size in args.sizes.split(",")]
    shapes = {
        **{
            name: lambda size, shape=shape: inputs.text(shape, size)
            for name, shape in inputs.ADVERSARIAL.items()
        },
        **{
            f"dense {kind}": lambda size, unit=unit: inputs.text(("", unit), size)
            for kind, unit in inputs.DENSE.items()
        },
        "normal memory text": normal_text,
    }
    if args.only:
        shapes = {name: make for name, make in shapes.items() if name in args.only}
    print(f"secrets scan of {args.source.resolve()}, CPU seconds, best of {args.repeat}")
    print(f"{'shape':<26}" + "".join(f"{size / 1000:>10,.0f} KB" for size in sizes) + "     ratio")
    for name, make in shapes.items():
        row, times, measured = f"{name:<26}", [], 0
        for size in sizes:
            if times and times[-1] * size / measured > args.limit:  # a quadratic scan: hours at 1 MB
                row += f"{'skipped':>13}"
                continue
            times.append(inputs.cpu_seconds(scan_secrets, make(size), args.repeat))
            row, measured = row + f"{times[-1]:>13.4f}", size
        if len(times) == len(sizes) > 1:
            row += f"{times[-1] / max(times[0], 1e-4):>10.1f}"
        print(row, flush=True)


if __name__ == "__main__":
    main()
