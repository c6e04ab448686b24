"""Every work budget of jaxguide, Python and C++, in one table.

Each super-linear step of jaxguide runs under a budget and stops with a clear error (or, where
noted, falls back to a slower exact path) instead of hanging or exhausting memory. `BUDGETS`
lists each one: its default, what it bounds, what exceeding it costs the user, where it is
defined and how to change it. The constants themselves stay where the code that uses them
lives; tests/test_limits.py reads every `where` and fails if a default here disagrees with the
code, and checks that the README's table is `markdown_table()`.

This module is data only: it imports nothing from jaxguide.
"""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class Budget:
    """One work budget.

    Attributes:
      name: what it is called in errors and docs.
      default: its default value (in `unit`s).
      unit: "states", "bytes", "seconds", ...
      bounds: the work or memory it bounds.
      exceeded: what the user sees when it is exceeded.
      where: where the default is defined: `path/to/file.h:kName` (C++), `module:NAME` (a
        Python constant) or `module:callable(param=)` (a parameter default).
      setting: how to change it ("" when fixed).
    """

    name: str
    default: int | float
    unit: str
    bounds: str
    exceeded: str
    where: str
    setting: str = ""


_BUDGET_ERROR = "BudgetExceededError"
_MATCHER_ERROR = ("the matcher's error state: an EOS-only mask, the reason in `Matcher.error` "
                  "(the other rows of a batch are unaffected)")
_SCHEMA_ERROR = ("JsonSchemaError naming the keyword and its JSON pointer (`lenient=True`: a "
                 "warning, and the keyword is not enforced)")

BUDGETS: tuple[Budget, ...] = (
    # --- compiling a grammar ------------------------------------------------------------------
    Budget("lexer DFA states", 1 << 17, "states",
           "the lazily built DFA of one grammar's terminals (built on use, while masks run)",
           f"{_BUDGET_ERROR} at compile time, or {_MATCHER_ERROR}",
           "native/lexer/lexer_dfa.h:kDefaultMaxStates"),
    Budget("lexer DFA memory", 256 << 20, "bytes", "the memory of that DFA's transition tables",
           "as for lexer DFA states", "native/lexer/lexer_dfa.h:kDefaultMaxMemoryBytes"),
    Budget("NFA instructions", 1 << 20, "instructions",
           "the compiled form of all terminal regexes of a grammar (counted repetitions unroll)",
           f"{_BUDGET_ERROR} at compile time", "native/lexer/nfa.h:kDefaultMaxInstructions"),
    Budget("regex nesting", 500, "levels", "group / repetition nesting depth of one regex",
           "GrammarError (RegexError) at the position", "native/lexer/regex_parser.h:"
           "kMaxRegexNestingDepth"),
    Budget("lookahead words", 1 << 16, "words",
           "literal words of a `(?!(?:w1|...|wn)T)(?:X)*T` lookahead (the lexer's one form: "
           "what JSON Schema keys other than the declared names compile to)",
           "GrammarError (RegexError) at the position", "native/lexer/regex_parser.h:"
           "kMaxLookaheadWords"),
    Budget("lookahead unit NFA", 4096, "states", "the NFA of X in such a lookahead form",
           "GrammarError (RegexError) at the position", "native/lexer/except_words.h:"
           "kMaxUnitNfaStates"),
    Budget("lookahead unit DFA", 256, "states", "the DFA of X* in such a lookahead form",
           "GrammarError (RegexError) at the position", "native/lexer/except_words.h:"
           "kMaxUnitDfaStates"),
    Budget("lookahead product part NFA", 1 << 18, "states",
           "the NFA of each regex of a `(?=(?:A)T)(?!(?:C)T)(?:B)T` product (what a JSON Schema "
           "pattern with minLength/maxLength it does not imply compiles to)",
           "GrammarError (RegexError) at the position", "native/lexer/regex_product.h:"
           "kMaxProductPartNfaStates"),
    Budget("lookahead product part DFA", 1 << 16, "states",
           "the DFA of each such regex; for a length bound `X{m,n}` whose unit X is a prefix "
           "code (JSON string units), X's DFA: the bound is counted as the product meets it, "
           "so its states count against the product's budget",
           "GrammarError (RegexError) at the position", "native/lexer/regex_product.h:"
           "kMaxProductPartDfaStates"),
    Budget("lookahead product", 1 << 16, "states", "the product automaton of such a form",
           "GrammarError (RegexError) at the position", "native/lexer/regex_product.h:"
           "kMaxProductStates"),
    Budget("grammar symbols", 1 << 20, "symbols", "terminals + nonterminals of one grammar",
           "GrammarError", "native/parser/grammar.h:kMaxSymbols"),
    Budget("grammar rule cores", 1 << 24, "dotted rules", "the sum of rule lengths of a grammar",
           "GrammarError", "native/parser/grammar.h:kMaxCores"),
    Budget("ignored-terminal exit search", 4096, "lexer states",
           "the compile-time search for the bytes that may follow an %ignore'd lexeme",
           "none: beyond it the terminal is allowed everywhere (no dead-end check for it)",
           "native/matcher/compiled_grammar.h:kExitSearchStates"),
    Budget("ignored-terminal exit search work", 50 * 1000 * 1000, "lexer steps",
           "the lexer DFA states those searches build, for all %ignore'd terminals of a grammar "
           "(4 steps per NFA instruction visited)",
           "none: as beyond the ignored-terminal exit search",
           "native/matcher/compiled_grammar.h:kExitSearchBuildBudget"),
    Budget("UTF-8 class cache", 16 << 20, "bytes",
           "the process-wide cache of byte-level automata of Unicode classes",
           "none: beyond it the cache starts afresh (classes in use stay alive)",
           "native/lexer/utf8_class.h:kSharedUtf8ClassBytes"),
    Budget("Lark distribution", 1 << 17, "symbols",
           "rows + symbols lark writes for one grammar when it distributes inline groups into "
           "rows (`a (b or c)`: two rows) and writes out `x~n`",
           "none: sequences beyond the Lark sequence bound move parts into helper rules (same "
           "language)", "jaxguide.grammars.lark_budgets:MAX_DISTRIBUTED_SYMBOLS"),
    Budget("Lark sequence bound", 64, "rows",
           "once over the Lark distribution budget: the rows (and 16x as many symbols) one "
           "sequence or `x~n` may distribute to", "none: its largest parts become helper rules",
           "jaxguide.grammars.lark_budgets:MAX_SEQUENCE_ALTERNATIVES"),
    Budget("Lark nesting", 64, "levels", "nesting of `(`, `[`, `{` in Lark grammar text "
           "(lark's loader recurses per level)", "GrammarError at the bracket",
           "jaxguide.grammars.lark_budgets:MAX_GROUP_NESTING"),
    Budget("Lark template instances", 4096, "instances",
           "distinct template + argument lists lark instantiates", "GrammarError",
           "jaxguide.grammars.lark_budgets:MAX_TEMPLATE_INSTANCES"),
    Budget("Lark repetition count", 0xFFFFFFFE, "repetitions", "n in `x~n` / `x~m..n`",
           "GrammarError at the count (in terminals, large counts meet the NFA budget)",
           "jaxguide.grammars.lark_budgets:MAX_REPEAT_COUNT"),
    # --- tokenizers ---------------------------------------------------------------------------
    Budget("vocabulary size", 1 << 24, "tokens", "tokens of one tokenizer", "TokenizerError",
           "native/tokenizer/tokenizer_info.h:kMaxVocabSize"),
    Budget("token trie nodes", (1 << 24) - 1, "nodes", "the token trie of one tokenizer",
           "TokenizerError", "native/tokenizer/token_trie.h:kMaxNodes"),
    Budget("token length", 0xFFFF, "bytes", "the bytes of one token", "TokenizerError",
           "native/tokenizer/token_trie.h:kMaxTokenBytes"),
    Budget("GGUF key-value pairs", 1 << 20, "pairs", "the metadata read from one GGUF file",
           "TokenizerError (a corrupt or hostile file)",
           "jaxguide.engine.gguf_metadata:_MAX_KEY_VALUES"),
    # --- masks --------------------------------------------------------------------------------
    Budget("mask step budget", 50 * 1000 * 1000, "lexer steps",
           "one mask: bytes pushed through lexer threads while walking the token trie, plus "
           "the lexer DFA states built meanwhile (4 steps per NFA instruction visited) and the "
           "Earley sets (4 steps per item added or found again: ambiguous grammars); every "
           "other matcher call (accepts, `is_token_allowed`, `is_accepting`, fast-forward, "
           "`Matcher()` and `reset`, a BatchMatcher's accepts) gets as much for the DFA states "
           "it builds, and as much again plus 256 steps per byte it reads for its Earley sets",
           _MATCHER_ERROR + "; an accept past it refuses its token",
           "native/matcher/matcher.h:kDefaultMaskStepBudget",
           "Matcher(..., mask_step_budget=)"),
    Budget("Earley set items", 1 << 18, "items", "one Earley set (ambiguous grammars grow it)",
           _MATCHER_ERROR, "native/parser/earley_parser.h:kDefaultMaxItemsPerSet"),
    Budget("prediction blocks", 1 << 20, "dotted rules",
           "per compiled grammar: the shared prediction blocks (what an Earley set predicts, "
           "made on first use), all together, with the nonterminals of the keys that name them",
           "none: later sets hold their predictions as items of their own (slower, same "
           "answers)", "native/parser/grammar.h:kMaxBlockCores"),
    Budget("spare Earley set storage", 8 << 20, "bytes",
           "process-wide: the Earley set arrays of matchers that went away, kept (with their "
           "capacity) for new matchers to start from",
           "none: storage beyond it is freed", "native/parser/earley_parser.h:kMaxSpareBytes"),
    Budget("first-lexeme masks", 32, "masks",
           "per compiled grammar: the masks shared by every matcher that has scanned nothing "
           "yet (no lexeme, or the first one in progress), keyed by the lexer states",
           "none: masks of other such states are walked each time",
           "native/matcher/compiled_grammar.h:kMaxFirstLexemeMasks"),
    Budget("mask cache entries", 8192, "entries",
           "per compiled grammar: cached lexer-only mask parts, keyed (trie subtree, lexer state)",
           "none: beyond it masks are computed without the cache",
           "native/matcher/compiled_grammar.h:kMaxEntries"),
    Budget("mask cache memory", 128 << 20, "bytes", "the memory of those cached parts",
           "none: as for mask cache entries", "native/matcher/compiled_grammar.h:kMaxBytes"),
    Budget("compiled-grammar cache", 32, "entries",
           "compile_grammar's cache of recent compiled grammars, keyed (grammar IR, tokenizer); "
           "each holds its lexer DFA and mask cache (bounded above)",
           "none: the least recently used is dropped (compiled again when next asked for)",
           "jaxguide.engine.compiled_grammar:COMPILED_CACHE_ENTRIES",
           "compile_grammar(..., cache=False); jaxguide.clear_caches()"),
    Budget("schema cache", 256, "entries",
           "Grammar.from_json_schema's cache of recent (schema JSON text, options) -> IR",
           "none: the least recently used is dropped",
           "jaxguide.grammars.grammar:SCHEMA_CACHE_ENTRIES", "jaxguide.clear_caches()"),
    Budget("string-text proof work", 1 << 17, "NFA instructions",
           "one attempt to prove, on the NFA, that a lexer state reads any JSON string text "
           "(made where the slice check's exploration falls short; results memoized per "
           "grammar; after 8 attempts out of budget a grammar stops trying)",
           "none: the mask walks the tokens the string slice would have taken",
           "native/matcher/string_text.h:kMaxQueryWork"),
    Budget("string-text proof groups", 4096, "thread groups",
           "the groups of one terminal's threads one such proof explores",
           "none: as for string-text proof work", "native/matcher/string_text.h:kMaxGroupStates"),
    Budget("retained Earley sets", 4096, "sets",
           "per matcher: Earley sets of the last mask walk kept for the next one",
           "none: the next mask recomputes them", "native/matcher/matcher.h:kMaxRetainedSets"),
    Budget("uniqueItems search", 512, "byte steps",
           "per token a mask or accept checks: the search for a continuation under which an "
           "item that could still repeat an earlier one of a unique array differs from them "
           "(JSON Schema `uniqueItems`; white space runs and states reached again are not "
           "searched twice)",
           "none: the token is allowed unproven (a possible dead end later, never a repeated "
           "item)", "native/matcher/matcher.h:kUniqueSearchSteps"),
    Budget("forced bytes", 1 << 16, "bytes",
           "one `compute_ff_bytes` / `compute_ff_tokens` look-ahead (a grammar can force an "
           "endless run of bytes; `max_bytes` is clamped to it)",
           "none: the forced bytes stop there", "jaxguide.engine.matcher:MAX_FORCED_BYTES"),
    Budget("lexeme completion search", 4096, "lexer states",
           "`Matcher.shortest_lexeme_completion` (used by the soundness walks)",
           "none: returns None (also once the DFA states it builds pass the mask step budget)",
           "jaxguide.engine.matcher:Matcher.shortest_lexeme_completion"
           "(max_states=)", "shortest_lexeme_completion(max_states=)"),
    # --- JSON Schema --------------------------------------------------------------------------
    Budget("JSON Schema rules", 20_000, "rules", "the grammar one schema lowers to",
           "JsonSchemaError (also with `lenient=True`)",
           "jaxguide.grammars.json_schema.limits:MAX_RULES"),
    Budget("JSON Schema counted repetition", 4096, "repetitions",
           "counted repetitions in patterns, maxItems, minItems",
           _SCHEMA_ERROR, "jaxguide.grammars.json_schema.limits:MAX_COUNT"),
    Budget("length x pattern", 4096, "states x lengths",
           "minLength/maxLength that a pattern does not imply: the pattern's DFA states times "
           "(the larger bound + 1), checked before the lexer builds their product",
           _SCHEMA_ERROR, "jaxguide.grammars.json_schema.limits:MAX_LENGTH_PATTERN_PRODUCT"),
    Budget("free string length", 2_560_000, "code points",
           "minLength / maxLength of a string without pattern (256-unit chunks, a chain up to "
           "minLength, counted in binary past it; checked before any rule is built)", _SCHEMA_ERROR,
           "jaxguide.grammars.json_schema.limits:MAX_CHUNKED_LENGTH"),
    Budget("allOf distribution", 256, "alternatives",
           "alternatives after distributing allOf over anyOf/oneOf, and after the "
           "complements of `not`, overlapping oneOf branches, if/then/else and dependencies",
           "JsonSchemaError (also with `lenient=True`)",
           "jaxguide.grammars.json_schema.limits:MAX_ALLOF_PRODUCT"),
    Budget("excluded numbers", 64, "numbers",
           "numbers of an enum/const set whose complement is taken (`not`, oneOf)",
           _SCHEMA_ERROR, "jaxguide.grammars.json_schema.limits:MAX_EXCLUDED_NUMBERS"),
    Budget("schema nesting", 40, "levels",
           "$ref / allOf / anyOf / oneOf nesting without structure in between",
           "JsonSchemaError (also with `lenient=True`)",
           "jaxguide.grammars.json_schema.limits:MAX_SCHEMA_NESTING"),
    Budget("JSON value nesting", 128, "levels",
           "values inside values (properties, items) in one schema; a recursive $ref counts "
           "once", "JsonSchemaError (also with `lenient=True`)",
           "jaxguide.grammars.json_schema.limits:MAX_VALUE_NESTING"),
    Budget("enum regex", 4_000_000, "characters",
           "the regex of one enum / const set (more than 256 numbers are one terminal; large "
           "string sets are a trie of shared prefixes)",
           "JsonSchemaError naming `enum` (also with `lenient=True`)",
           "jaxguide.grammars.json_schema.limits:MAX_LITERAL_REGEX"),
    Budget("counted properties", 64, "properties",
           "minProperties / maxProperties (the grammar counts properties explicitly)",
           _SCHEMA_ERROR, "jaxguide.grammars.json_schema.limits:MAX_PROPERTY_COUNT"),
    Budget("enumerated multiples", 2000, "multiples",
           "a bounded integer range under `multipleOf: k` (k not 2^a 5^b) is written out "
           "(past it: a digit automaton)",
           _SCHEMA_ERROR, "jaxguide.grammars.json_schema.limits:MAX_ENUMERATED_MULTIPLES"),
    Budget("last-digit multiples", 20_000, "endings",
           "an unbounded integer `multipleOf: k` (k = 2^a 5^b) is lowered by its possible last "
           "digits (10^max(a,b) / k of them; past it: a digit automaton)", _SCHEMA_ERROR,
           "jaxguide.grammars.json_schema.limits:MAX_LAST_DIGIT_ENDINGS"),
    Budget("digit automaton", 100_000, "states",
           "every other `multipleOf` (a step with a range, a decimal step, two steps in one "
           "allOf, `not multipleOf`): the number range's DFA times the residues modulo the "
           "steps' lcm, before minimizing", _SCHEMA_ERROR,
           "jaxguide.grammars.json_schema.limits:MAX_DIGIT_AUTOMATON_STATES"),
    Budget("digit automata per schema", 1_000_000, "states",
           "the product states of all the digit automata of one schema (one per alternative "
           "that needs one)", _SCHEMA_ERROR,
           "jaxguide.grammars.json_schema.limits:MAX_DIGIT_AUTOMATON_TOTAL"),
    Budget("array witnesses", 3, "items",
           "items an array must hold, each matching its own schema (`contains` and 'some item "
           "fails items' complements; 2^n states per position)", _SCHEMA_ERROR,
           "jaxguide.grammars.json_schema.limits:MAX_ARRAY_WITNESSES"),
    Budget("counted contains", 4096, "states",
           "an array with minContains / maxContains: (positions counted + 1) x (largest "
           "count that matters + 1)", _SCHEMA_ERROR,
           "jaxguide.grammars.json_schema.limits:MAX_CONTAINS_STATES"),
    Budget("object witnesses", 4, "members",
           "undeclared members an object must hold, each failing the `not` body of its own "
           "complement (2^n states per member state)", _SCHEMA_ERROR,
           "jaxguide.grammars.json_schema.limits:MAX_OBJECT_WITNESSES"),
    Budget("witness key patterns", 6, "patterns",
           "patterns in the key classes of an object with several witnesses (its "
           "patternProperties groups, propertyNames patterns, the witnesses' key patterns; "
           "2^n key classes)", _SCHEMA_ERROR,
           "jaxguide.grammars.json_schema.limits:MAX_WITNESS_PATTERNS"),
    Budget("witness member classes", 256, "classes",
           "classes of undeclared members that meet witnesses (a key class meets up to "
           "2^n - 1 subsets of them)", _SCHEMA_ERROR,
           "jaxguide.grammars.json_schema.limits:MAX_WITNESS_CLASSES"),
    Budget("patternProperties groups", 4, "groups",
           "patternProperties with different schemas (2^n key classes)", _SCHEMA_ERROR,
           "jaxguide.grammars.json_schema.limits:MAX_PATTERN_GROUPS"),
    Budget("key-class NFA", 20_000, "states",
           "the automaton of 'a key that matches none of these names / patterns'",
           _SCHEMA_ERROR, "jaxguide.grammars.json_schema.limits:MAX_NFA_STATES"),
    Budget("key-class DFA", 400, "states", "the determinized form of that automaton (past it, "
           "or past the regex budget, patternProperties key classes become lexer lookahead "
           "products while each pattern's own DFA is within it)",
           _SCHEMA_ERROR, "jaxguide.grammars.json_schema.limits:MAX_DFA_STATES"),
    Budget("key-class regex", 60_000, "characters", "the regex written for that automaton",
           _SCHEMA_ERROR, "jaxguide.grammars.json_schema.limits:MAX_KEY_REGEX"),
    Budget("key-class regex states", 300, "states",
           "live states of a key-class or pattern-product automaton written back as a regex "
           "(state elimination, quadratic)",
           "none: the lexer's lookahead product instead (patterns of one allOf: counted as "
           "kept apart)", "jaxguide.grammars.json_schema.limits:MAX_REGEX_STATES"),
    Budget("any-order object states", 4096, "states",
           "one object's members in any order (`property_order=\"any\"`): (2^required, or "
           "required + 1 past 6 required, which are then counted) x (counted other members "
           "+ 1) x 2, checked before its rules are built",
           "JsonSchemaError (also with `lenient=True`)",
           "jaxguide.grammars.json_schema.limits:MAX_ANY_ORDER_STATES"),
    Budget("patterns kept apart", 2, "patterns",
           "patterns of one allOf kept apart from its `pattern` for the lexer's lookahead "
           "product (their product regex too large, or lookaheads)",
           "JsonSchemaError naming `pattern` (also with `lenient=True`)",
           "jaxguide.grammars.json_schema.limits:MAX_KEPT_APART_PATTERNS"),
    Budget("leaf recipe cache", 4096, "entries",
           "lowered leaf schemas (scalar types, no subschema) kept process-wide, keyed by "
           "their keywords", "none: older leaves are normalized again",
           "jaxguide.grammars.json_schema.leaf_recipes:LEAF_RECIPE_ENTRIES"),
    Budget("leaf recipe key", 2048, "characters",
           "the keywords of one leaf schema kept as a recipe (a longer enum is not kept)",
           "none: the leaf is normalized each time", "jaxguide.grammars.json_schema.leaf_recipes:"
           "MAX_LEAF_KEY"),
    # --- triggered grammars (tool calls) -------------------------------------------------------
    Budget("trigger automaton", 4096, "states",
           "the product automaton of one free-text terminal of `Grammar.triggered` (free text "
           "up to a trigger, or free text without any trigger)",
           "GrammarError naming the triggers", "jaxguide.grammars.triggered:MAX_TRIGGER_STATES"),
    Budget("trigger regex", 200_000, "characters", "the regex written for that automaton",
           "GrammarError naming the triggers", "jaxguide.grammars.triggered:MAX_TRIGGER_REGEX"),
    Budget("tool schema cache", 4096, "entries",
           "lowered call schemas kept for later requests with the same tools",
           "none: older schemas are lowered again",
           "jaxguide.grammars.tool_calls:TAG_SCHEMA_CACHE_ENTRIES"),
    Budget("tool grammar cache", 64, "entries",
           "tool-call grammars kept per (tools, tool_choice, format, parallel)",
           "none: the grammar is built again", "jaxguide.grammars.tool_formats:"
           "TOOL_GRAMMAR_CACHE_ENTRIES"),
    # --- jobs ---------------------------------------------------------------------------------
    Budget("config base chain", 32, "files", "`base_config:` chains of YAML job configs",
           "ConfigError", "jaxguide.jobs.config:_MAX_BASE_DEPTH"),
    # --- the soundness checker (jaxguide.testing) ---------------------------------------------
    Budget("regex oracle time", 2.0, "seconds", "one `re.fullmatch` verdict (re backtracks)",
           "OracleUndecided (the walk is counted as undecided, never as valid)",
           "jaxguide.testing.oracles:RegexOracle(time_limit=)", "RegexOracle(time_limit=)"),
    Budget("Lark oracle time", 30.0, "seconds", "one lark Earley parse",
           "OracleUndecided", "jaxguide.testing.oracles:LarkOracle(time_limit=)",
           "LarkOracle(time_limit=)"),
)


def markdown_table() -> str:
    """The table as Markdown (the README holds a copy; a test keeps it current)."""
    lines = ["| budget | default | bounds | when exceeded | set with |",
             "|---|---:|---|---|---|"]
    for budget in BUDGETS:
        value = (f"{budget.default:,}" if isinstance(budget.default, int)
                 else f"{budget.default:g}")
        lines.append(f"| {budget.name} | {value} {budget.unit} | {budget.bounds} | "
                     f"{budget.exceeded} | {budget.setting or 'fixed'} |")
    return "\n".join(lines) + "\n"
