"""What tokens cost: genai-prices' tables, with the data folder's prices.toml over them.

The indexer folds each session's usage into lines of tokens by model, provider, day and
context size (fold.py); this module prices those lines, so a session's cost is the sum of
its lines' tokens x rates, and the page that explains a cost shows exactly that sum.

Rates are USD per million tokens, by kind: input (not cached), output, cache read, and
cache writes kept 5 minutes or 1 hour (Claude Code writes both). A model neither table
knows has no price: it is shown as "no price", never as $0.
"""

from __future__ import annotations

import functools
import os
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, time
from decimal import Decimal, InvalidOperation
from pathlib import Path

import orjson

KINDS = ("input", "output", "cache_read", "cache_write_5m", "cache_write_1h")
KIND_LABELS = {
    "input": "input",
    "output": "output",
    "cache_read": "cache read",
    "cache_write_5m": "cache write, 5 min",
    "cache_write_1h": "cache write, 1 h",
}
# Where a table gives no rate for a cache kind: Anthropic's rule, as a multiple of input.
ASSUMED = {"cache_write_5m": Decimal("1.25"), "cache_write_1h": Decimal("2"), "cache_read": Decimal("1")}
# genai-prices' tier thresholds (input tokens of one request): fold.context_class puts
# each turn in the largest it passes, so a line's turns all pay one tier's rates.
THRESHOLDS = (32_000, 100_000, 128_000, 199_999, 200_000, 256_000, 272_000, 512_000, 524_288)
PRICES_FILE = "prices.toml"
# The file's rate names: the kinds, and "cache_write" for 5-minute writes.
_FILE_KEYS = {"cache_write": "cache_write_5m", **{kind: kind for kind in KINDS}}
_MILLION = Decimal(1_000_000)


class PricesFileError(ValueError):
    """prices.toml could not be read: the message says where and why."""


@dataclass(frozen=True)
class Rates:
    """The rates one model's turns paid: USD per million tokens by kind, where they come from,
    and the kinds whose rate was assumed from the input rate (ASSUMED)."""

    per_mtok: dict[str, Decimal]
    source: str
    assumed: tuple[str, ...] = ()

    def cost(self, tokens: dict) -> Decimal:
        return (
            sum((Decimal(int(tokens.get(k) or 0)) * self.per_mtok[k] for k in KINDS), Decimal(0)) / _MILLION
        )


def context_class(total_input: int) -> int:
    """The largest tier threshold a request's input passes (0: none)."""
    passed = [t for t in THRESHOLDS if total_input > t]
    return passed[-1] if passed else 0


@functools.cache
def library_version() -> str:
    # Read once a process: importlib.metadata parses the package's METADATA with the e-mail
    # parser, which cost a cold index of 6,000 sessions 1.8 s when asked per rate looked up.
    # Imported here: with the e-mail package it took a fifth of the reading worker's start-up,
    # which never asks (bench/README.md).
    from importlib.metadata import version

    return f"genai-prices {version('genai-prices')}"


@functools.cache
def _overrides(path: str) -> dict[str, Rates]:
    file = Path(path)
    if not file.is_file():
        return {}
    try:
        data = tomllib.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise PricesFileError(f"{file}: {error}") from error
    models = data.get("models", {})
    if not isinstance(models, dict):
        raise PricesFileError(f"{file}: [models] must be a table of models")
    found = {}
    for name, given in models.items():
        if not isinstance(given, dict) or "input" not in given or "output" not in given:
            raise PricesFileError(f"{file}: model {name!r} needs at least input and output rates")
        rates: dict[str, Decimal] = {}
        for key, value in given.items():
            if key not in _FILE_KEYS:
                raise PricesFileError(f"{file}: model {name!r}: unknown rate {key!r}")
            try:
                rate = Decimal(str(value))
            except InvalidOperation:
                rate = Decimal(-1)
            if isinstance(value, bool) or not rate.is_finite() or rate < 0:
                raise PricesFileError(f"{file}: model {name!r}: {key} must be a number of dollars, 0 or more")
            rates[_FILE_KEYS[key]] = rate
        found[name.lower()] = _complete(rates, str(file))
    return found


def _complete(rates: dict[str, Decimal], source: str) -> Rates:
    assumed = tuple(kind for kind in ASSUMED if rates.get(kind) is None)
    for kind in assumed:
        rates[kind] = rates["input"] * ASSUMED[kind]
    return Rates({kind: rates[kind] for kind in KINDS}, source, assumed)


def rates_for(model: str, provider: str = "", day: str = "", context: int = 0) -> Rates | None:
    """The rates of one model's turns on a day ("YYYY-MM-DD", "" for today) with this much
    input per request (context_class); None when no table has the model."""
    from django.conf import settings

    # Asked for every usage line of every session: the data folder's name is the key, not
    # the file's path, which costs a Path made and joined each time.
    return _rates_for(str(settings.DATA_DIR), model, provider, day, context)


@functools.cache
def _rates_for(data_dir: str, model: str, provider: str, day: str, context: int) -> Rates | None:
    overrides = _overrides(str(Path(data_dir) / PRICES_FILE))
    name = model.lower()
    for key in (f"{provider.lower()}/{name}" if provider else None, name):
        if key and key in overrides:
            return overrides[key]
    if not day:  # today's prices: not kept, today ends
        return _library_rates(name, provider.lower(), day, context)
    kept = _kept_rates()
    key = line_key(name, provider.lower(), day, context)
    if key not in kept.rates:
        kept.rates[key] = _to_json(_library_rates(name, provider.lower(), day, context))
        kept.changed = True
    return _from_json(kept.rates[key])


def _library_rates(name: str, provider: str, day: str, context: int) -> Rates | None:
    found = _library_model(name, provider)
    if found is None:
        return None
    provider_id, info = found
    when = datetime.combine(date.fromisoformat(day), time(12), UTC) if day else datetime.now(UTC)
    prices = info.get_prices(when)
    rates: dict[str, Decimal] = {}
    for kind, key in (
        ("input", "input_mtok"),
        ("output", "output_mtok"),
        ("cache_read", "cache_read_mtok"),
        ("cache_write_5m", "cache_write_mtok"),
        ("cache_write_1h", "cache_write_1h_mtok"),
    ):
        rates[kind] = _tier_rate(getattr(prices, key, None), context)
    if rates["input"] is None or rates["output"] is None:
        return None
    return _complete(rates, f"{library_version()}: {provider_id} {info.id}")


@dataclass
class _Kept:
    """The library's rates looked up so far, kept in the data folder per library version:
    loading genai-prices' tables (pydantic models of every provider's prices) takes about
    half a second, as long as a cold index of a small history took in all. A (model,
    provider, day, context) has the same rates for as long as the version is the same."""

    path: Path | None
    rates: dict[str, dict | None]
    changed: bool = False


_kept: _Kept | None = None


def _kept_rates() -> _Kept:
    global _kept
    if _kept is None:
        path = rates_file()
        try:
            rates = orjson.loads(path.read_bytes()) if path is not None else {}
        except (OSError, orjson.JSONDecodeError):
            rates = {}  # none yet, or unreadable: looked up again, and written anew
        _kept = _Kept(path, rates if isinstance(rates, dict) else {})
    return _kept


def rates_file() -> Path | None:
    """Where the library's rates are kept (None: not kept, outside a configured project)."""
    from django.conf import settings

    if not settings.configured:
        return None
    name = library_version().replace(" ", "-")
    return Path(settings.DATA_DIR) / "cache" / f"{name}.json"


def keep_rates() -> None:
    """Write the rates looked up since they were read, for the next process: after a pass."""
    kept = _kept
    if kept is None or not kept.changed or kept.path is None:
        return
    try:
        kept.path.parent.mkdir(parents=True, exist_ok=True)
        temporary = kept.path.with_name(f".{kept.path.name}.{os.getpid()}")
        temporary.write_bytes(orjson.dumps(kept.rates))
        os.replace(temporary, kept.path)
        kept.changed = False
    except OSError:
        pass  # a read-only data folder: the next process looks them up again


def _to_json(rates: Rates | None) -> dict | None:
    if rates is None:
        return None
    return {
        "per_mtok": {k: str(v) for k, v in rates.per_mtok.items()},
        "source": rates.source,
        "assumed": rates.assumed,
    }


def _from_json(kept: dict | None) -> Rates | None:
    if kept is None:
        return None
    return Rates({k: Decimal(v) for k, v in kept["per_mtok"].items()}, kept["source"], tuple(kept["assumed"]))


def _tier_rate(price, context: int) -> Decimal | None:
    if price is None or isinstance(price, Decimal):
        return price
    rate = price.base  # TieredPrices: every token pays the rate of the highest tier passed
    for tier in price.tiers:
        # context is the largest threshold passed: it passed tier.start when at least as large
        if context and (context >= tier.start if tier.start in THRESHOLDS else context > tier.start):
            rate = tier.price
    return rate


def load_library() -> None:
    """Load genai-prices' tables now rather than at the first turn whose rates are not kept:
    a web worker's first transcript with a new (model, day) took about 0.2 s more for it,
    and held its other threads meanwhile (sessionviewer/wsgi.py warms a worker with this)."""
    _snapshot()
    library_version()


def _snapshot():
    """genai-prices' tables (imported here: the reading worker never asks for them)."""
    from genai_prices import data_snapshot

    return data_snapshot.get_snapshot()


@functools.cache  # a model is looked up once, whatever the days and contexts of its lines
def _library_model(name: str, provider: str):
    snapshot = _snapshot()
    tries = [(name, provider or None), (name, None)]
    if "/" in name:  # "anthropic/claude-sonnet-4": the model after its router's prefix
        tries.append((name.rsplit("/", 1)[1], None))
    for ref, provider_id in tries:
        try:
            found, info = snapshot.find_provider_model(ref, None, provider_id, None)
        except LookupError:
            continue
        return found.id, info
    return None


def line_key(model: str, provider: str, day: str, context: int) -> str:
    return "\t".join((model, provider, day, str(context)))


def split_key(key: str) -> tuple[str, str, str, int]:
    model, provider, day, context = key.split("\t")
    return model, provider, day, int(context)


def line_tokens(tokens: dict) -> int:
    return sum(int(tokens.get(k) or 0) for k in KINDS)


def _priced(lines: dict) -> Iterator[tuple[str, str, str, int, dict, int, Rates | None, Decimal | None]]:
    """Each usage line that holds tokens, in key order: its model, provider, day and context,
    its tokens by kind and their count, its rates and its cost (None: no table prices it)."""
    for key, tokens in sorted(lines.items()):
        count = line_tokens(tokens)
        if count:
            model, provider, day, context = split_key(key)
            rates = rates_for(model, provider, day, context)
            yield model, provider, day, context, tokens, count, rates, rates.cost(tokens) if rates else None


def _costliest_first(cost: float | None, tokens: int, model: str) -> tuple:
    return -(cost or 0), -tokens, model


def price_lines(lines: dict) -> dict:
    """A session's usage lines (fold.py), priced: per model, the tokens of each kind, the
    rates they paid and the cost; the total cost of what has a price (None: nothing has),
    and the tokens no table prices."""
    by_model: dict[str, dict] = {}
    total: Decimal | None = None
    unpriced = 0
    for model, provider, day, context, tokens, count, rates, cost in _priced(lines):
        row = by_model.setdefault(model, {"model": model, "cost": None, "tokens": 0, "turns": 0, "lines": []})
        row["lines"].append(
            {
                "provider": provider,
                "day": day,
                "context": context,
                "turns": int(tokens.get("turns") or 0),
                "tokens": {k: int(tokens.get(k) or 0) for k in KINDS},
                "rates": {k: float(v) for k, v in rates.per_mtok.items()} if rates else None,
                "assumed": list(rates.assumed) if rates else [],
                "source": rates.source if rates else "",
                "cost": float(cost) if cost is not None else None,
            }
        )
        row["tokens"] += count
        row["turns"] += int(tokens.get("turns") or 0)
        if cost is None:
            unpriced += count
        else:
            row["cost"] = (row["cost"] or Decimal(0)) + cost
            total = (total or Decimal(0)) + cost
    for row in by_model.values():
        row["cost"] = float(row["cost"]) if row["cost"] is not None else None
    return {
        "cost": float(total) if total is not None else None,
        "unpriced_tokens": unpriced,
        "models": sorted(
            by_model.values(), key=lambda r: _costliest_first(r["cost"], r["tokens"], r["model"])
        ),
    }


def price_totals(lines: dict) -> tuple[float | None, int, dict[str, dict]]:
    """What the index stores of price_lines(lines): the cost, the unpriced tokens, and each
    model's tokens and cost, in the same order and to the same figures. The indexer prices
    every session it writes, and the lines' detail (rates, assumed kinds, a dict per line)
    cost a cold index of thousands of small sessions twice what the sums did."""
    by_model: dict[str, list] = {}  # model -> [tokens, cost]
    total: Decimal | None = None
    unpriced = 0
    for model, *_, count, _rates, cost in _priced(lines):
        row = by_model.setdefault(model, [0, None])
        row[0] += count
        if cost is None:
            unpriced += count
        else:
            row[1] = (row[1] or Decimal(0)) + cost
            total = (total or Decimal(0)) + cost
    models = {
        model: {"tokens": tokens, "cost": float(cost) if cost is not None else None}
        for model, (tokens, cost) in by_model.items()
    }
    order = sorted(
        models, key=lambda model: _costliest_first(models[model]["cost"], models[model]["tokens"], model)
    )
    return float(total) if total is not None else None, unpriced, {model: models[model] for model in order}


def clear_cache() -> None:
    """Forget the rates read: after prices.toml changed (tests, manage.py reprice)."""
    global _kept
    _overrides.cache_clear()
    _rates_for.cache_clear()
    _library_model.cache_clear()
    _kept = None
