"""examples/gemma_style_sampler.py runs as written (a few tokens, so it is quick) and prints
valid JSON, and its loop (two jitted programs, masks filled while the forward runs) yields
exactly what `jaxguide.generate` yields greedily without fast-forward."""

from __future__ import annotations

import importlib.util
import pathlib
import subprocess
import sys

import jaxguide
from jaxguide.engine.tokenizer import encode_prompt
from jaxguide.models import smollm2

EXAMPLE = pathlib.Path(__file__).resolve().parents[2] / "examples" / "gemma_style_sampler.py"


def _example_module():
    spec = importlib.util.spec_from_file_location("gemma_style_sampler", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module     # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_example_runs_and_prints_valid_json(tmp_path):
    done = subprocess.run([sys.executable, str(EXAMPLE), "--max-new-tokens", "32"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    lines = done.stdout.strip().splitlines()
    assert len(lines) == 2 and all("valid: True" in line for line in lines), done.stdout


def test_example_loop_equals_generate():
    example = _example_module()
    model, info = smollm2.load()
    grammar = jaxguide.Grammar.from_json_schema(example.SCHEMA, whitespace="compact")
    messages = [[{"role": "user", "content": p}] for p in example.PROMPTS + ["Name a city."]]
    grammars = [grammar, grammar, None]
    loop = example.ConstrainedSamplerLoop(model, info)
    ours = loop.sample([encode_prompt(info, model.render_chat(m)) for m in messages], grammars,
                       max_new_tokens=24)
    theirs = jaxguide.generate(model, info, [jaxguide.Request(messages=m, grammar=g)
                                             for m, g in zip(messages, grammars)],
                               max_new_tokens=24, fast_forward=False)
    assert [(r.token_ids, r.finish_reason) for r in ours] == \
        [(r.token_ids, r.finish_reason) for r in theirs]
    assert ours[0].finish_reason == "grammar_end"
