"""Prices (prices.py): rates from genai-prices and prices.toml, and usage lines priced."""

from decimal import Decimal

import pytest
from genai_prices import Usage, calc_price

from sessionviewer import prices


@pytest.fixture(autouse=True)
def _prices_read_afresh(settings, tmp_path):
    settings.DATA_DIR = tmp_path
    prices.clear_cache()
    yield
    prices.clear_cache()


def line(model="claude-opus-4-6", provider="", day="2026-02-10", context=0, **tokens):
    return {prices.line_key(model, provider, day, context): {"turns": 1, **tokens}}


def test_claude_names_as_written_in_session_files_have_rates():
    rates = prices.rates_for("claude-opus-4-6")
    assert rates.per_mtok == {
        "input": Decimal(5),
        "output": Decimal(25),
        "cache_read": Decimal("0.5"),
        "cache_write_5m": Decimal("6.25"),
        "cache_write_1h": Decimal(10),
    }
    assert prices.rates_for("claude-haiku-4-5-20251001").per_mtok["input"] == Decimal(1)


def test_one_hour_cache_writes_cost_twice_the_input_rate_and_five_minute_ones_a_quarter_more():
    rates = prices.rates_for("claude-sonnet-4-5-20250929")
    assert rates.per_mtok["cache_write_1h"] == 2 * rates.per_mtok["input"]
    assert rates.per_mtok["cache_write_5m"] == Decimal("1.25") * rates.per_mtok["input"]


def test_a_priced_line_costs_what_genai_prices_computes_for_the_same_turn():
    tokens = {"input": 3, "output": 500, "cache_read": 20000, "cache_write_5m": 4000, "cache_write_1h": 6000}
    costing = prices.price_lines(line(**tokens))
    usage = Usage(
        input_tokens=3 + 20000 + 10000,  # genai-prices counts cached input in input_tokens
        output_tokens=500,
        cache_read_tokens=20000,
        cache_write_tokens=10000,
        cache_write_1h_tokens=6000,
    )
    assert Decimal(str(costing["cost"])) == calc_price(usage, "claude-opus-4-6").total_price
    assert costing["cost"] == pytest.approx(0.107515)


def test_a_model_without_a_price_has_no_cost_not_zero():
    costing = prices.price_lines(line(model="claude-fable-9", input=100, output=50))
    assert costing["cost"] is None
    assert costing["unpriced_tokens"] == 150
    assert costing["models"][0]["lines"][0]["rates"] is None


def test_a_provider_prefixed_name_is_priced_as_the_model_after_the_prefix():
    assert prices.rates_for("anthropic/claude-sonnet-4") is not None


def test_requests_past_a_tier_threshold_pay_the_tier_rate():
    small = prices.rates_for("claude-sonnet-4-5", context=prices.context_class(150_000))
    large = prices.rates_for("claude-sonnet-4-5", context=prices.context_class(250_000))
    assert large.per_mtok["input"] > small.per_mtok["input"]


def test_the_rates_of_the_turns_day_apply_when_a_price_changed():
    # OpenAI cut o3's input price from $10 to $2 on 2025-06-10.
    before, after = (prices.rates_for("o3", day=d).per_mtok["input"] for d in ("2025-06-01", "2025-07-01"))
    assert (before, after) == (Decimal(10), Decimal(2))


def test_the_prices_file_adds_a_model_and_assumes_its_cache_rates_from_input(tmp_path):
    (tmp_path / "prices.toml").write_text('[models."local-llama"]\ninput = 0.5\noutput = 1.5\n')
    rates = prices.rates_for("local-llama")
    assert rates.per_mtok["cache_write_1h"] == Decimal(1)
    assert set(rates.assumed) == {"cache_read", "cache_write_5m", "cache_write_1h"}
    assert rates.source.endswith("prices.toml")


def test_the_prices_file_overrides_a_known_model(tmp_path):
    (tmp_path / "prices.toml").write_text(
        '[models."claude-opus-4-6"]\ninput = 1\noutput = 2\ncache_read = 0\n'
    )
    assert prices.price_lines(line(input=1_000_000, cache_read=5))["cost"] == 1.0


@pytest.mark.parametrize(
    "text",
    [
        '[models."m"]\ninput = 1\n',
        '[models."m"]\ninput = -1\noutput = 1\n',
        '[models."m"]\ninput = 1\noutput = 1\nspeed = 2\n',
        "[models\n",
    ],
)
def test_a_bad_prices_file_is_an_error_naming_the_file(tmp_path, text):
    (tmp_path / "prices.toml").write_text(text)
    with pytest.raises(prices.PricesFileError, match="prices.toml"):
        prices.rates_for("m")


def test_the_library_s_rates_are_kept_in_the_data_folder_and_read_back_without_it(settings, monkeypatch):
    first = prices.rates_for("claude-opus-4-6", day="2026-02-10")
    prices.keep_rates()
    kept = settings.DATA_DIR / "cache" / f"{prices.library_version().replace(' ', '-')}.json"
    assert kept.is_file()
    prices.clear_cache()  # as a new process

    def not_asked(*args):
        raise AssertionError("the library was asked again")

    monkeypatch.setattr(prices, "_library_rates", not_asked)
    again = prices.rates_for("claude-opus-4-6", day="2026-02-10")
    assert (again.per_mtok, again.source, again.assumed) == (first.per_mtok, first.source, first.assumed)


def test_a_model_without_a_price_is_kept_as_such(settings, monkeypatch):
    assert prices.rates_for("local-llama", day="2026-02-10") is None
    prices.keep_rates()
    prices.clear_cache()
    monkeypatch.setattr(prices, "_library_rates", lambda *args: pytest.fail("asked again"))
    assert prices.rates_for("local-llama", day="2026-02-10") is None


def test_today_s_rates_are_never_kept_nor_is_a_damaged_file_believed(settings):
    prices.rates_for("claude-opus-4-6")  # no day: today's prices, which change tomorrow
    prices.keep_rates()
    kept = settings.DATA_DIR / "cache" / f"{prices.library_version().replace(' ', '-')}.json"
    assert not kept.exists()
    kept.parent.mkdir(parents=True)
    kept.write_text("{not json")
    prices.clear_cache()
    assert prices.rates_for("claude-opus-4-6", day="2026-02-10").per_mtok["input"] == Decimal(5)
    prices.keep_rates()
    assert "claude-opus-4-6" in kept.read_text()  # written anew


def test_prices_toml_goes_before_the_kept_rates(settings):
    prices.rates_for("claude-opus-4-6", day="2026-02-10")
    prices.keep_rates()
    (settings.DATA_DIR / "prices.toml").write_text('[models."claude-opus-4-6"]\ninput = 1\noutput = 2\n')
    prices.clear_cache()
    assert prices.rates_for("claude-opus-4-6", day="2026-02-10").per_mtok["input"] == Decimal(1)


def test_price_totals_are_the_figures_price_lines_gives_in_its_order():
    lines = {
        **line(input=1_000, output=200, turns=2),
        **line(day="2026-02-11", cache_read=50_000, cache_write_1h=300),
        **line(model="claude-haiku-4-5-20251001", input=9_000, output=9_000),
        **line(model="claude-fable-9", input=100, output=50),
        **line(model="claude-sonnet-4-5-20250929", context=200_000),  # no tokens: left out
    }
    costing = prices.price_lines(lines)
    cost, unpriced, models = prices.price_totals(lines)
    assert (cost, unpriced) == (costing["cost"], costing["unpriced_tokens"])
    assert list(models.items()) == [
        (m["model"], {"tokens": m["tokens"], "cost": m["cost"]}) for m in costing["models"]
    ]
    assert prices.price_totals({}) == (None, 0, {})
