"""Compile-time refusal of an empty language, and the mask budget that covers lazy lexer DFA
construction (issue #22).

An empty language (the start symbol derives no sentence once terminals whose regex matches
nothing are unproductive) is a GrammarError at compile time, never a matcher whose first mask
allows nothing, not even EOS. Special-token terminals (regex `[^\\s\\S]`, matched by token id)
stay productive; an empty terminal that no productive derivation uses is fine. A regex whose
lazily built DFA states each hold most of a ~900k-instruction NFA ends its mask within the mask
step budget, in the matcher's error state; every other matcher call charges the DFA states it
builds to a budget of the same size (a fuzzer's regex whose states grow with the text made
`shortest_lexeme_completion` run for 6 s), and so does the compile-time exit search of %ignore'd
terminals."""

from __future__ import annotations

import resource
import time

import pytest
from support.real_tokenizers import real_tokenizer

import jaxguide
from jaxguide import BatchMatcher, Grammar, GrammarError, Matcher, compile_grammar

# A budget answers within about a second of one core's work (0.4-0.8 s here); a call without its
# budget runs on far longer, building lexer states without end. Times are this process's CPU
# seconds (time.process_time), so the other test process (pytest -n 2) and whatever else shares
# the machine's cores do not count; the limit still allows for a slower core.
ANSWER_WITHIN_S = 2.0
BLOWUP = "(?:(?:.|a*|b{84,}){62,}){170}"
# Found by fuzzing (benchmarks/results/fuzz.json, case 435): a state after n bytes holds threads
# in ~n of the 2000 copies, so a search or a long text builds thousands of ever larger states.
GROWING = (r"(?:(?:(?:(?:\.[^,\s]|[^,\.\s\*])[^,\s]*)(?:,\s*(?:\.[^,\s]|[^,\.\s\*])"
           r"[^,\s]*)*){1000}){2}")


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
    started = time.process_time()
    compiled = compile_grammar(Grammar.from_regex(BLOWUP), info)
    assert time.process_time() - started < ANSWER_WITHIN_S
    matcher = Matcher(compiled)
    mask = jaxguide.allocate_token_bitmask(1, info.logits_width)
    for _ in range(2):  # the second mask meets the same unbuilt states: no cache of the failure
        started = time.process_time()
        matcher.fill_next_token_bitmask(mask)
        elapsed = time.process_time() - started
        assert "budget" in matcher.error and "lexer DFA" in matcher.error, matcher.error
        assert elapsed < ANSWER_WITHIN_S, elapsed
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


def _budget_error(matcher) -> None:
    """The matcher is fine, or in its error state because a budget ran out (named)."""
    assert matcher.error is None or ("budget" in matcher.error and "lexer" in matcher.error), \
        matcher.error


# Budgets a call may spend in full: each matcher call has its own, so the batch call (two forks,
# each advanced and then given a mask) may spend one per fork and call.
BUDGETS_SPENT = {"batch": 4}


def _calls(info):
    tokens = info.encode("abc defg")
    mask = jaxguide.allocate_token_bitmask(4, info.logits_width)

    def batch(m):
        forks = [m.fork(), m.fork()]
        pool = BatchMatcher(num_threads=1)
        pool.accept_tokens(forks, tokens[:2])
        pool.fill_next_token_bitmask(forks, mask[:2])
        for fork in forks:
            _budget_error(fork)

    return {
        "accept_token": lambda m: [m.accept_token(t) for t in tokens],
        "accept_bytes": lambda m: m.accept_bytes(b"b" * 2000),
        "accept_bytes_growing": lambda m: m.accept_bytes(b"a" * 20000),
        "is_token_allowed": lambda m: [m.is_token_allowed(t) for t in range(200, 400)],
        "is_accepting": lambda m: m.is_accepting(),
        "min_terminals_to_accept": lambda m: m.min_terminals_to_accept(),
        "compute_ff_bytes": lambda m: m.compute_ff_bytes(2**40),
        "compute_ff_tokens": lambda m: m.compute_ff_tokens(tokens[:1], max_bytes=2**40),
        "shortest_lexeme_completion": lambda m: m.shortest_lexeme_completion(2**40),
        "validate_tokens": lambda m: m.validate_tokens(tokens),
        "fill_draft_bitmasks": lambda m: m.fill_draft_bitmasks(mask, tokens[:3]),
        "fill_next_token_bitmask": lambda m: m.fill_next_token_bitmask(mask),
        "batch": batch,
    }


@pytest.mark.parametrize("call", sorted(_calls(real_tokenizer("llama3_tiktoken"))))
@pytest.mark.parametrize("regex", [BLOWUP, GROWING], ids=["blowup", "growing"])
def test_every_matcher_call_answers_within_a_second(regex, call, info):
    compiled = compile_grammar(Grammar.from_regex(regex), info, cache=False)  # a cold lexer DFA
    matcher = Matcher(compiled)
    assert matcher.accept_bytes(b"ab")
    started = time.process_time()  # the pool's worker thread counts: it is in this process
    _calls(info)[call](matcher)
    elapsed = time.process_time() - started
    assert elapsed < ANSWER_WITHIN_S * BUDGETS_SPENT.get(call, 1), elapsed
    _budget_error(matcher)


@pytest.mark.parametrize("regex,text", [
    (BLOWUP, b"b" * 2000),  # was 1.6 s, then the DFA's 256 MiB memory budget spent for good
    (GROWING, b"a" * 20000),  # 0.2 s: a state per byte, each larger than the last
], ids=["blowup", "growing"])
def test_accept_past_the_build_budget_is_the_error_state(regex, text, info):
    matcher = Matcher(compile_grammar(Grammar.from_regex(regex), info, cache=False))
    assert matcher.accept_bytes(b"a")
    steps = matcher.native.num_steps
    assert not matcher.accept_bytes(text)
    assert "building lexer DFA states" in matcher.error and "mask step budget" in matcher.error
    assert str(50 * 1000 * 1000) in matcher.error
    assert matcher.native.num_steps == steps  # a refused accept changes nothing
    mask = jaxguide.allocate_token_bitmask(1, info.logits_width)
    matcher.fill_next_token_bitmask(mask)  # the error state: EOS only
    assert {t for t in range(info.vocab_size) if mask[0, t >> 5] >> (t & 31) & 1} == \
        set(info.eos_token_ids)


def test_completion_search_stops_at_the_build_budget(info):
    # The fuzzer's hang: a breadth-first search over thousands of ever larger lexer states
    # (max_states=2**40: no bound of its own) ran for 6 s. It stops at the budget, as at its
    # max_states: None, and the matcher is unharmed.
    matcher = Matcher(compile_grammar(Grammar.from_regex(GROWING), info))
    assert matcher.accept_bytes(b"a")
    started = time.process_time()
    assert matcher.shortest_lexeme_completion(2**40) is None
    assert time.process_time() - started < ANSWER_WITHIN_S
    assert matcher.error is None
    assert matcher.accept_bytes(b"b,c")
    # The same knob as the mask's: a bigger budget lets a search of 20 copies finish.
    smaller = compile_grammar(Grammar.from_regex(GROWING.replace("{1000}", "{10}")), info)
    for budget, found in ((None, False), (10**10, True)):
        matcher = Matcher(smaller, mask_step_budget=budget)
        assert matcher.accept_bytes(b"a")
        completion = matcher.shortest_lexeme_completion(2**40)
        assert matcher.error is None and (completion is not None) == found
    assert matcher.accept_bytes(completion) and matcher.is_accepting()


def test_ignored_terminal_exit_search_is_bounded(info):
    # The compile-time search for the bytes that may follow an %ignore'd lexeme built the DFA
    # states of BLOWUP unmetered: 8 s, and the DFA's memory budget was spent for good.
    lark = f'start: "x"+\nW: /{BLOWUP}/\n%ignore W\n'
    started = time.process_time()
    compiled = compile_grammar(Grammar.from_lark(lark), info)
    assert time.process_time() - started < ANSWER_WITHIN_S
    matcher = Matcher(compiled)
    assert matcher.accept_bytes(b"xx"), matcher.error
    assert matcher.is_accepting()
