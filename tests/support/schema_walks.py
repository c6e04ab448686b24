"""Seeded walks through a JSON Schema grammar's masks, checked against `jsonschema`: every
finished text validates, no walk dead-ends or meets a token the mask wrongly left out."""

from __future__ import annotations

from jaxguide.testing import JsonSchemaOracle, check_soundness


def assert_schema_walks(compiled, schema, info, *, seed: str, walks: int = 40,
                        min_eos: int = 10) -> None:
    report = check_soundness(compiled, JsonSchemaOracle(schema), walks=walks, seed=seed)
    assert not report.invalid, report.invalid[0].describe(compiled)
    assert not report.dead_ends, info.decode_bytes(report.dead_ends[0].tokens)
    assert not report.blocked and report.eos_walks >= min_eos
