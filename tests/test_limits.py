"""jaxguide/limits.py is the one table of budgets: every default it states is the one the code
uses (read from the C++ header, the Python constant or the parameter default it names), and the
README holds its current Markdown rendering."""

from __future__ import annotations

import importlib
import inspect
import pathlib
import re

import pytest

from jaxguide.limits import BUDGETS, Budget, markdown_table

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _cpp_value(path: str, symbol: str) -> int:
    """The value of `constexpr ... symbol = <expr>;` in a C++ header (simple integer arithmetic:
    `size_t{1} << 17`, `uint64_t{50} * 1000 * 1000`)."""
    text = (ROOT / path).read_text()
    match = re.search(rf"\b{symbol}\s*=\s*([^;]+);", text)
    assert match, f"{symbol} not found in {path}"
    expression = re.sub(r"\b(?:size_t|uint64_t|uint32_t|int64_t)\{(\d+)\}", r"\1",
                        match.group(1))
    assert re.fullmatch(r"[\dA-Fa-fx\s()<>*+\-]+", expression), expression
    return eval(expression)  # digits and operators only (checked above)


def _python_value(where: str):
    module_name, name = where.split(":")
    call = re.fullmatch(r"([\w.]+)\((\w+)=\)", name)
    if call is None:
        return getattr(importlib.import_module(module_name), name)
    target = importlib.import_module(module_name)
    for part in call.group(1).split("."):
        target = getattr(target, part)
    return inspect.signature(target).parameters[call.group(2)].default


def actual_default(budget: Budget):
    path, symbol = budget.where.split(":", 1)
    if path.startswith("native/"):
        return _cpp_value(path, symbol)
    return _python_value(budget.where)


@pytest.mark.parametrize("budget", BUDGETS, ids=[b.name for b in BUDGETS])
def test_table_states_the_default_the_code_uses(budget):
    assert actual_default(budget) == budget.default


def test_budget_names_are_unique_and_complete():
    assert len({b.name for b in BUDGETS}) == len(BUDGETS)
    for budget in BUDGETS:
        assert budget.bounds and budget.exceeded and budget.unit


def test_readme_holds_the_current_table():
    assert markdown_table() in (ROOT / "README.md").read_text(), (
        "README.md's budget table is stale: paste jaxguide.limits.markdown_table() there")


def test_checker_sees_a_wrong_default():
    wrong = Budget("x", 1 << 16, "states", "b", "e", "native/lexer/lexer_dfa.h:kDefaultMaxStates")
    assert actual_default(wrong) != wrong.default
