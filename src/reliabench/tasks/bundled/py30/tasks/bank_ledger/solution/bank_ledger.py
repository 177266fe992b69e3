"""A small in-memory bank ledger."""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation

CENT = Decimal("0.01")
Money = Decimal | int | str


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


@dataclass
class _Account:
    owner: str
    balance: Decimal
    overdraft_limit: Decimal
    history: list[Transaction] = field(default_factory=list)

    def can_cover(self, amount: Decimal) -> bool:
        return self.balance - amount >= -self.overdraft_limit


def to_money(value: Money) -> Decimal:
    """Convert ``value`` to a 2-place Decimal, rejecting floats and sub-cent amounts."""
    if isinstance(value, (bool, float)) or not isinstance(value, (Decimal, int, str)):
        raise TypeError(f"unsupported amount type: {type(value).__name__}")
    try:
        amount = Decimal(value.strip() if isinstance(value, str) else value)
    except InvalidOperation as exc:
        raise ValueError(f"invalid amount: {value!r}") from exc
    if not amount.is_finite():
        raise ValueError("amount must be finite")
    if amount != amount.quantize(CENT):
        raise ValueError("amount has more than 2 decimal places")
    return amount.quantize(CENT)


def _positive(value: Money) -> Decimal:
    amount = to_money(value)
    if amount <= 0:
        raise ValueError("amount must be positive")
    return amount


def _non_negative(value: Money) -> Decimal:
    amount = to_money(value)
    if amount < 0:
        raise ValueError("amount must not be negative")
    return amount


class Bank:
    def __init__(self) -> None:
        self._accounts: dict[str, _Account] = {}

    def _get(self, account_id: str) -> _Account:
        try:
            return self._accounts[account_id]
        except (KeyError, TypeError):
            raise AccountNotFoundError(account_id) from None

    def open_account(self, owner: str, initial: Money = 0, overdraft_limit: Money = 0) -> str:
        if not isinstance(owner, str) or not owner.strip():
            raise ValueError("owner is required")
        opening = _non_negative(initial)
        limit = _non_negative(overdraft_limit)
        account_id = f"ACC-{len(self._accounts) + 1:04d}"
        account = _Account(owner=owner.strip(), balance=opening, overdraft_limit=limit)
        account.history.append(Transaction("open", opening, opening, None))
        self._accounts[account_id] = account
        return account_id

    def deposit(self, account_id: str, amount: Money) -> Decimal:
        account = self._get(account_id)
        value = _positive(amount)
        account.balance += value
        account.history.append(Transaction("deposit", value, account.balance, None))
        return account.balance

    def withdraw(self, account_id: str, amount: Money) -> Decimal:
        account = self._get(account_id)
        value = _positive(amount)
        if not account.can_cover(value):
            raise InsufficientFundsError(f"{account_id} cannot cover {value}")
        account.balance -= value
        account.history.append(Transaction("withdraw", value, account.balance, None))
        return account.balance

    def transfer(self, source_id: str, target_id: str, amount: Money) -> None:
        source = self._get(source_id)
        target = self._get(target_id)
        if source_id == target_id:
            raise ValueError("cannot transfer to the same account")
        value = _positive(amount)
        if not source.can_cover(value):
            raise InsufficientFundsError(f"{source_id} cannot cover {value}")
        source.balance -= value
        target.balance += value
        source.history.append(Transaction("transfer_out", value, source.balance, target_id))
        target.history.append(Transaction("transfer_in", value, target.balance, source_id))

    def balance(self, account_id: str) -> Decimal:
        return self._get(account_id).balance

    def history(self, account_id: str) -> list[Transaction]:
        return list(self._get(account_id).history)

    def total_deposits(self) -> Decimal:
        return sum((account.balance for account in self._accounts.values()), Decimal("0.00"))
