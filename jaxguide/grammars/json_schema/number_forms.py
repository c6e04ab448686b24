"""The number keywords of a merged schema -> `NumberForm` (a mixin of `Normalizer`).

Design note. Bounds (draft-4 flags and numeric exclusives) become Decimal bounds with their
strictness; an integer type rounds them inward. `multipleOf` takes the cheapest exact form: an
integer step on integers as a regex of enumerated multiples (a short bounded range) or of last
digits (k = 2^a 5^b from 0 or 1 up), 10^-k on numbers as a fraction-digit limit, and every
other step, two steps, or `not multipleOf` (`NON_MULTIPLES`, set by `apply_not`) as a digit
automaton (`digit_automata`) over the range regex, within its budget. Every refusal goes
through `unsupported` (lenient: the keyword ignored).
"""

from __future__ import annotations

import dataclasses
import math
from decimal import Decimal

from jaxguide.grammars.json_schema.digit_automata import (
    PLAIN_NUMBER_RX,
    digit_automaton,
)
from jaxguide.grammars.json_schema.errors import JsonSchemaError
from jaxguide.grammars.json_schema.limits import (
    MAX_ENUMERATED_MULTIPLES,
    MAX_LAST_DIGIT_ENDINGS,
)
from jaxguide.grammars.json_schema.normal_form import NumberForm
from jaxguide.grammars.json_schema.numbers import number_regex
from jaxguide.grammars.json_schema.pattern import PatternError

NON_INTEGER = "jaxguide:non_integer"  # set by apply_not: `not {"type": "integer"}` on numbers
# set by apply_not: the steps of `not {"multipleOf": k}` bodies (Decimals), read by number_form
NON_MULTIPLES = "jaxguide:non_multiples"
DIGIT_AUTOMATON_STEP = -1  # NumberForms.multiple_step: the step needs a digit automaton


def to_decimal(value, pointer: str, keyword: str) -> Decimal:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise JsonSchemaError(f"{keyword} must be a number", pointer, keyword)
    if isinstance(value, float) and not math.isfinite(value):
        raise JsonSchemaError(f"{keyword} must be finite", pointer, keyword)
    return Decimal(repr(value)) if isinstance(value, float) else Decimal(value)



class NumberForms:
    """`number_form` and its helpers; the host class provides `unsupported`."""

    @staticmethod
    def bounds(s: dict, pointer: str):
        """(lo, lo_strict, hi, hi_strict): minimum/maximum and their exclusive forms."""
        lo = hi = None
        lo_strict = hi_strict = False
        if "minimum" in s:
            lo = to_decimal(s["minimum"], pointer, "minimum")
        if "maximum" in s:
            hi = to_decimal(s["maximum"], pointer, "maximum")
        em, eM = s.get("exclusiveMinimum"), s.get("exclusiveMaximum")
        if isinstance(em, bool):
            lo_strict = em and lo is not None
        elif em is not None:
            v = to_decimal(em, pointer, "exclusiveMinimum")
            if lo is None or v >= lo:
                lo, lo_strict = v, True
        if isinstance(eM, bool):
            hi_strict = eM and hi is not None
        elif eM is not None:
            v = to_decimal(eM, pointer, "exclusiveMaximum")
            if hi is None or v <= hi:
                hi, hi_strict = v, True
        return lo, lo_strict, hi, hi_strict

    def number_form(self, s: dict, pointer: str, integer: bool) -> NumberForm | None:
        """The number keywords of s (integer: the `integer` type); None: no number."""
        lo, lo_strict, hi, hi_strict = self.bounds(s, pointer)
        mult = s.get("multipleOf")
        zero_fraction = False
        max_frac = None
        step = None
        steps = []  # what the digit automaton enforces (`with_digit_automaton`)
        non_multiples = s.get(NON_MULTIPLES, ())
        if mult is not None:
            m = to_decimal(mult, pointer, "multipleOf")
            if m <= 0:
                raise JsonSchemaError("multipleOf must be > 0", pointer, "multipleOf")
            if m == m.to_integral_value():
                zero_fraction = not integer  # a number: 6000.0 is a multiple of 1 too
                integer = True
                step = int(m)
            elif not integer and m.normalize().as_tuple().digits == (1,):
                max_frac = -m.normalize().as_tuple().exponent
            else:
                steps.append(m)
        if s.get(NON_INTEGER):
            if integer:
                return None
            if lo is not None or hi is not None or max_frac is not None or steps or \
                    non_multiples:
                self.unsupported("not", pointer, "a number that is not an integer, within bounds "
                                 "or a multipleOf")
            else:
                return NumberForm(False, non_integer=True)
        if not integer:
            return self.with_digit_automaton(
                NumberForm(False, lo, lo_strict, hi, hi_strict, fraction_digits=max_frac), steps,
                non_multiples, pointer)
        ilo = None if lo is None else (int(math.floor(lo)) + 1 if lo_strict and lo ==
                                       lo.to_integral_value() else int(math.ceil(lo)))
        ihi = None if hi is None else (int(math.ceil(hi)) - 1 if hi_strict and hi ==
                                       hi.to_integral_value() else int(math.floor(hi)))
        if ilo is not None and ihi is not None and ilo > ihi:
            return None
        k = step
        step = self.multiple_step(ilo, ihi, k) if k and k > 1 else None
        if step == 0:
            return None
        if step == DIGIT_AUTOMATON_STEP:
            steps.append(Decimal(k))
            step = None
        return self.with_digit_automaton(
            NumberForm(True, ilo, False, ihi, False, multiple_of=step,
                       zero_fraction=zero_fraction), steps, non_multiples, pointer)

    @staticmethod
    def multiple_step(lo, hi, k) -> int:
        """k when the multiples of k in [lo, hi] can be written as a regex (enumerated, or k =
        2^a 5^b on a range from 0 or 1 up, by its last digits), 0 when there is none, else
        DIGIT_AUTOMATON_STEP (the digit automaton takes it)."""
        if lo is not None and hi is not None:
            first = -(-lo // k) * k
            if first > hi:
                return 0
            if (hi - first) // k + 1 <= MAX_ENUMERATED_MULTIPLES:
                return k
        r, twos, fives = k, 0, 0
        while r % 2 == 0:
            r, twos = r // 2, twos + 1
        while r % 5 == 0:
            r, fives = r // 5, fives + 1
        if r != 1 or (lo is not None and lo not in (0, 1)) or hi is not None:
            return DIGIT_AUTOMATON_STEP
        # The last-digit regex lists the 10**n // k possible endings (n = max(twos, fives)).
        if 10 ** max(twos, fives) // k > MAX_LAST_DIGIT_ENDINGS:
            return DIGIT_AUTOMATON_STEP
        return k

    def with_digit_automaton(self, form: NumberForm, steps, non_multiples,
                             pointer: str) -> NumberForm | None:
        """`form` whose numbers are also multiples of every Decimal of `steps` and of none
        of `non_multiples` (`not multipleOf`): its range regex's digit automaton
        (`digit_automata`); None when no number is left. Over the budget: unsupported
        (lenient: the form without them)."""
        if not steps and not non_multiples:
            return form
        plain = not form.integer and form.minimum is None and form.maximum is None and \
            form.fraction_digits is None
        regex = PLAIN_NUMBER_RX if plain else number_regex(form)
        if regex is None:
            return None
        try:
            states = digit_automaton(regex, steps, non_multiples, self.digit_budget)
        except PatternError as e:
            self.unsupported("multipleOf", pointer, str(e))
            return form
        if states is None:
            return None
        return dataclasses.replace(form, automaton=states, automaton_regex=regex)
