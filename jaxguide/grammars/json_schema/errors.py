"""The error of the JSON Schema compiler."""

from __future__ import annotations

from jaxguide.errors import GrammarError


class JsonSchemaError(GrammarError):
    """A JSON Schema is invalid or uses a keyword that cannot be enforced.

    Attributes:
      pointer: JSON pointer of the offending schema location ("" = the root).
      keyword: the keyword at fault, or None.
    """

    def __init__(self, message: str, pointer: str = "", keyword: str | None = None):
        where = f" at {pointer or '#'}" if True else ""
        super().__init__(f"JSON Schema: {message}{where}")
        self.pointer = pointer or "#"
        self.keyword = keyword


class SchemaNestingError(JsonSchemaError):
    """A schema nests deeper than a nesting budget (`limits.MAX_SCHEMA_NESTING`,
    `limits.MAX_VALUE_NESTING`): never a reason to call a oneOf's branches overlapping."""


class InvalidSchemaError(JsonSchemaError):
    """A keyword's value has the wrong JSON type (`required: [1]`, `minItems: null`): the schema
    is invalid wherever it appears, so a oneOf holding it is not merely unprovable."""
