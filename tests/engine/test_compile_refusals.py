"""Compile-time refusal of an empty language, and the mask budget that covers lazy lexer DFA
construction (issue #22).

An empty language (the start symbol derives no sentence once terminals whose regex matches
nothing are unproductive) is a GrammarError at compile time, never a matcher whose first mask
allows nothing, not even EOS. Special-token terminals (regex `[^\\s\\S]`, matched by token id)
stay productive; an empty terminal that no productive derivation uses is fine. A regex whose
lazily built DFA states each hold most of a ~900k-instruction NFA ends its mask within the mask
step budget, in the matcher's error state."""

from __future__ import annotations

import resource
import time

import pytest
from support.real_tokenizers import real_tokenizer

import jaxguide
from jaxguide import Grammar, GrammarError, Matcher, compile_grammar

BLOWUP = "(?:(?:.|a*|b{84,}){62,}){170}"


@pytest.fixture(scope="module")
def info():
    return real_tokenizer("llama3_tiktoken")


def _allowed(compiled, info) -> list[int]:
    mask = jaxguide.allocate_token_bitmask(1, info.logits_width)
    Matcher(compiled).fill_next_token_bitmask(mask)
    return [t for t in range(info.vocab_size) if mask[0, t >> 5] >> (t & 31) & 1]


@pytest.mark.parametrize("regex", ["a^b", "(?:x^)+y", "[^\\s\\S]", "a^|b^", "(?:ab^c)*d^e"])
def test_empty_regex_refused(regex, info):
    with pytest.raises(GrammarError, match="language is empty.*matches nothing: REGEX"):
        compile_grammar(Grammar.from_regex(regex), info)


@pytest.mark.parametrize("regex", ["^a", "a$", "(?:a^)?b", "x*$", "(?:^a)*^b"])
def test_anchored_but_nonempty_regex_compiles(regex, info):
    compile_grammar(Grammar.from_regex(regex), info)


def test_empty_choice_refused():
    with pytest.raises(GrammarError):
        Grammar.choice([])


def test_lark_start_only_reaching_empty_terminals(info):
    lark = 'start: A | B C\nA: /a^b/\nB: "b"\nC: /c^/\n'
    with pytest.raises(GrammarError, match="language is empty.*A, C|language is empty.*C, A"):
        compile_grammar(Grammar.from_lark(lark), info)


def test_unused_empty_terminal_is_fine(info):
    compiled = compile_grammar(Grammar.from_lark('start: "x" | "y" EMPTY\nEMPTY: /a^b/\n'), info)
    x = info.encode("x")[0]
    assert _allowed(compiled, info) == [x]  # the `"y" EMPTY` branch is pruned: no "y"


def test_special_token_terminal_stays_productive(info):
    name = next(iter(info.special_token_names.values()))
    compiled = compile_grammar(Grammar.from_lark(f'start: "a" {name}\n'), info)
    matcher = Matcher(compiled)
    assert matcher.accept_token(info.encode("a")[0])
    special = min(i for i, n in info.special_token_names.items() if n == name)
    assert matcher.is_token_allowed(special)


def test_lazy_dfa_blowup_ends_within_the_mask_budget(info):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.perf_counter()
    compiled = compile_grammar(Grammar.from_regex(BLOWUP), info)
    assert time.perf_counter() - started < 1.0
    matcher = Matcher(compiled)
    mask = jaxguide.allocate_token_bitmask(1, info.logits_width)
    for _ in range(2):  # the second mask meets the same unbuilt states: no cache of the failure
        started = time.perf_counter()
        matcher.fill_next_token_bitmask(mask)
        elapsed = time.perf_counter() - started
        assert "budget" in matcher.error and "lexer DFA" in matcher.error, matcher.error
        assert elapsed < 1.0, elapsed
        eos = set(info.eos_token_ids)
        assert {t for t in range(info.vocab_size) if mask[0, t >> 5] >> (t & 31) & 1} == eos
        matcher.reset()
    growth_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert growth_mb < 100


def test_dfa_build_budget_is_the_mask_step_budget(info):
    # A bigger budget lets the same mask finish; normal grammars never come near the default.
    compiled = compile_grammar(Grammar.from_regex("(?:(?:.|a*|b{8,}){4,}){6}"), info)
    matcher = Matcher(compiled, mask_step_budget=10**10)
    mask = jaxguide.allocate_token_bitmask(1, info.logits_width)
    matcher.fill_next_token_bitmask(mask)
    assert matcher.error is None and mask.any()
