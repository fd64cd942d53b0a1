"""What tokens cost: USD per million tokens, by model.

Prices come from ``genai-prices``, pydantic's maintained table of the providers'
prices, as its installed version carries them (it never reaches the network unless
asked to, and liz does not ask). ``LIZ_PRICE_TABLE`` names a JSON file whose models
win over it::

    {"models": {"my-model": {"input": 0.5, "output": 1.5, "cached_input": 0.05}}}

``cached_input`` (tokens the prompt cache served) and ``cache_write`` (tokens written
to it) cost ``input`` when left out. A model of that file is matched by its name, then
by its name without a provider prefix (``openai/gpt-4o`` is ``gpt-4o``); genai-prices
matches names its own way (``gpt-4o-2024-08-06`` is ``gpt-4o``, ``o3-mini`` is not
``o3``). The keyless ``scripted`` model costs nothing. A model with no price has no
cost (None). A model's price is the one of its base tier: a long-context surcharge
is left out, since usage is summed before it is priced.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from liz.errors import UsageError

# The keyless scripted model (`liz serve --scripted`) costs nothing.
FREE_MODELS = frozenset({"scripted"})
# genai-prices' prices at this many tokens, scaled up: below any tier's threshold.
_SAMPLE = 1000


@dataclass(frozen=True)
class Price:
    """USD per million tokens."""

    input: float
    output: float
    cached_input: float | None = None  # None: the input price
    cache_write: float | None = None

    def cost(
        self,
        input_tokens: int,
        output_tokens: int,
        cached_input_tokens: int = 0,
        cache_write_tokens: int = 0,
    ) -> float:
        """What the tokens cost; ``input_tokens`` counts every input token, the cached
        and cache-written ones included."""
        plain = max(input_tokens - cached_input_tokens - cache_write_tokens, 0)
        cached = self.input if self.cached_input is None else self.cached_input
        written = self.input if self.cache_write is None else self.cache_write
        total = (
            plain * self.input
            + cached_input_tokens * cached
            + cache_write_tokens * written
            + output_tokens * self.output
        )
        return total / 1_000_000


@dataclass(frozen=True)
class PriceTable:
    """LIZ_PRICE_TABLE's models (``prices``) over genai-prices' table."""

    prices: dict[str, Price] = field(default_factory=dict)
    _found: dict[str, Price | None] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def load(cls, path: str | Path | None = None) -> PriceTable:
        """genai-prices' table, with the models of ``path`` (LIZ_PRICE_TABLE) over it."""
        return cls(_read(Path(path)) if path else {})

    def price(self, model: str) -> Price | None:
        if model not in self._found:
            self._found[model] = self._look_up(model)
        return self._found[model]

    def cost(
        self,
        model: str,
        input_tokens: int,
        output_tokens: int,
        cached_input_tokens: int = 0,
        cache_write_tokens: int = 0,
    ) -> float | None:
        price = self.price(model)
        if price is None:
            return None
        return price.cost(input_tokens, output_tokens, cached_input_tokens, cache_write_tokens)

    def _look_up(self, model: str) -> Price | None:
        bare = model.rsplit("/", 1)[-1]
        for name in (model, bare):
            if name in self.prices:
                return self.prices[name]
        if model in FREE_MODELS:
            return Price(0.0, 0.0)
        return _genai_price(model)


def _genai_price(model: str) -> Price | None:
    """The model's price in genai-prices' table: by the provider its name implies; an
    OpenRouter name (``vendor/model``) at OpenRouter, then at that vendor; else OpenAI's
    (its embeddings models are known only there)."""
    if "/" in model:
        vendor, bare = model.split("/", 1)
        places: list[tuple[str, str | None]] = [(model, "openrouter"), (bare, vendor)]
    else:
        places = [(model, None), (model, "openai")]
    for name, provider in places:
        try:
            return _genai_price_at(name, provider)
        except LookupError:
            continue
    return None


def _genai_price_at(model: str, provider: str | None) -> Price:
    from genai_prices import Usage, calc_price

    def per_million(usage: Usage, *, output: bool = False) -> float:
        found = calc_price(usage, model, provider_id=provider)
        return float(found.output_price if output else found.input_price) * 1_000_000 / _SAMPLE

    return Price(
        input=per_million(Usage(input_tokens=_SAMPLE)),
        output=per_million(Usage(output_tokens=_SAMPLE), output=True),
        cached_input=per_million(Usage(input_tokens=_SAMPLE, cache_read_tokens=_SAMPLE)),
        cache_write=per_million(Usage(input_tokens=_SAMPLE, cache_write_tokens=_SAMPLE)),
    )


def _read(path: Path) -> dict[str, Price]:
    fix = 'it should be {"models": {"model-name": {"input": 0.5, "output": 1.5}}}'
    try:
        data = json.loads(path.read_text())
    except OSError as exc:
        raise UsageError(f"LIZ_PRICE_TABLE: cannot read {path}: {exc.strerror}") from None
    except ValueError as exc:
        raise UsageError(f"LIZ_PRICE_TABLE: {path} is not JSON ({exc}); {fix}") from None
    models = data.get("models") if isinstance(data, dict) else None
    if not isinstance(models, dict):
        raise UsageError(f"LIZ_PRICE_TABLE: {path} has no 'models' object; {fix}")
    prices: dict[str, Price] = {}
    for name, entry in models.items():
        try:
            prices[name] = Price(
                float(entry["input"]),
                float(entry.get("output", 0.0)),
                _optional(entry.get("cached_input")),
                _optional(entry.get("cache_write")),
            )
        except (TypeError, KeyError, ValueError, AttributeError):
            raise UsageError(
                f"LIZ_PRICE_TABLE: {path}: model {name!r} needs numbers 'input' and 'output' "
                "(and, if given, 'cached_input' and 'cache_write')"
            ) from None
    return prices


def _optional(value: object) -> float | None:
    return None if value is None else float(value)  # type: ignore[arg-type]
