"""A small in-memory bank ledger."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal


class AccountNotFoundError(KeyError):
    """Raised for unknown account ids."""


class InsufficientFundsError(ValueError):
    """Raised when a withdrawal or transfer would exceed the overdraft limit."""


@dataclass(frozen=True)
class Transaction:
    kind: str
    amount: Decimal
    balance_after: Decimal
    counterparty: str | None


class Bank:
    def open_account(self, owner: str, initial: Decimal | int | str = 0, overdraft_limit: Decimal | int | str = 0) -> str:
        raise NotImplementedError

    def deposit(self, account_id: str, amount: Decimal | int | str) -> Decimal:
        raise NotImplementedError

    def withdraw(self, account_id: str, amount: Decimal | int | str) -> Decimal:
        raise NotImplementedError

    def transfer(self, source_id: str, target_id: str, amount: Decimal | int | str) -> None:
        raise NotImplementedError

    def balance(self, account_id: str) -> Decimal:
        raise NotImplementedError

    def history(self, account_id: str) -> list[Transaction]:
        raise NotImplementedError

    def total_deposits(self) -> Decimal:
        raise NotImplementedError
