"""MIOpenDriver's flags and how a command line's are read: tokens, each flag by its short or
long name, integers within int32 in normal form. A manifest holds many thousand lines, mostly
with their flags in one order: the usual line is read by a plan made once per sequence of flag
names (a few operations for all its flags), a line of another shape by reading its flags as
pairs, anything else flag by flag, which names what is wrong."""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from functools import lru_cache
from itertools import compress
from operator import itemgetter
from typing import Any

from ._lazy_re import lazy
from ._numbers import INT32, parse_int
from .errors import ProblemError


@dataclass(frozen=True)
class Flag:
    long: str
    short: str
    default: str
    kind: str  # "int" | "str" | "ignored"



# Quotes and escapes need shlex (which splits at spaces, tabs, CR and LF alone).
_SHELL_QUOTES = ("'", '"', "\\")


def tokens_of(line: str) -> list[str]:
    text = line.strip()
    # MITuna's logs prefix the API call: "miopenConvolutionForward: ./bin/MIOpenDriver conv ..."
    if ":" in text and ":" in text.split(None, 1)[0]:
        text = text.split(":", 1)[1].strip()
    plain = text.replace("\t", " ") if "\t" in text else text
    if (plain.isascii() and plain.isprintable()
            and not any(quote in plain for quote in _SHELL_QUOTES)):
        # Printable ASCII without quotes: shlex would split at spaces alone, ten times slower.
        tokens = plain.split()
    else:
        try:
            tokens = shlex.split(text)
        except ValueError as exc:
            raise ProblemError(f"cannot split the command line: {exc}") from None
    if tokens and tokens[0].endswith("MIOpenDriver"):
        tokens = tokens[1:]
    return tokens


# Ignored flags MIOpenDriver still reads as integers, and the ranges it accepts.
_INT_IGNORED = {"iter", "verify", "time", "wall", "search", "printconv", "dump_output",
                "solution", "gpubuffer_check", "tensor_vect", "vector_length", "in_cast_type",
                "wei_cast_type", "out_cast_type", "dbshape", "wsidx"}
_RANGES = {"tensor_vect": (0, 2)}  # none, vect_c, vect_n


class FlagTable:
    """A sub-command's flags by long name, by short name and by the token that names one
    (`--batchsize`, `-n`), with their defaults (integers as such), built once; `fields` are
    the flags (integers, then text) that `read_fields` gives back, in that order."""

    def __init__(self, flags: list[Flag], fields: tuple[list[str], list[str]]) -> None:
        self.by_long = {f.long: f for f in flags}
        self.by_short = {f.short: f for f in flags}
        self.by_token = {**{f"--{f.long}": f for f in flags}, **{f"-{f.short}": f for f in flags}}
        self.tokens = frozenset(self.by_token)
        self.long_of = {token: f.long for token, f in self.by_token.items()}
        # Flags whose values are integers: MIOpenDriver reads the ignored ones as such too.
        self.ints = frozenset(f.long for f in flags if f.kind == "int" or f.long in _INT_IGNORED)
        self.defaults: dict[str, str | int] = {
            f.long: int(f.default) if f.long in self.ints else f.default for f in flags}
        self.fields = fields
        self.pick = _picker(fields[0]), _picker(fields[1])
        self.plans: dict[tuple[str, ...], _LinePlan | None] = {}


_MAX_PLANS = 256  # sequences of flag names planned; lines of others are read as pairs


def _picker(indexes: list[Any]) -> Any:
    """`itemgetter(*indexes)` that gives a tuple whatever their number."""
    if len(indexes) == 1:
        return lambda seq, i=indexes[0]: (seq[i],)
    return itemgetter(*indexes) if indexes else (lambda seq: ())


class _LinePlan:
    """Where each field's value is in a line whose flag names are one sequence: positions of
    its integers and texts among the values, then the field defaults appended."""

    def __init__(self, table: FlagTable, names: tuple[str, ...]) -> None:
        longs = [table.long_of[name] for name in names]
        int_at = [i for i, long in enumerate(longs) if long in table.ints]
        text_at = [i for i, long in enumerate(longs) if long not in table.ints]
        self.numbers, self.texts = _picker(int_at), _picker(text_at)
        self.values = []
        for given, fields in ((int_at, table.fields[0]), (text_at, table.fields[1])):
            at = {longs[i]: n for n, i in enumerate(given)}
            self.values.append((_picker([at.get(f, len(given) + j) for j, f in enumerate(fields)]),
                                [table.defaults[f] for f in fields]))


def _plan(table: FlagTable, names: tuple[str, ...]) -> _LinePlan | None:
    if names in table.plans:
        return table.plans[names]
    longs = [table.long_of.get(name) for name in names]
    usable = (None not in longs and len(set(longs)) == len(longs)
              and _RANGES.keys().isdisjoint(longs))
    plan = _LinePlan(table, names) if usable else None
    if len(table.plans) < _MAX_PLANS:
        table.plans[names] = plan
    return plan


def read_fields(tokens: list[str], table: FlagTable) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """The values of `table.fields` (integers, texts) given on a command line or defaulted."""
    names, given = tokens[0::2], tokens[1::2]
    plan = _plan(table, tuple(names)) if len(names) == len(given) else None
    if plan is not None:
        found = list(map(_small_ints().get, plan.numbers(given)))
        if None not in found:  # every integer small and in normal form
            (ints, int_defaults), (texts, text_defaults) = plan.values
            return ints(found + int_defaults), texts(list(plan.texts(given)) + text_defaults)
    values = {**table.defaults, **read_flags(tokens, table)}
    return table.pick[0](values), table.pick[1](values)


# Integers in normal form (as `_int32` gives them) one space apart: nine digits at most.
_NORMAL_INTS = lazy(r"(?:0|[1-9][0-9]{0,8})(?: (?:0|[1-9][0-9]{0,8}))*")


def read_flags(tokens: list[str], table: FlagTable) -> dict[str, Any]:
    """The flags of a command line by long name: integers (within int32) or text."""
    values = _read_flag_pairs(tokens, table)
    return values if values is not None else _read_flags_one_by_one(tokens, table)


def _read_flag_pairs(tokens: list[str], table: FlagTable) -> dict[str, Any] | None:
    """The flags of a usual line, a few operations for all of them (a manifest may hold many
    thousand lines): each token a flag's name, then its value, each flag once, integers in
    normal form and no range to check. None for any other line, which the flag loop reads
    (and names what is wrong with)."""
    names, given = tokens[0::2], tokens[1::2]
    if len(names) != len(given) or not table.tokens.issuperset(names):
        return None
    longs = list(map(table.long_of.__getitem__, names))
    values: dict[str, Any] = dict(zip(longs, given, strict=True))
    if len(values) != len(longs) or not _RANGES.keys().isdisjoint(values):
        return None
    is_int = list(map(table.ints.__contains__, longs))
    numbers = list(compress(given, is_int))
    found = list(map(_small_ints().get, numbers))
    if None in found:  # not all of them small, or not all in normal form
        joined = " ".join(numbers)
        if joined.count(" ") != len(numbers) - 1 or not _NORMAL_INTS.fullmatch(joined):
            return None
        found = list(map(int, numbers))
    values.update(zip(compress(longs, is_int), found, strict=True))
    return values


@lru_cache(maxsize=1)
def _small_ints() -> dict[str, int]:
    """The integers below 8192 by their normal form: the values of nearly every flag of a
    manifest, checked and read by one look-up each."""
    return {str(i): i for i in range(8192)}


def _read_flags_one_by_one(tokens: list[str], table: FlagTable) -> dict[str, Any]:
    values: dict[str, Any] = {}
    ints = table.ints
    count = len(tokens)
    i = 0
    while i < count:
        tok = tokens[i]
        flag, text, used = _flag_with_value(tok, tokens, i, table)
        i += used
        long = flag.long
        val: str | int = text
        if long in ints:
            val = number = _int32(tok, text)
            if long in _RANGES:
                lo, hi = _RANGES[long]
                if not lo <= number <= hi:
                    raise ProblemError(f"flag {tok!r} must be {lo}..{hi}, got {number}")
        before = values.get(long)
        if before is not None and before != val:
            raise ProblemError(f"flag {tok!r} given twice with different values "
                               f"({str(before)!r} and {str(val)!r}; --{long}/-{flag.short})")
        values[long] = val
    return values


def _flag_with_value(tok: str, tokens: list[str], i: int,
                     table: FlagTable) -> tuple[Flag, str, int]:
    """The flag `tok` names, its value (`--name=value`, `-nVALUE`, or the next token) and the
    number of tokens they take."""
    if tok.startswith("--"):
        name, eq, val = tok[2:].partition("=")
        flag = table.by_long.get(name)
        if flag is None:
            raise ProblemError(f"unknown flag {tok!r}")
    elif tok.startswith("-") and len(tok) >= 2:
        name, val = tok[1], tok[2:]
        flag = table.by_short.get(name)
        if flag is None:
            raise ProblemError(f"unknown flag {tok!r}")
        eq = "=" if val else ""
    else:
        raise ProblemError(f"unexpected argument {tok!r} (expected a flag)")
    if eq:
        return flag, val, 1
    if i + 1 >= len(tokens):
        raise ProblemError(f"flag {tok!r} needs a value")
    return flag, tokens[i + 1], 2


def _int32(flag: str, text: str) -> int:
    """An MIOpenDriver integer: ASCII digits with an optional sign, within int32."""
    if len(text) < 10 and text.isdigit() and text.isascii():  # nine digits: within int32
        return int(text)
    return parse_int(text, f"flag {flag!r}", INT32[0], INT32[1], ProblemError, signed=True)


