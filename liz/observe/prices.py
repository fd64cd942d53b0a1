"""What tokens cost: a price table (USD per million tokens, by model).

The default is ``prices.json`` beside this module (common OpenAI models; check them
against your provider's page). ``LIZ_PRICE_TABLE`` names a JSON file of the same
shape, ``{"models": {"my-model": {"input": 0.5, "output": 1.5}}}``, whose models are
added to the default ones and win over them. A model is matched by its name, then
without a provider prefix (``openai/gpt-4o``), then by the longest name it starts with
(``gpt-4o-2024-08-06`` is ``gpt-4o``). A model with no price has no cost (None).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from liz.errors import UsageError

DEFAULT_TABLE = Path(__file__).with_name("prices.json")


@dataclass(frozen=True)
class Price:
    input: float  # per million tokens
    output: float


@dataclass(frozen=True)
class PriceTable:
    prices: dict[str, Price]

    @classmethod
    def load(cls, path: str | Path | None = None) -> PriceTable:
        """The default table, with the models of ``path`` (LIZ_PRICE_TABLE) over it."""
        prices = _read(DEFAULT_TABLE)
        if path:
            prices.update(_read(Path(path)))
        return cls(prices)

    def price(self, model: str) -> Price | None:
        for name in (model, model.rsplit("/", 1)[-1]):
            if name in self.prices:
                return self.prices[name]
        bare = model.rsplit("/", 1)[-1]
        starts = [name for name in self.prices if bare.startswith(name)]
        return self.prices[max(starts, key=len)] if starts else None

    def cost(self, model: str, input_tokens: int, output_tokens: int) -> float | None:
        price = self.price(model)
        if price is None:
            return None
        return (input_tokens * price.input + output_tokens * price.output) / 1_000_000


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
            prices[name] = Price(float(entry["input"]), float(entry.get("output", 0.0)))
        except (TypeError, KeyError, ValueError):
            raise UsageError(
                f"LIZ_PRICE_TABLE: {path}: model {name!r} needs numbers 'input' and 'output'"
            ) from None
    return prices
