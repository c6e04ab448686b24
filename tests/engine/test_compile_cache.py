"""The compiled-grammar and schema caches: a repeated grammar is the same CompiledGrammar, a
different grammar, tokenizer or option never is, and clear_caches() starts afresh."""

from __future__ import annotations

import warnings

import pytest
from support.real_tokenizers import real_tokenizer

import jaxguide
from jaxguide import Grammar, Matcher, compile_grammar
from jaxguide.engine import compiled_grammar

SCHEMA = {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "integer"}},
          "required": ["a"]}


@pytest.fixture(scope="module")
def info():
    return real_tokenizer("llama3_tiktoken")


def test_repeated_schema_compiles_once(info):
    jaxguide.clear_caches()
    first = compile_grammar(Grammar.from_json_schema(SCHEMA), info)
    again = compile_grammar(Grammar.from_json_schema(dict(SCHEMA)), info)
    assert again is first
    assert compile_grammar(Grammar.from_json_schema(SCHEMA), info, cache=False) is not first


def test_key_order_and_options_are_part_of_the_key(info):
    jaxguide.clear_caches()
    base = Grammar.from_json_schema(SCHEMA)
    reordered = {"type": "object", "properties": {"b": {"type": "integer"},
                                                  "a": {"type": "string"}}, "required": ["a"]}
    assert Grammar.from_json_schema(reordered).ir != base.ir  # property order is generated
    assert Grammar.from_json_schema(SCHEMA, whitespace="compact").ir != base.ir
    assert Grammar.from_json_schema(SCHEMA, additional_properties_default=False).ir != base.ir
    assert Grammar.from_json_schema(SCHEMA).ir is base.ir
    compiled = compile_grammar(base, info)
    assert compile_grammar(Grammar.from_json_schema(reordered), info) is not compiled


def test_other_tokenizer_gets_its_own_compile(info):
    other = real_tokenizer("mistral_sp_v1")
    grammar = Grammar.from_regex("[a-z]+")
    assert compile_grammar(grammar, info) is not compile_grammar(grammar, other)
    assert compile_grammar(grammar, other).tokenizer_info is other


def test_clear_caches_compiles_anew_and_old_grammars_keep_working(info):
    grammar = Grammar.from_json_schema(SCHEMA)
    before = compile_grammar(grammar, info)
    jaxguide.clear_caches()
    after = compile_grammar(grammar, info)
    assert after is not before
    matcher = Matcher(before)
    for token in info.encode('{"a": "x"}'):
        assert matcher.accept_token(token)
    assert matcher.is_accepting()


def test_cache_is_bounded(info, monkeypatch):
    monkeypatch.setattr(compiled_grammar._compiled_cache, "entries", 2)
    jaxguide.clear_caches()
    grammars = [compile_grammar(Grammar.from_regex(f"x{i}"), info) for i in range(3)]
    assert compile_grammar(Grammar.from_regex("x2"), info) is grammars[2]
    assert compile_grammar(Grammar.from_regex("x0"), info) is not grammars[0]  # evicted


def test_lenient_schemas_warn_every_time():
    schema = {"type": "array", "unevaluatedItems": False, "contains": {"type": "object"}}
    for _ in range(2):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            Grammar.from_json_schema(schema, lenient=True)
        assert caught


def test_errors_are_not_cached():
    for _ in range(2):
        with pytest.raises(jaxguide.GrammarError):
            Grammar.from_json_schema({"type": "object", "minProperties": "x"})
