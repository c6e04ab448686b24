"""Every ```python block of README.md runs as written, each in a fresh interpreter started in an
empty folder (no imports, variables or files from elsewhere), and the headline example shows a
success: its JSON parses and validates against its schema, and it did not run out of tokens.

A block that cannot run in CI (say, one that needs a TPU pod) is marked by the line
`<!-- readme-test: skip REASON -->` right before its fence; such blocks are reported as
skipped with their reason and line, and there may be at most MAX_SKIPPED of them.

A block that needs MaxText (Python >= 3.12, not in the test extra) is marked by
`<!-- readme-test: needs maxtext -->`: its test id ends in `-maxtext`, and it is skipped where
MaxText is not importable, except under JAXGUIDE_REQUIRE_MAXTEXT=1, where it always runs
(tools/maxtext/run_tests.sh runs these blocks in its Python 3.12 venv with `-k maxtext`).
"""

from __future__ import annotations

import importlib.util
import os
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
SKIP_MARK = re.compile(r"<!--\s*readme-test:\s*skip\s+(.+?)\s*-->")
NEEDS_MAXTEXT = re.compile(r"<!--\s*readme-test:\s*needs maxtext\s*-->")
MAXTEXT_MISSING = (os.environ.get("JAXGUIDE_REQUIRE_MAXTEXT") != "1" and
                   importlib.util.find_spec("maxtext") is None)
MAX_SKIPPED = 1
# Checks run after a block, in the same interpreter (they read its variables, define nothing
# the block uses), keyed by a line that identifies the block.
CHECKS = {
    "results = jaxguide.generate(model, info, [": """
import json as _json
import jsonschema as _jsonschema
assert results[0].finish_reason in ("eos", "grammar_end"), results[0]
_jsonschema.validate(_json.loads(results[0].text), schema)
""",
    "text = gemma.render_chat(": """
assert text == ("<bos><start_of_turn>user\\nAnswer in JSON.\\n\\nName a city.<end_of_turn>\\n"
                "<start_of_turn>model\\n"), text
assert encode_prompt(info, text)[:2] == [2, 105]
""",
    "constraint = MaxEngineConstraint(engine, info, [email])": """
import re as _re
assert result.finish_reason == "grammar_end", result
assert _re.fullmatch(r"[a-z]{1,8}@[a-z]{2,6}\\.org", result.text), result.text
""",
}


def python_blocks() -> list[tuple[int, str, str | None, bool]]:
    """(line of the fence, code, skip reason or None, needs MaxText) for each ```python
    block."""
    lines = README.read_text(encoding="utf-8").splitlines()
    blocks = []
    i = 0
    while i < len(lines):
        if lines[i].strip() == "```python":
            start = i + 1
            end = start
            while lines[end].strip() != "```":
                end += 1
            before = lines[i - 1] if i > 0 else ""
            mark = SKIP_MARK.search(before)
            blocks.append((i + 1, "\n".join(lines[start:end]) + "\n",
                           mark.group(1) if mark else None, bool(NEEDS_MAXTEXT.search(before))))
            i = end
        i += 1
    return blocks


BLOCKS = python_blocks()


def test_readme_blocks_are_found_and_few_are_skipped():
    skipped = [(line, reason) for line, _, reason, _ in BLOCKS if reason]
    print(f"README.md: {len(BLOCKS)} python blocks, {len(skipped)} skipped: {skipped}")
    assert len(BLOCKS) >= 5
    assert len(skipped) <= MAX_SKIPPED, skipped
    text = README.read_text(encoding="utf-8")
    assert text.count("```python") == len(BLOCKS)  # no block hidden by odd fencing
    fences = [line.strip()[3:] for line in text.splitlines() if line.strip().startswith("```")]
    assert len(fences) % 2 == 0 and set(fences[1::2]) == {""}, fences
    assert set(fences[0::2]) <= {"python", "bash", ""}, fences  # no ```py / ```pycon block
    assert sum(marker in code for marker in CHECKS for _, code, _, _ in BLOCKS) == len(CHECKS)
    assert any(maxtext for *_, maxtext in BLOCKS)   # the MaxText loop is shown and run


@pytest.mark.parametrize("line,code,skip,maxtext", BLOCKS,
                         ids=[f"line{b[0]}" + ("-maxtext" if b[3] else "") for b in BLOCKS])
def test_readme_block_runs_as_written(tmp_path, line, code, skip, maxtext):
    if skip:
        pytest.skip(f"README.md line {line}: marked readme-test skip: {skip}")
    if maxtext and MAXTEXT_MISSING:
        pytest.skip(f"README.md line {line} needs MaxText (Python >= 3.12), not importable "
                    "here: tools/maxtext/run_tests.sh runs it")
    check = "".join(extra for marker, extra in CHECKS.items() if marker in code)
    done = subprocess.run([sys.executable, "-c", code + check], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, (f"README.md block at line {line} failed:\n{code}\n"
                                  f"{done.stdout[-2000:]}\n{done.stderr[-4000:]}")
