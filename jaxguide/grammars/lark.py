"""The Lark front-end: Lark grammar text -> the grammar IR handed to the native core.

Design note. The `lark` package does the heavy lifting of reading a grammar: its own loader
expands EBNF operators (`*`, `+`, `?`, `[...]`), templates, `%import` (from lark's bundled
`common.lark` or relative files), `%override`/`%extend`, terminal composition, `?rule`/`_rule`/
`!rule` and aliases, and turns string literals into anonymous terminals. What it returns — rules
over terminal and nonterminal names, terminals as (regex, flags) — is exactly the language
structure we need; tree shaping (inlining, aliases, filtering) does not change the language and
is dropped. This module lowers that to `GrammarIR`:

  * terminals: a regex in Python `re` syntax (flags folded in as a scoped group `(?i:...)`), and
    whether the terminal is *lazy*: a regex with a lazy quantifier (`*?`, `+?`, `??`,
    `{m,n}?`) matches its shortest match, so its lexeme ends at the first point where it
    matches (first-match semantics), like lark's dynamic lexer does with `re.match`.
    Other terminals take maximal munch: a lexeme ends only where the next byte cannot
    continue it.
  * rules: `lhs -> rhs` with symbols as ints: `s < num_terminals` is terminal `s`, otherwise
    nonterminal `s - num_terminals`.
  * `ignore`: terminals that may appear between any two terminals (and at both ends).

lark's `common.ESCAPED_STRING` is written with a lookbehind; lookaround is not regular, so it is
replaced by the lookaround-free regex with the same shortest-match lexemes
(`LOOKAROUND_REWRITES`). Any other lookaround is rejected by the native lexer with a clear
error. Errors from lark (syntax, undefined names, duplicates) become `GrammarError` with the
line and column when they can be located. `%declare` (terminals produced by a post-lexer) has no
meaning for byte-level matching and is rejected.

Budgets (`lark_budgets`, rows "Lark ..." of `jaxguide.limits`). lark's loader is linear, its
compile step is not: it distributes inline groups (`a (b|c)` -> `a b | a c`, so `(x|y)~20` is 2^20
rules), recurses once per nesting level, and instantiates templates without end when one passes
itself a growing argument. So before `grammar.compile`, the text's bracket nesting is bounded
(GrammarError at the bracket), `~` counts are bounded, template instances are counted by a
simulation of lark's, and when lark would write more than MAX_DISTRIBUTED_SYMBOLS the rule
trees are rewritten: the largest parts of each oversized sequence move into helper rules
`__jaxguide_group_<n>` (same language). Grammars within the budget reach lark untouched. Any
RecursionError that still escapes lark becomes a GrammarError; the recursion limit is never
changed.
"""

from __future__ import annotations

import functools
import re

from jaxguide.errors import GrammarError
from jaxguide.grammars import lark_budgets, lark_json
from jaxguide.grammars.ir import GrammarIR, TerminalIR

# Terminals of lark's bundled grammars and of the grammars we test against (ASSETS.md) whose
# regexes use lookaround, keyed by the regex lark produces -> (a lookaround-free regex,
# forbidden_next, may_end_before: see TerminalIR). Each was checked to describe the same
# lexemes with Python's `re.match` semantics (tests/test_grammar.py), except where noted.
LOOKAROUND_REWRITES: dict[str, tuple[str, str, str]] = {
    # common.ESCAPED_STRING: a quote, then characters other than newline, ended by the first
    # quote that is not escaped (preceded by an even number of backslashes).
    r'".*?(?<!\\)(\\\\)*?"': (r'"(?:[^"\\\n]|\\[^\n])*"', "", ""),
    # lark.lark STRING: the same, then an optional `i` flag (re.match takes it: `?` is greedy).
    r'".*?(?<!\\)(\\\\)*?"(?:i)?': (r'"(?:[^"\\\n]|\\[^\n])*"i?', "", ""),
    # lark.lark REGEXP: `/`, a non-empty body in which `\/` and `\\` are escapes (a lone
    # backslash is a body character), the first unescaped `/`, then flags. (re.match can also
    # backtrack to read a final `\/` as a backslash and the closing slash when no later slash
    # closes the regexp; jaxguide always reads it as an escape.)
    r'\/(?!\/)(\\\/|\\\\|[^\/])*?\/[imslux]*': (r'\/(?:\\[\s\S]|[^\/\\])+\/[imslux]*', "", ""),
    # sqlpp LINE_COMMENT: `--` not followed by `+` (a hint), then the rest of the line. With
    # maximal munch the lexeme `--` alone ends only before a newline, the end, or `+` (which
    # the follow restriction forbids).
    "--(?!\\+)[^\n]*": ("--(?:[^\n+][^\n]*)?", "+", ""),
    # sqlpp BLOCK_COMMENT: `/*` not followed by `+`, up to the first `*/`.
    r"(?s:\/\*(?!\+).*?\*\/)": (r"(?s:\/\*(?:[^+].*?)?\*\/)", "", ""),
    # hcl2 STRING_CHARS: string characters and escapes in which no `${` / `%{` (template
    # interpolation or directive) starts; the lookahead stops the lexeme before `${`, `$${`,
    # `%{`, `%%{`: here a lexeme may end before any `$` / `%` (may_end_before; hcl2 allows
    # consecutive string parts, so the extra lexings spell the same strings) and may not be
    # followed by `{`.
    r'(?:(?!\$\$\{)(?!\$\{)(?!%%\{)(?!%\{)[^"\\]|\\.|(?:\$(?!\$?\{))|(?:%(?!%?\{)))+': (
        r'(?:(?:[^"\\$%]|\\.|[$%]+(?:[^"\\$%{]|\\.))+[$%]*|[$%]+)', "{", "$%"),
}

LOOKAROUND = re.compile(r"\(\?<?[=!]")


def _locate(text: str, name: str, definition: int = 0) -> tuple[int | None, int | None]:
    """Line and column (1-based) of `name` in grammar text, if found.

    With definition=0, its first use; with definition=n, its n-th definition (`name:` at the
    start of a line, with the `?`, `!`, `_` prefixes and `.priority` suffix allowed).
    """
    if definition:
        pattern = (r"(?m)^[ \t]*[?!]?(?P<name>" + re.escape(name)
                   + r")(?:\.\d+)?[ \t]*(?:\{[^}]*\})?[ \t]*:")
        matches = list(re.finditer(pattern, text))
        if len(matches) < definition:
            return None, None
        start = matches[definition - 1].start("name")
    else:
        match = re.search(r"(?<![\w.])" + re.escape(name) + r"(?!\w)", text)
        if match is None:
            return None, None
        start = match.start()
    line = text.count("\n", 0, start) + 1
    column = start - (text.rfind("\n", 0, start) + 1) + 1
    return line, column


def _grammar_error(error: Exception, text: str) -> GrammarError:
    message = str(error).strip()
    line = getattr(error, "line", None)
    column = getattr(error, "column", None)
    if isinstance(line, int) and line < 0:
        line = column = None
    if line is None:
        where = re.search(r"at line (\d+) column (\d+)", message)
        if where:
            line, column = int(where.group(1)), int(where.group(2))
    if line is None:
        name = re.search(r"(?:Rule|Terminal|Template)s? '([^']+)'", message)
        if name:
            duplicate = "defined more than once" in message
            line, column = _locate(text, name.group(1), definition=2 if duplicate else 0)
    first_line = message.split("\n")[0]
    return GrammarError(f"invalid Lark grammar: {first_line}", line, column)


def _terminal_variants(term) -> list[TerminalIR]:
    """The IR terminal(s) of a lark terminal: one, or one per group of top-level alternatives
    with different trailing lookaheads (see `lower_lookaround`)."""
    from lark.lexer import PatternStr

    pattern = term.pattern
    regex = pattern.to_regexp() if not isinstance(pattern, PatternStr) else re.escape(
        pattern.value)
    flags = "".join(sorted(set(pattern.flags) - {"u"}))
    variants = lower_lookaround(regex)
    out = []
    for k, (variant, forbidden_next, may_end_before) in enumerate(variants):
        if flags:
            variant = f"(?{flags}:{variant})"
        name = term.name if len(variants) == 1 else f"{term.name}__{k}"
        out.append(TerminalIR(name=name, regex=variant, lazy=has_lazy_quantifier(variant),
                              forbidden_next=forbidden_next, may_end_before=may_end_before))
    return out


def _split_top_level_alternatives(regex: str) -> list[str]:
    """`a|b(c|d)|[|]` -> ['a', 'b(c|d)', '[|]'] (escapes, classes and groups respected)."""
    parts, depth, in_class, start, i = [], 0, False, 0, 0
    while i < len(regex):
        c = regex[i]
        if c == "\\":
            i += 2
            continue
        if in_class:
            if c == "]":
                in_class = False
        elif c == "[":
            in_class = True
            if regex[i + 1:i + 2] == "]":  # `[]...]`: a leading ] is a member
                i += 1
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif c == "|" and depth == 0:
            parts.append(regex[start:i])
            start = i + 1
        i += 1
    parts.append(regex[start:])
    return parts


def _trailing_negative_lookahead(alternative: str) -> tuple[str, str] | None:
    """`X(?!C)` where C matches single ASCII characters only -> (X, the characters of C)."""
    if not alternative.endswith(")"):
        return None
    for start in range(len(alternative) - 1, -1, -1):
        if not alternative.startswith("(?!", start):
            continue
        inner, prefix = alternative[start + 3:-1], alternative[:start]
        try:
            if re.compile(inner).groups or LOOKAROUND.search(prefix + inner):
                return None
            from re import _parser as sre_parse  # Python >= 3.11
            if sre_parse.parse(inner).getwidth() != (1, 1):
                return None
            # The class must not match anything outside ASCII (the restriction is per byte).
            if any(re.fullmatch(inner, chr(c)) for c in (0xA0, 0xE9, 0x100, 0x4E00, 0x1F600)):
                return None
            re.compile(prefix)
        except (re.error, ImportError):
            continue
        return prefix, "".join(chr(c) for c in range(128) if re.fullmatch(inner, chr(c)))
    return None


def lower_lookaround(regex: str) -> list[tuple[str, str, str]]:
    """Removes lookaround the native lexer cannot run, where an exact equivalent exists.

    Returns variants (regex, forbidden_next, may_end_before): the terminal's lexemes are those
    of any variant, and a lexeme of a variant may not be followed by a character of its
    forbidden_next (what a trailing negative lookahead such as `=(?!=|>)` says about the next
    lexeme); may_end_before: see TerminalIR. Known
    patterns come from `LOOKAROUND_REWRITES`; a trailing `(?!C)` on top-level alternatives
    (C: single ASCII characters) becomes a follow restriction; alternatives with different
    restrictions become different variants. Anything else is returned unchanged, and the
    native lexer rejects it with a clear error.
    """
    if regex in LOOKAROUND_REWRITES:
        return [LOOKAROUND_REWRITES[regex]]
    if not LOOKAROUND.search(regex):
        return [(regex, "", "")]
    groups: dict[str, list[str]] = {}
    for alternative in _split_top_level_alternatives(regex):
        lowered = _trailing_negative_lookahead(alternative) or (alternative, "")
        if LOOKAROUND.search(lowered[0]):
            return [(regex, "", "")]
        groups.setdefault(lowered[1], []).append(lowered[0])
    return [("|".join(alternatives) if len(alternatives) == 1 else
             "(?:" + "|".join(alternatives) + ")", forbidden, "")
            for forbidden, alternatives in groups.items()]


def has_lazy_quantifier(regex: str) -> bool:
    """True if the regex has a lazy quantifier (parsed with Python's own regex parser)."""
    try:
        from re import _parser as sre_parse  # Python >= 3.11
    except ImportError:  # pragma: no cover
        import sre_parse  # type: ignore[no-redef]
    try:
        parsed = sre_parse.parse(regex)
    except re.error:
        return False  # the native lexer reports the syntax error with its position
    lazy_op = sre_parse.MIN_REPEAT

    def walk(items) -> bool:
        for op, arg in items:
            if op is lazy_op:
                return True
            for value in (arg if isinstance(arg, (tuple, list)) else (arg,)):
                if isinstance(value, sre_parse.SubPattern) and walk(value):
                    return True
                if isinstance(value, (tuple, list)):
                    for inner in value:
                        if isinstance(inner, sre_parse.SubPattern) and walk(inner):
                            return True
        return False

    return walk(parsed)


_SPECIAL_PREFIX = "JAXGUIDE_SPECIAL_TOKEN_"
_SPECIAL_REFERENCE = re.compile(r"<\|[^|\s]+\|>|<\[\d+\]>")


def _replace_special_tokens(text: str) -> tuple[str, dict[str, str]]:
    """Replaces special-token references (`<|im_end|>`, `<[128009]>`) in rule bodies — outside
    strings, regexes and comments — by terminals `JAXGUIDE_SPECIAL_TOKEN_<k>` defined at the
    end. Returns the new text and {terminal name: reference}."""
    if "<|" not in text and "<[" not in text:
        return text, {}
    out, names, i, n = [], {}, 0, len(text)
    while i < n:
        c = text[i]
        if c == '"' or (c == "/" and text[i + 1:i + 2] != "/"):  # a string or a regex literal
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
            continue
        if text.startswith("//", i):  # a comment, to the end of the line
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(text[i:j])
            i = j
            continue
        match = _SPECIAL_REFERENCE.match(text, i)
        if match:
            reference = match.group(0)
            name = next((k for k, v in names.items() if v == reference), None)
            if name is None:
                name = f"{_SPECIAL_PREFIX}{len(names)}"
                names[name] = reference
            out.append(f" {name} ")
            i = match.end()
            continue
        out.append(c)
        i += 1
    if any(name in text for name in names):
        raise GrammarError(f"names starting with {_SPECIAL_PREFIX} are reserved")
    definitions = "".join(f'\n{name}: "\\x00{k}"' for k, name in enumerate(names))
    return "".join(out) + definitions + "\n", names


@functools.lru_cache(maxsize=256)
def cached_lark_to_ir(text: str, start: str) -> GrammarIR:
    return lark_to_ir(text, start)


def lark_to_ir(text: str, start: str = "start", import_paths: list[str] | None = None
               ) -> GrammarIR:
    """Lowers Lark grammar text to a `GrammarIR` (see the module docstring; `%json {...}` rule
    bodies: `lark_json`)."""
    if isinstance(text, str) and "%json" in text:
        return _lark_with_json_to_ir(text, start, import_paths)
    return _plain_lark_to_ir(text, start, import_paths)


def _plain_lark_to_ir(text: str, start: str, import_paths: list[str] | None) -> GrammarIR:
    text, specials, terminals, rules, ignore_names = _compile_lark(text, start, import_paths)
    ir_terminals, variants_of = _lower_terminals(terminals, specials)
    nonterminals, ir_rules = _lower_rules(text, start, rules, variants_of, len(ir_terminals))
    ignore = []
    for name in ignore_names:
        if name not in variants_of:
            raise GrammarError(f"%ignore names {name}, which is not a terminal")
        ignore.extend(variants_of[name])
    return GrammarIR(
        terminals=tuple(ir_terminals),
        nonterminals=tuple(nonterminals),
        rules=tuple(ir_rules),
        start=0,
        ignore=tuple(sorted(set(ignore))),
    )


def _lark_with_json_to_ir(text: str, start: str, import_paths: list[str] | None) -> GrammarIR:
    """`lark_to_ir` of a text with `%json` bodies: placeholders, then the schemas embedded;
    errors located in the original text."""
    text, schemas, shifts = lark_json.extract_json_schemas(text)
    try:
        ir = _plain_lark_to_ir(text, start, import_paths)
    except GrammarError as e:
        if e.line is None or not shifts:
            raise
        message = str(e).rsplit(" (line ", 1)[0]
        raise GrammarError(message, lark_json.original_line(e.line, shifts), e.column) from None
    return lark_json.embed_schemas(ir, schemas) if schemas else ir


def _too_deep(loading: bool) -> GrammarError:
    """The error for a RecursionError inside lark (never raised past this module)."""
    cause = ("groups nested too deeply in an %import'ed grammar, or grammars that %import each "
             "other" if loading else "groups or templates nested too deeply")
    return GrammarError(f"grammar nested too deeply: lark ran out of Python stack ({cause}; at "
                        f"most {lark_budgets.MAX_GROUP_NESTING} levels are supported)")


def _compile_lark(text: str, start: str, import_paths: list[str] | None):
    """Step 1: lark's own parse and compile of the text (special-token names replaced first).

    Returns (rewritten text, special names, lark terminals, lark rules, ignored terminal names).
    """
    from lark.exceptions import LarkError
    from lark.load_grammar import load_grammar

    if not isinstance(text, str):
        raise GrammarError(f"grammar text must be str, not {type(text).__name__}")
    lark_budgets.check_nesting(text)
    text, specials = _replace_special_tokens(text)
    try:
        grammar, _ = load_grammar(text, "<grammar>", import_paths or [], False)
    except LarkError as e:
        if isinstance(getattr(e, "orig_exc", None), RecursionError):  # lark's VisitError
            raise _too_deep(loading=True) from None
        raise _grammar_error(e, text) from None
    except OSError as e:  # an %import lark could not find (it also tries the working directory)
        raise GrammarError(f"%import of a grammar that cannot be read: {e}") from None
    except RecursionError:  # an %import'ed grammar nested too deeply (the text is checked)
        raise _too_deep(loading=True) from None
    except MemoryError:
        raise
    except Exception as e:  # noqa: BLE001 - lark failing while it describes a syntax error
        raise GrammarError(f"the grammar has a syntax error that lark could not describe "
                           f"(its report failed: {type(e).__name__}: {e})") from None
    declared = [name for name, (tree, _) in grammar.term_defs if tree is None]
    if declared:
        line, column = _locate(text, declared[0])
        raise GrammarError(f"%declare is not supported (terminal {declared[0]} has no "
                           "pattern; jaxguide matches bytes, there is no post-lexer)",
                           line, column)
    if start not in {name for name, *_ in grammar.rule_defs}:
        raise GrammarError(f"the start rule {start!r} is not defined")
    try:
        lark_budgets.check_repeat_counts(grammar)
        lark_budgets.bound_distribution(grammar, lark_budgets.check_templates(grammar))
        terminals, rules, ignore_names = grammar.compile([start], set())
    except LarkError as e:
        if isinstance(getattr(e, "orig_exc", None), RecursionError):  # lark's VisitError
            raise _too_deep(loading=False) from None
        raise _grammar_error(e, text) from None
    except RecursionError:
        raise _too_deep(loading=False) from None
    return text, specials, terminals, rules, ignore_names


def _lower_terminals(terminals, specials: dict[str, str]
                     ) -> tuple[list[TerminalIR], dict[str, list[int]]]:
    """Step 2: the IR terminals, and the IR terminal ids (variants) of each lark terminal."""
    ir_terminals: list[TerminalIR] = []
    variants_of: dict[str, list[int]] = {}
    for term in terminals:
        if term.name in specials:  # matched by token id only: a regex that matches nothing
            variants = [TerminalIR(name=specials[term.name], regex=r"[^\s\S]",
                                   special=specials[term.name])]
        else:
            variants = _terminal_variants(term)
        variants_of[term.name] = list(range(len(ir_terminals),
                                            len(ir_terminals) + len(variants)))
        ir_terminals.extend(variants)
    return ir_terminals, variants_of


def _lower_rules(text: str, start: str, rules, variants_of: dict[str, list[int]],
                 num_terminals: int) -> tuple[list[str], list[tuple[int, tuple[int, ...]]]]:
    """Step 3: the nonterminal names (start first) and the IR rules.

    A lark terminal lowered to several IR terminals (variants) is referenced through a
    nonterminal with one rule per variant.
    """
    term_index = {name: ids[0] for name, ids in variants_of.items() if len(ids) == 1}
    nonterminals: list[str] = [start]
    nt_index = {start: 0}
    for name in [rule.origin.name for rule in rules] + [
            f"__{name}_variants" for name, ids in variants_of.items() if len(ids) > 1]:
        if name not in nt_index:
            nt_index[name] = len(nonterminals)
            nonterminals.append(name)
    ir_rules = []
    for name, ids in variants_of.items():
        if len(ids) > 1:
            term_index[name] = num_terminals + nt_index[f"__{name}_variants"]
            ir_rules.extend((nt_index[f"__{name}_variants"], (i,)) for i in ids)
    for rule in rules:
        rhs = []
        for symbol in rule.expansion:
            if symbol.is_term:
                if symbol.name not in term_index:
                    line, column = _locate(text, symbol.name)
                    raise GrammarError(f"terminal {symbol.name} is used but not defined",
                                       line, column)
                rhs.append(term_index[symbol.name])
            else:
                if symbol.name not in nt_index:
                    line, column = _locate(text, symbol.name)
                    raise GrammarError(f"rule {symbol.name} is used but not defined",
                                       line, column)
                rhs.append(num_terminals + nt_index[symbol.name])
        ir_rules.append((nt_index[rule.origin.name], tuple(rhs)))
    return nonterminals, ir_rules
