"""Hidden tests for bank_ledger."""

from __future__ import annotations

from decimal import Decimal

import pytest

from bank_ledger import AccountNotFoundError, Bank, InsufficientFundsError, Transaction

D = Decimal


@pytest.fixture
def bank():
    return Bank()


def test_account_ids_are_sequential(bank):
    assert bank.open_account("ada") == "ACC-0001"
    assert bank.open_account("bob", "5") == "ACC-0002"


def test_opening_balance_and_history(bank):
    acc = bank.open_account("ada", "10.5")
    assert bank.balance(acc) == D("10.50")
    assert str(bank.balance(acc)) == "10.50"
    assert bank.history(acc) == [Transaction("open", D("10.50"), D("10.50"), None)]


def test_deposit_and_withdraw_return_new_balance(bank):
    acc = bank.open_account("ada", 100)
    assert bank.deposit(acc, "25.25") == D("125.25")
    assert bank.withdraw(acc, D("0.25")) == D("125.00")
    assert str(bank.balance(acc)) == "125.00"


def test_withdraw_insufficient_funds_changes_nothing(bank):
    acc = bank.open_account("ada", 50)
    with pytest.raises(InsufficientFundsError):
        bank.withdraw(acc, "50.01")
    assert bank.balance(acc) == D("50.00")
    assert len(bank.history(acc)) == 1


def test_withdraw_entire_balance_allowed(bank):
    acc = bank.open_account("ada", 50)
    assert bank.withdraw(acc, 50) == D("0.00")


def test_overdraft_limit(bank):
    acc = bank.open_account("ada", 10, overdraft_limit="20")
    assert bank.withdraw(acc, 30) == D("-20.00")
    with pytest.raises(InsufficientFundsError):
        bank.withdraw(acc, "0.01")


def test_transfer_moves_money_and_records_history(bank):
    a = bank.open_account("ada", 100)
    b = bank.open_account("bob")
    bank.transfer(a, b, "40")
    assert (bank.balance(a), bank.balance(b)) == (D("60.00"), D("40.00"))
    assert bank.history(a)[-1] == Transaction("transfer_out", D("40.00"), D("60.00"), b)
    assert bank.history(b)[-1] == Transaction("transfer_in", D("40.00"), D("40.00"), a)


def test_failed_transfer_is_atomic(bank):
    a = bank.open_account("ada", 10)
    b = bank.open_account("bob", 5)
    with pytest.raises(InsufficientFundsError):
        bank.transfer(a, b, 11)
    assert (bank.balance(a), bank.balance(b)) == (D("10.00"), D("5.00"))
    assert len(bank.history(a)) == len(bank.history(b)) == 1


def test_transfer_to_same_account_rejected(bank):
    a = bank.open_account("ada", 10)
    with pytest.raises(ValueError):
        bank.transfer(a, a, 1)


@pytest.mark.parametrize("method", ["deposit", "withdraw", "balance", "history"])
def test_unknown_account(bank, method):
    bank.open_account("ada")
    args = ("ACC-9999", 1) if method in ("deposit", "withdraw") else ("ACC-9999",)
    with pytest.raises(AccountNotFoundError):
        getattr(bank, method)(*args)


def test_transfer_unknown_account_checked_before_funds(bank):
    a = bank.open_account("ada", 0)
    with pytest.raises(AccountNotFoundError):
        bank.transfer(a, "ACC-0404", 1000)
    with pytest.raises(AccountNotFoundError):
        bank.transfer("ACC-0404", a, -1)


@pytest.mark.parametrize("amount", ["0", 0, "-5", "1.005", "abc", "NaN"])
def test_invalid_amounts(bank, amount):
    acc = bank.open_account("ada", 100)
    with pytest.raises(ValueError):
        bank.deposit(acc, amount)
    assert bank.balance(acc) == D("100.00")


@pytest.mark.parametrize("amount", [1.5, True])
def test_float_and_bool_rejected(bank, amount):
    acc = bank.open_account("ada", 100)
    with pytest.raises(TypeError):
        bank.withdraw(acc, amount)


@pytest.mark.parametrize("kwargs", [{"owner": "  "}, {"owner": "ada", "initial": "-1"}, {"owner": "ada", "overdraft_limit": -5}])
def test_open_account_validation(bank, kwargs):
    with pytest.raises(ValueError):
        bank.open_account(**kwargs)


def test_history_is_a_copy(bank):
    acc = bank.open_account("ada", 1)
    bank.history(acc).clear()
    assert len(bank.history(acc)) == 1


def test_total_deposits(bank):
    a = bank.open_account("ada", "10.10")
    b = bank.open_account("bob", "0.20", overdraft_limit=100)
    bank.withdraw(b, "50")
    assert bank.total_deposits() == D("-39.70")
    assert Bank().total_deposits() == D("0")
    bank.transfer(a, b, "10.10")
    assert bank.total_deposits() == D("-39.70")
