"""A table of JSON Schema test cases, name -> (schema, texts), each compiled once (Llama-3
tokenizer) and checked against `jsonschema`: `compiled`, `accepts` (the matcher takes the
whole text and may end there), `valid` (the validator the schema's `$schema` names, 2020-12 by
default; with `formats`, formats asserted), and the checks every case table runs on them."""

from __future__ import annotations

import json
from collections.abc import Callable

import jsonschema

import jaxguide
from jaxguide import Grammar, Matcher
from support.real_tokenizers import real_tokenizer


class SchemaCases:
    def __init__(self, cases: dict, *, formats: bool = False,
                 check_grammar: Callable[[Grammar], None] | None = None):
        self.cases = cases
        self.formats = formats
        self.check_grammar = check_grammar  # called on each grammar before it is compiled
        self._compiled: dict[str, jaxguide.CompiledGrammar] = {}

    def compiled(self, name: str) -> jaxguide.CompiledGrammar:
        if name not in self._compiled:
            grammar = Grammar.from_json_schema(self.cases[name][0])
            if self.check_grammar is not None:
                self.check_grammar(grammar)
            self._compiled[name] = jaxguide.compile_grammar(
                grammar, real_tokenizer("llama3_tiktoken"))
        return self._compiled[name]

    def accepts(self, name: str, text: str) -> bool:
        matcher = Matcher(self.compiled(name))
        return matcher.accept_bytes(text.encode()) and matcher.is_accepting()

    def valid(self, name: str, value) -> bool:
        schema = self.cases[name][0]
        validator = jsonschema.validators.validator_for(schema, jsonschema.Draft202012Validator)
        checker = validator.FORMAT_CHECKER if self.formats else None
        return validator(schema, format_checker=checker).is_valid(value)

    def check_instances(self, name: str) -> None:
        """The case's texts are accepted exactly when valid; they include both kinds (so the
        check can fail both ways)."""
        verdicts = {text: self.valid(name, json.loads(text)) for text in self.cases[name][1]}
        assert any(verdicts.values()) and not all(verdicts.values()), verdicts
        for text, ok in verdicts.items():
            assert self.accepts(name, text) == ok, (text, ok)

    def check_accepted_validates(self, name: str, value) -> None:
        """Soundness on one generated value: if the matcher accepts its JSON text, it is valid."""
        text = json.dumps(value)
        if self.accepts(name, text):
            assert self.valid(name, value), text
