"""Grammars used by the matcher tests and benchmarks: real ones from packages, and tricky ones."""

from __future__ import annotations

import re

from jaxguide.models.assets import package_file

# Any JSON value, in Lark (RFC 8259 structure; lark's common.ESCAPED_STRING / SIGNED_NUMBER
# lexemes; whitespace between tokens).
JSON_LARK = r"""
?start: value
?value: object | array | string | SIGNED_NUMBER | "true" | "false" | "null"
array  : "[" [value ("," value)*] "]"
object : "{" [pair ("," pair)*] "}"
pair   : string ":" value
string : ESCAPED_STRING
%import common.ESCAPED_STRING
%import common.SIGNED_NUMBER
%import common.WS
%ignore WS
"""

TRICKY = {
    # Ambiguity: the same sentence has many parses.
    "ambiguous": 'start: x+\nx: "a" | "a" "a" | "aa" | x x\n',
    # Nullable rules everywhere.
    "nullable": 'start: a b a "!"\na: "x"? \nb: a a | "y"*\n',
    # Left recursion with operators.
    "left_recursive": 'start: e\ne: e "+" t | e "-" t | t\nt: t "*" f | f\n'
                      'f: NUMBER | "(" e ")"\n%import common.NUMBER\n%ignore " "\n',
    # Right recursion.
    "right_recursive": 'start: l\nl: "[" l? "]" l?\n',
    # Case-insensitive keywords competing with identifiers.
    "keywords": 'start: stmt+\nstmt: "select"i NAME ";" | NAME "=" NAME ";"\n'
                'NAME: /[a-z_][a-z0-9_]*/\n%ignore /[ \\n]+/\n',
    # Tokens spanning terminals, terminals that share prefixes, unicode literals.
    "spanning": 'start: "ab" "c" | "a" "bd" | "é" "日本" | WORD "." WORD\nWORD: /[a-z]+/\n',
    # Maximal munch decides: A takes every "a", so "a" "ab" (= "aab") is not a sentence.
    "munch": 'start: A B | A "c"\nA: /a+/\nB: /ab/\n',
    # A lazy terminal (first match) next to a greedy one.
    "lazy": 'start: COMMENT NUMBER\nCOMMENT: /<!--.*?-->/\nNUMBER: /[0-9]+/\n',
}


def outlines_grammar(name: str) -> str:
    with open(package_file("outlines", "grammars", name)) as f:
        return f.read()


# A Python subset without indentation blocks (python.lark needs a post-lexer for INDENT /
# DEDENT, which byte-level matching cannot have) nor line continuations: simple statements,
# expressions with the real precedence levels, calls, subscripts, literals, comprehensions,
# lambdas and comments.
PYTHON_SUBSET = r"""
start: (_NEWLINE | simple_stmt)*
simple_stmt: small_stmt (";" small_stmt)* _NEWLINE
?small_stmt: expr_stmt | "pass" -> pass | "return" [testlist] -> return
           | "import" dotted_name ("as" NAME)? -> import
           | "from" dotted_name "import" NAME ("," NAME)* -> from_import
           | "del" exprlist -> del | "assert" test ["," test] -> assert
expr_stmt: testlist (AUGASSIGN testlist | ("=" testlist)*)
AUGASSIGN: "+=" | "-=" | "*=" | "/=" | "//=" | "%=" | "**=" | "|=" | "&=" | "^="
dotted_name: NAME ("." NAME)*
?testlist: test ("," test)* [","]
?exprlist: expr ("," expr)* [","]
?test: or_test ["if" or_test "else" test] | lambdef
lambdef: "lambda" [NAME ("," NAME)*] ":" test
?or_test: and_test ("or" and_test)*
?and_test: not_test ("and" not_test)*
?not_test: "not" not_test -> not | comparison
?comparison: expr (COMP_OP expr)*
COMP_OP: "<" | ">" | "==" | ">=" | "<=" | "!=" | "in" | "not" " "+ "in" | "is" | "is" " "+ "not"
?expr: xor_expr ("|" xor_expr)*
?xor_expr: and_expr ("^" and_expr)*
?and_expr: shift_expr ("&" shift_expr)*
?shift_expr: arith_expr (("<<" | ">>") arith_expr)*
?arith_expr: term (("+" | "-") term)*
?term: factor (("*" | "/" | "//" | "%" | "@") factor)*
?factor: ("+" | "-" | "~") factor | power
?power: atom_expr ["**" factor]
?atom_expr: atom_expr "(" [arguments | comprehension] ")" -> call
          | atom_expr "[" subscript "]" -> getitem
          | atom_expr "." NAME -> getattr
          | atom
?atom: "(" [testlist | comprehension] ")" -> tuple
     | "[" [testlist | comprehension] "]" -> list
     | "{" [dictitems | dictcomp] "}" -> dict
     | NAME | NUMBER | STRING+ | "None" | "True" | "False" | "..."
arguments: argument ("," argument)* [","]
?argument: test | NAME "=" test | "*" test | "**" test
?subscript: test | [test] ":" [test] [":" [test]]
comprehension: test comp_for
dictcomp: test ":" test comp_for
comp_for: "for" exprlist "in" or_test ["if" or_test]
dictitems: test ":" test ("," test ":" test)* [","]
NAME: /[A-Za-z_][A-Za-z0-9_]*/
NUMBER: /0[xX][0-9a-fA-F]+|(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?j?/
STRING: /[rRbBuU]?("([^"\\\n]|\\.)*"|'([^'\\\n]|\\.)*')/
COMMENT: /#[^\n]*/
_NEWLINE: /\n/
%ignore /[ \t]+/
%ignore COMMENT
"""

# Real grammars from installed packages (ASSETS.md): (package, path inside it).
BUNDLED = {
    "sqlpp": ("lark_sqlpp", "sqlpp.lark"),
    "hcl2": ("hcl2", "hcl2.lark"),
    "lark": ("lark", "grammars/lark.lark"),
}


def bundled_grammar(name: str) -> str:
    """The grammar's text; hcl2's heredoc terminals, whose closing delimiter is a regex
    backreference (not regular: jaxguide rejects it clearly), get the fixed delimiter EOT."""
    package, path = BUNDLED[name]
    with open(package_file(package, *path.split("/"))) as f:
        text = f.read()
    if name == "hcl2":
        lines = []
        for line in text.splitlines():
            heredoc = re.match(r"(HEREDOC_TEMPLATE(_TRIM)?)\s*:", line)
            if heredoc:
                opener = "<<-" if heredoc.group(2) else "<<"
                line = (heredoc.group(1) + ": /" + opener
                        + r"EOT\r?\n(?:(?:.|\n)*?\r?\n)??\s*EOT\r?\n/")
            lines.append(line)
        text = "\n".join(lines) + "\n"
    return text
