"""The module paths from before the subpackages still import, and give the same objects."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

from jaxguide._moved import MOVED_MODULES

# One public name each module had before the layout step.
OLD_NAMES = {
    "jaxguide.grammar": "Grammar",
    "jaxguide.json_schema": "JsonSchemaError",
    "jaxguide.json_schema_dialect": "validator_class",
    "jaxguide.tokenizer": "TokenizerInfo",
    "jaxguide.gguf_metadata": "read_gguf_metadata",
    "jaxguide.matcher": "heal_prompt",
    "jaxguide.batch_matcher": "BatchMatcher",
    "jaxguide.speculation": "check_text",
    "jaxguide.mask_queue": "MaskQueue",
    "jaxguide.sampling": "sample",
    "jaxguide.distributed": "BatchPlacement",
    "jaxguide.speculative_decode": "generate_speculative",
    "jaxguide.assets": "package_file",
    "jaxguide.config": "load_config",
    "jaxguide.generation_job": "run_generation_job",
}


def test_every_moved_module_is_listed_here():
    assert set(OLD_NAMES) == set(MOVED_MODULES)


@pytest.mark.parametrize("old", sorted(OLD_NAMES))
def test_old_path_gives_the_same_object(old):
    name = OLD_NAMES[old]
    old_module = importlib.import_module(old)
    assert getattr(old_module, name) is getattr(importlib.import_module(MOVED_MODULES[old]), name)
    assert name in dir(old_module)
    with pytest.raises(AttributeError):
        getattr(old_module, "no_such_name")


def test_old_decode_names_are_in_the_decode_package():
    decode = importlib.import_module("jaxguide.decode")  # a package now, the same names
    for name in ("ConstrainedBatch", "DecodeStats", "Request", "Result", "ended_by_grammar",
                 "generate", "results_of", "row_matchers", "FINISH_REASONS"):
        assert hasattr(decode, name), name


def test_old_path_of_a_jax_module_imports_jax_only_when_used():
    script = ("import sys, jaxguide.mask_queue as q; assert 'jax' not in sys.modules; "
              "q.MaskQueue; assert 'jax' in sys.modules; print('ok')")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            timeout=300)
    assert result.stdout.strip() == "ok", result.stderr
