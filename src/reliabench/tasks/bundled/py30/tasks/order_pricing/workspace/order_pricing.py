"""Checkout price calculation."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Iterable, Mapping


@dataclass(frozen=True)
class PricedOrder:
    lines: tuple[tuple[str, int, Decimal], ...]
    subtotal: Decimal
    discount: Decimal
    tax: Decimal
    total: Decimal


def price_order(
    lines: Iterable[Mapping[str, object]],
    *,
    discount_code: str | None = None,
    tax_rate: Decimal | str = "0.20",
) -> PricedOrder:
    """Price an order; see the task description for the rules."""
    raise NotImplementedError
