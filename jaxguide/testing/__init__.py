"""Testing tools: a generative soundness checker for any grammar jaxguide compiles.

`check_soundness(compiled, oracle, walks=..., seed=...)` walks the masks at random and validates
every finished text with an independent oracle (`JsonSchemaOracle`, `RegexOracle`,
`LarkOracle`); `check_instances` checks that valid texts are never blocked. Needs the `testing`
extra (`regress`, `jsonschema[format-nongpl]`).
"""

from jaxguide.testing.generators import random_regex
from jaxguide.testing.oracles import (
                                      JsonSchemaOracle,
                                      LarkOracle,
                                      OracleUndecided,
                                      RegexOracle,
                                      ecma_search,
                                      json_loads,
)
from jaxguide.testing.soundness import (
                                      LONG_WALK,
                                      SHORT_WALK,
                                      InvalidWalk,
                                      SoundnessReport,
                                      check_instances,
                                      check_soundness,
                                      locate_bad_step,
)
from jaxguide.testing.triggered_oracle import (
                                      PythonCallsOracle,
                                      TriggeredOracle,
                                      choice_body,
                                      json_body,
                                      tool_call_oracle,
)
from jaxguide.testing.walks import TOKEN_CLASSES, Walk, WalkConfig, random_walk

__all__ = [
    "InvalidWalk", "JsonSchemaOracle", "LONG_WALK", "LarkOracle", "OracleUndecided",
    "PythonCallsOracle", "RegexOracle",
    "SHORT_WALK", "SoundnessReport", "TOKEN_CLASSES", "TriggeredOracle", "Walk", "WalkConfig",
    "check_instances", "check_soundness", "choice_body", "ecma_search", "json_body", "json_loads",
    "locate_bad_step", "random_regex", "random_walk", "tool_call_oracle",
]
