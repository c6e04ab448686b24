"""The one import of the C++ core (`jaxguide._native`, built by CMake / Bazel into the package
root), with the Python exception classes the core raises registered on it. Every other engine
module reaches the core through here."""

from jaxguide import _native
from jaxguide.errors import (
    BudgetExceededError,
    GrammarError,
    MatcherBusyError,
    TokenizerError,
)
from jaxguide.grammars.json_schema import (
    pin_common_leaves,
    pinned_key_suffixes,
    pinned_terminal_regexes,
)
from jaxguide.grammars.json_schema.automata import (
    use_native_elimination,
    use_native_product,
)
from jaxguide.grammars.json_schema.native_lowering import use_native_lowering

_native._register_error_classes(TokenizerError, BudgetExceededError, GrammarError)
_native._register_matcher_busy_error(MatcherBusyError)
# The JSON Schema front-end's product automata (key classes, pattern intersections) are built by
# the core's subset construction once it is loaded (the front-end never imports the core).
use_native_product(_native.nfa_product)
use_native_elimination(_native.eliminate_states)  # and written back as regexes
# The JSON front-end's own terminals (strings, numbers, punctuation), in nearly every grammar it
# lowers, are compiled once per process (native/lexer/pinned_terminals.h).
_native.pin_terminal_regexes(list(pinned_terminal_regexes()))
# And the ends of its key terminals: a key is then read without the regex parser.
_native.pin_terminal_suffixes(*map(list, pinned_key_suffixes()))
# Its leaf recipes of the plain scalar types (Python: the front-end's own table).
pin_common_leaves()
# Its common shapes (objects, arrays, local references, leaves, anyOf of those) are lowered by
# the core, to the IR its own emitter builds (native/json_schema/schema_lowering.h).
use_native_lowering(_native.lower_json_schema, _native.configure_json_schema_lowering)

__all__ = ["_native"]
