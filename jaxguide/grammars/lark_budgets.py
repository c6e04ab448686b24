"""Budgets of the Lark front-end, applied to a grammar before lark compiles it.

lark's own compile step (`Grammar.compile`) has super-linear behaviours that a short grammar text
can trigger; `jaxguide.grammars.lark` runs the checks and the rewrite here between lark's loader
(linear) and its compile step:

  * Distribution. lark's `SimplifyRule_Visitor` distributes every inline group of a sequence
    (`a (b|c) d` becomes the rows `a b d | a c d`), and `x~n` (n < 50) becomes `x x ... x`, so
    k groups of n alternatives make n^k rows (`("a"|...|"j")~6`: 10^6 rules, 25 s, 800 MB) and
    `((x~40)~40)~40` a row of 40^3 symbols. `bound_distribution` estimates, bottom-up, the rows
    and symbols each subtree distributes to (groups: sums; sequences: products; `x?`, `[x]`: one
    more row; `x*`, `x+`: a helper rule; `x~n`: as lark's `_generate_repeats` writes it). When the
    whole grammar stays within MAX_DISTRIBUTED_SYMBOLS nothing is changed (so the IR of every
    grammar we ship and test is byte-identical). Beyond it, each sequence (and `~` repetition)
    distributing to more than MAX_SEQUENCE_ALTERNATIVES rows or 16 times as many symbols keeps
    its smallest parts inline and moves the others into new rules `__jaxguide_group_<n>` (a
    repeated group: its atom); lark's output is then linear in the text. Substituting a
    nonterminal for a subexpression does not change the language, only the parse-tree shape,
    which jaxguide drops. In a template body, a moved part that mentions a template parameter
    becomes a template over the same parameters, used with them as arguments (so a template is
    never left out). Parts with an alias inside stay (lark refuses nested aliases).
  * Recursion. lark's loader and compile recurse once per nesting level (about 8 Python frames
    per level of a template body, 6 per `[...]`: the default recursion limit gives out near 120
    levels of a template body, 160 of `[...]`, 490 of `(...)`). `check_nesting` refuses more than
    MAX_GROUP_NESTING levels of `(`, `[`, `{` (outside strings, regexps and comments) with a
    GrammarError at the opening bracket; a RecursionError that still escapes lark (an
    `%import`ed file, imports that import each other) becomes a GrammarError in lark.py.
  * Instantiation. lark instantiates a template once per distinct argument list, recursively; a
    template that passes itself a growing argument (`t{x}: x | t{u{x}}`) never stops.
    `check_templates` simulates the instantiation and refuses more than MAX_TEMPLATE_INSTANCES.
  * Counted repetition `x~n` / `x~m..n` takes n up to MAX_REPEAT_COUNT (as regexes do): lark
    factors large counts in rules into log-many helper rules, and in terminals the count becomes
    a regex `{n}` that the native NFA budget bounds (BudgetExceededError). Beyond it lark's int()
    fails (ValueError past 4,300 digits) or its factoring recurses too deeply.
"""

from __future__ import annotations

import re

from jaxguide.errors import GrammarError

# lark's distribution may write this many symbols (each row counting one more) for the whole
# grammar; a grammar within it is compiled exactly as written. lark takes about 3.4 us per
# symbol (2^15 rows of 15 symbols: 1.7 s), so 2^17 keeps it near 0.5 s. Our corpus needs at most
# ~8,400 (sqlpp.lark; hcl2.lark has a sequence that distributes to 256 rows).
MAX_DISTRIBUTED_SYMBOLS = 1 << 17
# Beyond it, every sequence (or `x~n` repetition) distributing to more than this many rows, or
# 16 times as many symbols, has its largest parts moved into helper rules: 2^6, six optional
# items or three 4-way groups inline; each helper costs one nonterminal per use instead.
MAX_SEQUENCE_ALTERNATIVES = 64
# Nesting levels of `(`, `[` and `{` in a grammar text. At 64 levels lark's loader and compile
# use at most ~520 Python frames (a template body: 8 per level), leaving the rest of the default
# recursion limit (1000) to the caller; real grammars nest fewer than 10 levels.
MAX_GROUP_NESTING = 64
# Template instances (distinct template + arguments) of one grammar.
MAX_TEMPLATE_INSTANCES = 4096
# The largest n in `x~n` / `x~m..n` (Python's MAXREPEAT - 1, the native regex parser's bound).
MAX_REPEAT_COUNT = 0xFFFFFFFE

HOIST_PREFIX = "__jaxguide_group_"

# Tokens of lark's grammar language that may contain brackets (as lark's lexer reads them,
# without its ambiguous backtracking), then the brackets themselves.
_SCANNER = re.compile(r'"(?:\\.|[^"\\\n])*"i?|/(?!/)(?:\\.|[^/\\\n])*/[imslux]*|//[^\n]*'
                      r'|#[^\n]*|([(\[{])|[)\]}]')
_CAP = 1 << 60  # estimates saturate here
_REPEAT_BREAK = 50  # lark's REPEAT_BREAK_THRESHOLD: below it, x~m..n is written out


def _position(text: str, offset: int) -> tuple[int, int]:
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1


def check_nesting(text: str) -> None:
    """GrammarError if brackets nest deeper than MAX_GROUP_NESTING (at the opening bracket)."""
    depth = 0
    for match in _SCANNER.finditer(text):
        token = match.group(0)
        if token in ")]}":
            depth = max(depth - 1, 0)
        elif match.group(1):
            depth += 1
            if depth > MAX_GROUP_NESTING:
                line, column = _position(text, match.start())
                raise GrammarError(
                    f"grammar nested too deeply: more than {MAX_GROUP_NESTING} levels of "
                    f"parentheses, brackets or template braces ({token!r})", line, column)


def _repeat_count(token) -> int:
    """The int of a `~` NUMBER token; GrammarError beyond MAX_REPEAT_COUNT."""
    value = str(token)
    if len(value) > len(str(MAX_REPEAT_COUNT)) or int(value) > MAX_REPEAT_COUNT:
        line, column = getattr(token, "line", None), getattr(token, "column", None)
        raise GrammarError(f"the repetition count {value[:20]} of `~` is larger than "
                           f"{MAX_REPEAT_COUNT}", line, column)
    return int(value)


def check_repeat_counts(grammar) -> None:
    """GrammarError for a `~` count beyond MAX_REPEAT_COUNT, in rules and terminals (lark's int()
    of a count of thousands of digits raises ValueError; huge ones recurse in its factoring)."""
    from lark import Tree

    trees = [tree for _, _, tree, _ in grammar.rule_defs]
    trees += [tree for _, (tree, _) in grammar.term_defs if tree is not None]
    for tree in trees:
        for node in tree.iter_subtrees():  # iterative (lark's iter_subtrees keeps no recursion)
            if node.data == "expr" and len(node.children) >= 3:
                for token in node.children[2:]:
                    if not isinstance(token, Tree):
                        _repeat_count(token)


def _usages(tree) -> list:
    """The template usages of a rule tree, outermost first, as (name, [argument]) with an
    argument either a str (a symbol or literal) or a nested usage."""
    from lark import Tree

    def usage(node):
        name, *arguments = node.children
        return str(getattr(name, "name", name)), [argument(a) for a in arguments]

    def argument(node):
        while isinstance(node, Tree) and node.data == "value" and len(node.children) == 1:
            node = node.children[0]
        if isinstance(node, Tree) and node.data == "template_usage":
            return usage(node)
        if isinstance(node, Tree):
            return repr(node.children)
        return str(getattr(node, "name", node))

    return [usage(node) for node in tree.iter_subtrees_topdown()
            if node.data == "template_usage"]


def check_templates(grammar) -> dict[str, int]:
    """GrammarError if lark would create more than MAX_TEMPLATE_INSTANCES template instances
    (simulates its ApplyTemplates: one instance per distinct template and arguments); returns
    the number of instances of each template."""
    templates = {name: (tuple(params), _usages(tree))
                 for name, params, tree, _ in grammar.rule_defs if params}
    counts: dict[str, int] = {}
    if not templates:
        return counts
    seen: set[str] = set()
    queue: list[tuple[str, list[str]]] = []

    def instance(use, env: dict[str, str]) -> str:
        name, arguments = use
        name = env.get(name, name)
        keys = [instance(a, env) if isinstance(a, tuple) else env.get(a, a) for a in arguments]
        key = f"{name}{{{','.join(keys)}}}"
        if key not in seen:
            seen.add(key)
            if len(seen) > MAX_TEMPLATE_INSTANCES or len(key) > MAX_TEMPLATE_INSTANCES:
                raise GrammarError(
                    f"the templates of this grammar instantiate more than "
                    f"{MAX_TEMPLATE_INSTANCES} times (or without end), e.g. {key[:80]}")
            queue.append((name, keys))
        return key

    for name, params, tree, _ in grammar.rule_defs:
        if not params:
            for use in _usages(tree):
                instance(use, {})
    while queue:
        name, keys = queue.pop()
        counts[name] = counts.get(name, 0) + 1
        if name in templates and len(templates[name][0]) == len(keys):
            params, uses = templates[name]
            env = dict(zip(params, keys))
            for use in uses:
                instance(use, env)
    return counts


def bound_distribution(grammar, instances: dict[str, int]) -> int:
    """Hoists groups of `grammar.rule_defs` (in place) where lark would distribute them into
    more than MAX_DISTRIBUTED_SYMBOLS (`instances`: of each template, from `check_templates`);
    returns the number of hoisted groups."""
    if _Hoister(grammar, hoist=False).total(instances) <= MAX_DISTRIBUTED_SYMBOLS:
        return 0
    return _Hoister(grammar, hoist=True).run()


class _Hoister:
    """Estimates how far lark distributes `grammar.rule_defs` and, with hoist=True, rewrites
    them in place so that no sequence distributes to more than MAX_SEQUENCE_ALTERNATIVES rows
    or 16 times as many symbols (see the module docstring)."""

    def __init__(self, grammar, hoist: bool):
        from lark import Tree
        from lark.grammar import NonTerminal, RuleOptions

        self.tree_type, self.nonterminal, self.options_type = Tree, NonTerminal, RuleOptions
        self.rule_defs = grammar.rule_defs
        self.names = {name for name, *_ in self.rule_defs}
        self.counter = 0
        self.params: tuple = ()
        self.keep_all = False
        self.bound = ((MAX_SEQUENCE_ALTERNATIVES, 16 * MAX_SEQUENCE_ALTERNATIVES) if hoist
                      else (_CAP, _CAP))
        self.helpers = 0  # rows + symbols of lark's helper rules for `*`, `+` and `~`

    def total(self, instances: dict[str, int]) -> int:
        """Rows + symbols lark writes for the grammar (saturating)."""
        total = 0
        for name, params, tree, _ in self.rule_defs:
            self.helpers = 0
            rows, symbols = self.size(tree)
            total += (instances.get(name, 0) if params else 1) * (rows + symbols + self.helpers)
            if total > _CAP:
                return _CAP
        return total

    def run(self) -> int:
        for index in range(len(self.rule_defs)):  # hoisted rules are appended, already bounded
            _name, params, tree, options = self.rule_defs[index]
            self.params = tuple(params)
            self.keep_all = bool(options and options.keep_all_tokens)
            self.size(tree)
        return self.counter

    def _over(self, size: tuple[int, int]) -> bool:
        return size[0] > self.bound[0] or size[1] > self.bound[1]

    def size(self, node) -> tuple[int, int]:
        """(alternatives, symbols over all alternatives) of `node` after lark's distribution;
        hoists children of sequences and repetitions that would exceed the bounds."""
        if not isinstance(node, self.tree_type):
            return 1, 1
        data = node.data
        if data == "expansions":
            total_alternatives = total_symbols = 0
            for child in node.children:
                alternatives, symbols = self.size(child)
                total_alternatives += alternatives
                total_symbols += symbols
            return total_alternatives, total_symbols
        if data == "alias":
            return self.size(node.children[0])
        if data == "expansion":
            return self._sequence(node)
        if data == "expr":
            return self._expr(node)
        if data == "maybe":  # `[x]`: x or a placeholder row as long as x's longest alternative
            alternatives, symbols = self.size(node.children[0])
            return alternatives + 1, 2 * symbols
        return 1, 1  # value (a name, a literal, a template usage), literal ranges

    def _sequence(self, node) -> tuple[int, int]:
        sizes = [self.size(child) for child in node.children]
        alternatives, symbols = _product(sizes)
        if not self._over((alternatives, symbols)):
            return alternatives, symbols
        # Keep the smallest children while the product fits; hoist the rest.
        order = sorted(range(len(sizes)), key=lambda i: sizes[i])
        alternatives, symbols = 1, 0
        for i in order:
            a, s = sizes[i]
            if (a, s) != (1, 1) and self._hoistable(node.children[i]):
                if self._over((alternatives * a, symbols * a + s * alternatives)):
                    node.children[i] = self._hoist(node.children[i])
                    a, s = 1, 1
            alternatives, symbols = alternatives * a, symbols * a + s * alternatives
        return alternatives, symbols

    def _expr(self, node) -> tuple[int, int]:
        atom, op = node.children[0], str(node.children[1])
        a, s = self.size(atom)
        if op == "?":
            return a + 1, s
        if op in "*+":  # a recursive helper rule (2a rows), used as `helper | <empty>` / `helper`
            self.helpers = min(self.helpers + 3 * a + 2 * s, _CAP)
            return (2, 1) if op == "*" else (1, 1)
        counts = [_repeat_count(token) for token in node.children[2:]]
        low, high = counts[0], counts[-1]
        if high < low:
            return 1, 1  # lark reports the bad range
        use, cost = _repeat_size(a, s, low, high)
        if self._over(cost) and (a, s) != (1, 1) and self._hoistable(atom):
            node.children[0] = self._hoist(atom)
            use, cost = _repeat_size(1, 1, low, high)
        if cost is not use:  # helper rules of a factored repetition
            self.helpers = min(self.helpers + cost[0] + cost[1], _CAP)
        return use

    def _hoistable(self, node) -> bool:
        """Not a bare symbol, and no alias inside (lark refuses nested aliases: keep its error)."""
        return isinstance(node, self.tree_type) and node.data != "value" and not any(
            sub.data == "alias" for sub in node.iter_subtrees())

    def _hoist(self, node):
        """A new rule (or template) for `node`; returns the tree that refers to it."""
        while True:
            name = f"{HOIST_PREFIX}{self.counter}"
            self.counter += 1
            if name not in self.names:
                break
        self.names.add(name)
        Tree, NonTerminal = self.tree_type, self.nonterminal
        if node.data != "expansions":
            node = Tree("expansions", [node if node.data == "expansion" else
                                       Tree("expansion", [node])])
        used = {sub.name for sub in node.scan_values(lambda v: isinstance(v, NonTerminal))}
        params = self.params if used & set(self.params) else ()
        options = self.options_type(keep_all_tokens=self.keep_all,
                                    template_source=name if params else None)
        self.rule_defs.append((name, params, node, options))
        if not params:
            return Tree("value", [NonTerminal(name)])
        arguments = [Tree("value", [NonTerminal(p)]) for p in params]
        return Tree("value", [Tree("template_usage", [NonTerminal(name)] + arguments)])


def _product(sizes: list[tuple[int, int]]) -> tuple[int, int]:
    """(alternatives, symbols) of a sequence of parts of these sizes (saturating: stops growing
    far beyond the bounds, so that a long sequence of optionals costs no huge integers)."""
    alternatives, symbols = 1, 0
    for a, s in sizes:
        alternatives, symbols = (min(alternatives * a, _CAP),
                                 min(symbols * a + s * alternatives, _CAP))
    return alternatives, symbols


def _repeat_size(a: int, s: int, low: int, high: int
                 ) -> tuple[tuple[int, int], tuple[int, int]]:
    """The size (alternatives, symbols) of `x~low..high` where it is used, and the largest size
    lark distributes for it (in the use or in helper rules), with x of size (a, s)."""
    if high < _REPEAT_BREAK:  # the sequences x^n, low <= n <= high, written out in the use
        sizes = [_product([(a, s)] * n) for n in range(low, high + 1)]
        use = (sum(size[0] for size in sizes), sum(size[1] for size in sizes))
        return use, use
    # Factored into helper rules whose rows repeat x up to 5 times (lark's SMALL_FACTOR_
    # THRESHOLD); the use is one or two helper symbols.
    return (1, 1 if low == high else 2), _product([(a, s)] * 5)
