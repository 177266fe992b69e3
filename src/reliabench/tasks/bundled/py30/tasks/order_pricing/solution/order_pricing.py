"""Checkout price calculation."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Iterable, Mapping

CENT = Decimal("0.01")
BULK_QUANTITY = 10
BULK_FACTOR = Decimal("0.95")
MAX_QUANTITY = 1000
FLAT5_MINIMUM = Decimal("25.00")


@dataclass(frozen=True)
class PricedOrder:
    lines: tuple[tuple[str, int, Decimal], ...]
    subtotal: Decimal
    discount: Decimal
    tax: Decimal
    total: Decimal


def _round(value: Decimal) -> Decimal:
    return value.quantize(CENT, rounding=ROUND_HALF_UP)


def _decimal(value: object, what: str) -> Decimal:
    if isinstance(value, (bool, float)) or not isinstance(value, (Decimal, int, str)):
        raise ValueError(f"{what} must be a Decimal, int or str")
    try:
        number = Decimal(value)
    except InvalidOperation as exc:
        raise ValueError(f"{what} is not a number: {value!r}") from exc
    if not number.is_finite():
        raise ValueError(f"{what} must be finite")
    return number


def _parse_line(raw: Mapping[str, object]) -> tuple[str, Decimal, int]:
    try:
        sku, price, quantity = raw["sku"], raw["unit_price"], raw["quantity"]
    except (KeyError, TypeError) as exc:
        raise ValueError(f"invalid order line: {raw!r}") from exc
    if not isinstance(sku, str) or not sku.strip():
        raise ValueError("sku must be a non-empty string")
    unit_price = _decimal(price, "unit_price")
    if unit_price < 0 or unit_price != unit_price.quantize(CENT):
        raise ValueError("unit_price must be >= 0 with at most 2 decimal places")
    if isinstance(quantity, bool) or not isinstance(quantity, int) or not 1 <= quantity <= MAX_QUANTITY:
        raise ValueError(f"quantity must be an integer between 1 and {MAX_QUANTITY}")
    return sku.strip(), unit_price, quantity


def _merge(lines: Iterable[Mapping[str, object]]) -> dict[str, tuple[Decimal, int]]:
    merged: dict[str, tuple[Decimal, int]] = {}
    for raw in lines:
        sku, price, quantity = _parse_line(raw)
        if sku in merged:
            known_price, known_quantity = merged[sku]
            if known_price != price:
                raise ValueError(f"conflicting unit prices for {sku}")
            quantity += known_quantity
            if quantity > MAX_QUANTITY:
                raise ValueError(f"quantity for {sku} exceeds {MAX_QUANTITY}")
            price = known_price
        merged[sku] = (price, quantity)
    if not merged:
        raise ValueError("an order needs at least one line")
    return merged


def _line_total(price: Decimal, quantity: int) -> Decimal:
    amount = price * quantity
    if quantity >= BULK_QUANTITY:
        amount *= BULK_FACTOR
    return _round(amount)


def _discount(code: str | None, subtotal: Decimal) -> Decimal:
    normalised = (code or "").strip().upper()
    if not normalised:
        return _round(Decimal(0))
    if normalised == "SAVE10":
        amount = _round(subtotal * Decimal("0.10"))
    elif normalised == "FLAT5":
        if subtotal < FLAT5_MINIMUM:
            raise ValueError(f"FLAT5 requires a subtotal of at least {FLAT5_MINIMUM}")
        amount = Decimal("5.00")
    else:
        raise ValueError(f"unknown discount code: {code!r}")
    return _round(min(amount, subtotal))


def price_order(
    lines: Iterable[Mapping[str, object]],
    *,
    discount_code: str | None = None,
    tax_rate: Decimal | str = "0.20",
) -> PricedOrder:
    """Price an order; see the task description for the rules."""
    rate = _decimal(tax_rate, "tax_rate")
    if rate < 0 or rate > 1:
        raise ValueError("tax_rate must be between 0 and 1")
    merged = _merge(lines)
    priced = tuple((sku, quantity, _line_total(price, quantity)) for sku, (price, quantity) in merged.items())
    subtotal = _round(sum((line[2] for line in priced), Decimal(0)))
    discount = _discount(discount_code, subtotal)
    taxable = subtotal - discount
    tax = _round(taxable * rate)
    return PricedOrder(lines=priced, subtotal=subtotal, discount=discount, tax=tax, total=_round(taxable + tax))
