"""Hidden tests for order_pricing."""

from __future__ import annotations

from decimal import Decimal

import pytest

from order_pricing import PricedOrder, price_order

D = Decimal


def line(sku, price, quantity):
    return {"sku": sku, "unit_price": price, "quantity": quantity}


BASKET = [line("A", "10.00", 2), line("B", "2.50", 1)]


def test_simple_order():
    assert price_order(BASKET) == PricedOrder(
        lines=(("A", 2, D("20.00")), ("B", 1, D("2.50"))),
        subtotal=D("22.50"),
        discount=D("0.00"),
        tax=D("4.50"),
        total=D("27.00"),
    )


def test_money_fields_have_two_places():
    order = price_order([line("A", 3, 1)], tax_rate="0")
    assert [str(v) for v in (order.subtotal, order.discount, order.tax, order.total)] == ["3.00", "0.00", "0.00", "3.00"]
    assert str(order.lines[0][2]) == "3.00"


def test_bulk_discount_rounds_half_up():
    order = price_order([line("C", "1.99", 10)], tax_rate="0")
    assert order.lines == (("C", 10, D("18.91")),)


def test_no_bulk_discount_below_ten():
    assert price_order([line("C", "1.99", 9)], tax_rate="0").subtotal == D("17.91")


def test_same_sku_lines_are_merged_before_bulk_rule():
    order = price_order([line("C", "1.99", 6), line("B", "1.00", 1), line(" C ", D("1.99"), 4)], tax_rate="0")
    assert order.lines == (("C", 10, D("18.91")), ("B", 1, D("1.00")))


def test_conflicting_prices_for_same_sku():
    with pytest.raises(ValueError):
        price_order([line("C", "1.99", 1), line("C", "2.00", 1)])


def test_merged_quantity_limit():
    assert price_order([line("C", "1.00", 600), line("C", "1.00", 400)], tax_rate="0").lines == (("C", 1000, D("950.00")),)
    with pytest.raises(ValueError):
        price_order([line("C", "1.00", 600), line("C", "1.00", 401)])


def test_save10_code_case_insensitive():
    order = price_order(BASKET, discount_code="  save10 ")
    assert (order.discount, order.tax, order.total) == (D("2.25"), D("4.05"), D("24.30"))


def test_save10_rounds_half_up():
    assert price_order([line("X", "10.05", 1)], discount_code="SAVE10", tax_rate="0").discount == D("1.01")


def test_flat5_at_minimum_subtotal():
    order = price_order([line("A", "12.50", 2)], discount_code="FLAT5")
    assert (order.subtotal, order.discount, order.tax, order.total) == (D("25.00"), D("5.00"), D("4.00"), D("24.00"))


def test_flat5_below_minimum_rejected():
    with pytest.raises(ValueError):
        price_order([line("A", "24.99", 1)], discount_code="FLAT5")


@pytest.mark.parametrize("code", ["SAVE20", "FREE", "SAVE 10"])
def test_unknown_code_rejected(code):
    with pytest.raises(ValueError):
        price_order(BASKET, discount_code=code)


def test_empty_code_means_no_discount():
    assert price_order(BASKET, discount_code="").discount == D("0.00")


def test_tax_rounds_half_up():
    order = price_order([line("P", "0.25", 1)], tax_rate=D("0.10"))
    assert (order.tax, order.total) == (D("0.03"), D("0.28"))


def test_full_tax_rate_allowed():
    assert price_order(BASKET, tax_rate="1").total == D("45.00")


def test_free_items_allowed():
    assert price_order([line("GIFT", "0", 1)]).total == D("0.00")


@pytest.mark.parametrize(
    "bad",
    [
        {"sku": "A", "unit_price": "1.00"},
        line("A", "1.00", 0),
        line("A", "1.00", 1001),
        line("A", "1.00", True),
        line("A", "-1.00", 1),
        line("A", "1.005", 1),
        line("A", 1.5, 1),
        line("  ", "1.00", 1),
    ],
    ids=["missing-quantity", "zero-qty", "too-many", "bool-qty", "negative-price", "sub-cent", "float-price", "blank-sku"],
)
def test_invalid_lines(bad):
    with pytest.raises(ValueError):
        price_order([line("OK", "1.00", 1), bad])


def test_empty_order_rejected():
    with pytest.raises(ValueError):
        price_order([])


@pytest.mark.parametrize("rate", ["1.5", 0.2])
def test_invalid_tax_rate(rate):
    with pytest.raises(ValueError):
        price_order(BASKET, tax_rate=rate)
