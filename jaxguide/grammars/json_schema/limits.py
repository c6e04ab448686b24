"""Every budget of the JSON Schema compiler, in one place.

Design note. The compiler refuses what it cannot bound: each constant below caps one resource
(grammar size, lexer size, automaton size, recursion), and exceeding it is a clear
`JsonSchemaError` naming the keyword and its JSON pointer ("cannot be enforced" ones become a
warning, and the keyword is ignored, with `lenient=True`). Whitespace caps are not errors:
they bound what the grammar generates. Each comment: the default, what it bounds, and what
exceeding it costs the user.
"""

from __future__ import annotations

# --- grammar size --------------------------------------------------------------------------
# 20,000 rules in one grammar (the whole lowered schema). Beyond: JsonSchemaError "the grammar
# exceeds 20000 rules" (not lenient-able).
MAX_RULES = 20_000

# 4,096: the largest counted repetition: `{m,n}` in a pattern, maxItems/minItems, minLength/
# maxLength together with a pattern or as a property-name length. Beyond: "keyword ... cannot
# be enforced" (pattern: "repetition count N above 4096"; maxItems/minItems: "N above 4096";
# lenient: the bound is dropped).
MAX_COUNT = 4096

# 4,096: minLength/maxLength that a pattern does not imply are enforced by the lexer's product
# of the pattern with a length window (native/lexer/regex_product.h), when the pattern's DFA
# states (over code points) x (the larger bound + 1) is at most this; the product over JSON
# string units is then well under the lexer's own budget ("a lookahead product needs more than
# 65536 states", a RegexError when the grammar is compiled). Beyond: "keyword 'maxLength' (or
# 'minLength') cannot be enforced (minLength/maxLength together with a pattern they are not
# implied by: P pattern states x N lengths is above 4,096)".
MAX_LENGTH_PATTERN_PRODUCT = 4096

# 256 units per string lexeme: a length-bounded free string longer than this is lexed as
# chunks of exactly 256 units plus a last chunk (exact, whatever the length). Not an error.
STRING_CHUNK = 256
# 16 chunks: a string's chunks past its minLength are counted in binary (O(log) rules) from
# this many on (fewer: one nonterminal per chunk). Never an error.
MIN_COUNTED_CHUNKS = 16

# 2,560,000 code points: the longest minLength / maxLength of a free string (chunks of
# STRING_CHUNK units: a chain of one or two rules per chunk up to minLength, up to MAX_RULES / 2
# of them; past it, a binary count), checked before any rule is built. Beyond: "keyword 'maxLength' (or 'minLength') cannot be enforced (N above
# the 2560000 limit)" (lenient: the bound is dropped).
MAX_CHUNKED_LENGTH = STRING_CHUNK * (MAX_RULES // 2)

# enum / const literal sets. More than 256 numbers are one terminal (not one rule each); a
# string set whose plain alternation is longer than 32,768 characters is written as a trie
# (shared prefixes once). Neither is an error. 4,000,000 characters: the largest literal-set
# regex. Beyond: JsonSchemaError "enum too large: N values need a regex of M characters"
# (not lenient-able; the lexer's NFA budget would refuse it anyway).
MANY_LITERALS = 256
LITERAL_TRIE_CHARS = 32_768
MAX_LITERAL_REGEX = 4_000_000

# 256 alternatives after distributing allOf over anyOf/oneOf. Beyond: JsonSchemaError "more
# than 256 alternatives after distributing allOf over anyOf/oneOf" (not lenient-able).
MAX_ALLOF_PRODUCT = 256

# 64 numbers in an enum/const set whose complement is taken (`not`, an overlapping oneOf): one
# open interval per gap. Beyond: "keyword 'not' cannot be enforced (the complement of more
# than 64 numbers)".
MAX_EXCLUDED_NUMBERS = 64

# 40 levels of `$ref` / allOf / anyOf nesting without structure (a property, an item) in
# between. Beyond: JsonSchemaError "$ref/allOf nesting too deep" (a reference cycle without
# structure).
MAX_SCHEMA_NESTING = 40

# 128 levels of values inside values (object properties, array items) in the schema (a
# recursive `$ref` counts once: lowering memoizes it). Beyond: JsonSchemaError "values nested
# more than 128 levels deep" (not lenient-able). Python's recursion limit is not reached before
# (about 3 frames per level); if it ever is, the error is "schema nesting too deep for
# Python's recursion limit", naming the deepest value reached.
MAX_VALUE_NESTING = 128

# 64: the largest min/maxProperties counted in the rules (at most 64 x properties states).
# Beyond: "keyword 'maxProperties' (or 'minProperties') cannot be enforced (above 64)"
# (lenient: the count is not enforced).
MAX_PROPERTY_COUNT = 64

# 2,000: a bounded integer range with `multipleOf: k` (k not of the form 2^a 5^b) is
# enumerated when it holds at most this many multiples. Beyond (or unbounded): a digit
# automaton (below).
MAX_ENUMERATED_MULTIPLES = 2000
# 20,000: an unbounded multipleOf k = 2^a 5^b is lowered by its last digits, which lists the
# 10^max(a, b) / k possible endings (k = 64: 15,625; k = 128: 78,125). Beyond: a digit
# automaton (below).
MAX_LAST_DIGIT_ENDINGS = 20_000
# 100,000: the states of a digit automaton's product (`digit_automata`: the number range's DFA
# times the residues modulo the lcm of the scaled steps, before minimizing; about 1.5 s of
# Python at the limit), built for every multipleOf the two forms above do not take (a step with
# a range, a decimal step such as 2.5, two steps in one allOf, `not multipleOf`). Beyond:
# "keyword 'multipleOf' cannot be enforced (digit automaton over 100,000 states)" (lenient:
# ignored).
MAX_DIGIT_AUTOMATON_STATES = 100_000
# 1,000,000: the product states of all the digit automata of one schema (each alternative of
# a oneOf / allOf distribution may build its own; about 15 s of Python at the limit). Beyond:
# "keyword 'multipleOf' cannot be enforced (digit automata over 1,000,000 states in one
# schema)" (lenient: ignored).
MAX_DIGIT_AUTOMATON_TOTAL = 1_000_000

# 3: the items an array must hold, each matching its own schema (`contains` and "some item
# fails items" complements): an item may meet any subset of them, so the array rules have
# 2^3 states per position and 2^3 - 1 witness alternatives. Beyond: "keyword 'not' cannot be
# enforced (more than 3 items that must fail or match ...)" (lenient: none is required).
MAX_ARRAY_WITNESSES = 3
# 4: the undeclared members an object must hold, each "some member fails ..." of a complement
# (`object_witnesses`), when there are several (or one beside propertyNames): the member rules
# track the set met, 2^4 states per member state. Beyond: "keyword 'not' cannot be enforced
# (more than 4 undeclared members that must each fail ...)" (lenient: none is required).
MAX_OBJECT_WITNESSES = 4
# 4,096: the states of an array with a counted `contains` (minContains / maxContains): (the
# positions counted + 1) x (the largest count that matters + 1). Beyond: "keyword 'contains'
# cannot be enforced (counting ... needs N states)" (lenient: the counts are ignored).
MAX_CONTAINS_STATES = 4096
# 6: the key patterns of those witnesses' product (the object's patternProperties groups, the
# propertyNames patterns, the witnesses' key patterns: 2^6 key classes), and 256 classes of
# members that meet witnesses (a key class meets up to 2^k - 1 subsets). Beyond: "keyword
# 'not' cannot be enforced" naming the budget (lenient: no witness is required).
MAX_WITNESS_PATTERNS = 6
MAX_WITNESS_CLASSES = 256

# --- patternProperties key automata ----------------------------------------------------------
# 4 groups of patternProperties with different schemas (2^4 key classes). Beyond: "keyword
# 'patternProperties' cannot be enforced (more than 4 patternProperties with different
# schemas)" (lenient: extra keys are any undeclared name with a free value).
MAX_PATTERN_GROUPS = 4
# 20,000 NFA states per pattern automaton. Beyond: the same error ("pattern automaton too
# large"); when it is a `pattern` searched in a value check, "keyword 'pattern' cannot be
# enforced".
MAX_NFA_STATES = 20_000
# 400 states of the product DFA of the key patterns and declared names. Beyond (or past
# MAX_KEY_REGEX): the key classes are written as the lexer's lookahead products (`products`)
# when each pattern's own DFA is within 400 states; else "keyword 'patternProperties' cannot be
# enforced (key automaton too large)".
MAX_DFA_STATES = 400
# 2,000 states of the product DFA of a `format` and a `pattern` on one string (the regex it
# becomes is capped by MAX_KEY_REGEX too). Beyond: "keyword 'format' cannot be enforced
# (together with pattern: ...)" (lenient: the format is ignored, the pattern kept).
MAX_INTERSECTION_STATES = 2000
# 2 patterns of one allOf kept apart from its `pattern` (their product written back as one
# pattern would pass MAX_KEY_REGEX, or they have lookaheads), for the lexer's lookahead product.
# Beyond: "allOf: cannot merge two different 'pattern' values (... more than 2 kept apart)"
# (also with lenient=True: a schema's alternatives would otherwise build product automata
# by the thousand).
MAX_KEPT_APART_PATTERNS = 2
# 60,000 characters of one key-class regex built by state elimination. Beyond: the lookahead
# products above (for patternProperties); "... (key regex too large)" elsewhere.
MAX_KEY_REGEX = 60_000
# 300 live states of a key-class or pattern-product automaton written back as a regex (state
# elimination is quadratic in them, and past about 300 its regex is mostly over MAX_KEY_REGEX
# anyway). Beyond: the same lookahead products as past MAX_KEY_REGEX (no error); for allOf
# patterns they count against MAX_KEPT_APART_PATTERNS.
MAX_REGEX_STATES = 300

# 4,096 states of one object's members in any order (`property_order="any"`): (2^required,
# or required + 1 where they are counted) x (counted other members + 1) x 2. Beyond:
# "property_order 'any': an object with R required members and min/maxProperties needs N
# states, above 4096".
MAX_ANY_ORDER_STATES = 4096
# Up to 6 required members of an any-order object, the grammar tracks which came (2^6 sets,
# within MAX_ANY_ORDER_STATES); beyond, it counts them (the matcher's distinct keys make the
# count exact). Never an error.
MAX_TRACKED_REQUIRED = 6
# ... while the rules that takes (sets x (required + 3)) fit in 8,192 for the whole schema;
# objects past it count their required members.
MAX_TRACKED_RULES = 8192

# --- whitespace layouts (bounds on the generated text, never errors) --------------------------
# "flexible": at most 24 whitespace characters in a row on each side of `{ } [ ] ,`.
MAX_FLEXIBLE_WS = 24
# "flexible": at most 4 whitespace characters on each side of `:`.
MAX_COLON_WS = 4
# An int indent: nesting deeper than 32 levels generates nothing (the value has no rules).
MAX_INDENT_DEPTH = 32
# The largest indent: `whitespace` must be "flexible", "compact" or an int 0..16; otherwise
# JsonSchemaError "whitespace must be 'flexible', 'compact' or an indent 0..16".
MAX_INDENT = 16
