"""`import jaxguide` stays cheap: it imports neither JAX (tests/test_layout.py) nor `jsonschema`.

With jsonschema's format extra installed (the test extra), `import jsonschema` imports
`rfc3987_syntax`, which builds a Lark parser at import time: 0.5-2 s on these machines, which
was nearly all of `import jaxguide`. jaxguide imports it on first use
(`jaxguide.grammars.json_schema.dialect.import_jsonschema`), which a schema with a concrete
value to check (`enum`, `const`, `propertyNames`) needs, and a plain schema does not.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

SLOW = ("jsonschema", "rfc3987_syntax", "jax")


def _run(script: str) -> str:
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_import_jaxguide_imports_no_jsonschema():
    loaded = _run(f"""
        import sys
        import jaxguide
        jaxguide.Grammar.from_json_schema({{"type": "object", "properties": {{
            "a": {{"type": "string", "maxLength": 8}}}}, "required": ["a"]}})
        print([m for m in {SLOW!r} if m in sys.modules])
    """)
    assert loaded == "[]", f"imported with jaxguide: {loaded}"


def test_a_value_check_imports_jsonschema_on_use():
    out = _run("""
        import sys
        import jaxguide
        grammar = jaxguide.Grammar.from_json_schema({"enum": [1, 15, "a"], "maximum": 10})
        info = jaxguide.TokenizerInfo.from_token_bytes(
            [b"1", b"5", b'"', b"a", b""], eos_token_ids=[4])
        compiled = jaxguide.compile_grammar(grammar, info)
        def accepts(text):
            matcher = jaxguide.Matcher(compiled)
            return matcher.accept_bytes(text) and matcher.is_accepting()
        print([accepts(t) for t in (b"1", b"15", b'"a"')], "jsonschema" in sys.modules)
    """)
    assert out == "[True, False, True] True", out  # 15 > maximum: checked by jsonschema
