"""Grouped statistics over CSV text."""

from __future__ import annotations

import csv
import io
import math


def _is_blank(row: list[str]) -> bool:
    return all(not field.strip() for field in row)


def group_stats(text: str, key: str, value: str) -> dict[str, dict[str, float | int]]:
    """Group the rows of CSV ``text`` by column ``key`` and aggregate column ``value``.

    Returns a mapping ``group -> {"count", "sum", "mean", "min", "max"}``.
    """
    reader = csv.reader(io.StringIO(text))
    header: list[str] | None = None
    for row in reader:
        if not _is_blank(row):
            header = [name.strip() for name in row]
            break
    if header is None:
        return {}
    if key not in header:
        raise KeyError(key)
    if value not in header:
        raise KeyError(value)
    key_idx = header.index(key)
    value_idx = header.index(value)

    stats: dict[str, dict[str, float | int]] = {}
    for row in reader:
        if _is_blank(row):
            continue
        if len(row) < len(header):
            raise ValueError(
                f"line {reader.line_num}: expected {len(header)} fields, got {len(row)}"
            )
        raw = row[value_idx].strip()
        if not raw:
            continue
        try:
            number = float(raw)
        except ValueError:
            raise ValueError(f"line {reader.line_num}: not a number: {raw!r}") from None
        if not math.isfinite(number):
            raise ValueError(f"line {reader.line_num}: not a finite number: {raw!r}")

        group = row[key_idx].strip()
        entry = stats.get(group)
        if entry is None:
            stats[group] = {"count": 1, "sum": number, "min": number, "max": number}
        else:
            entry["count"] += 1
            entry["sum"] += number
            if number < entry["min"]:
                entry["min"] = number
            if number > entry["max"]:
                entry["max"] = number

    result: dict[str, dict[str, float | int]] = {}
    for group, entry in stats.items():
        count = int(entry["count"])
        total = float(entry["sum"])
        result[group] = {
            "count": count,
            "sum": total,
            "mean": total / count,
            "min": float(entry["min"]),
            "max": float(entry["max"]),
        }
    return result
