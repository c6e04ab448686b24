"""JSON Schema -> grammar IR (`Grammar.from_json_schema`); the coverage table and the exact
semantics are in `jaxguide.grammars.json_schema.compiler`'s design note."""

from jaxguide.grammars.json_schema.compiler import (
                                                    ENFORCED_FORMATS,
                                                    JsonSchemaError,
                                                    json_schema_to_ir,
)

__all__ = ["ENFORCED_FORMATS", "JsonSchemaError", "json_schema_to_ir"]
