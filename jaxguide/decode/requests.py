"""What a caller asks `generate` for and what it gets back: `Request`, `Result`, `DecodeStats`."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from jaxguide.engine.compiled_grammar import CompiledGrammar
from jaxguide.errors import GrammarError
from jaxguide.grammars.grammar import Grammar
from jaxguide.grammars.tool_calls import chosen_tools, parse_tools
from jaxguide.grammars.tool_formats import tool_format

FINISH_REASONS = ("eos", "grammar_end", "max_tokens", "error")


@dataclasses.dataclass(frozen=True)
class Request:
    """One generation request.

    Attributes:
      prompt: plain prompt text (special-token names such as `<|im_start|>` in it are those
        tokens), or None when `messages` is given.
      messages: chat messages `[{"role": ..., "content": ...}]`, rendered with the model's chat
        template (`model.render_chat`), or None when `prompt` is given.
      grammar: a `Grammar` (compiled against the tokenizer), a `CompiledGrammar`, or None for
        unconstrained output.
      max_new_tokens: optional per-request cap (at most `generate`'s `max_new_tokens`).
      seed: optional per-request PRNG seed: the row draws from `key(seed)` whatever its place
        in the batch (default: `fold_in(key(generate's seed), row)`).
      opportunistic: opportunistic masking for this row (True / False), or None to follow
        `generate`'s `opportunistic=` policy.
      tools: tool definitions in the OpenAI function format (`{"type": "function", "function":
        {"name", "description", "parameters"}}`), or None. With tools the output is
        constrained by `jaxguide.tool_call_grammar` (no `grammar=`), the tools are listed in a
        system prompt for `messages=` requests, and `Result.tool_calls` holds the calls.
      tool_choice: "auto" (default), "required", "none", a tool name or {"type": "function",
        "function": {"name": ...}}.
      parallel_tool_calls: whether several calls may be made.
      tool_format: a name of `jaxguide.grammars.tool_formats.FORMATS`, or None for the
        model's (`model.tool_format`; SmolLM2: "smollm2"; else "hermes").
    """

    prompt: str | None = None
    messages: Sequence[Mapping[str, str]] | None = None
    grammar: Grammar | CompiledGrammar | None = None
    max_new_tokens: int | None = None
    seed: int | None = None
    opportunistic: bool | None = None
    tools: Sequence[Mapping[str, Any]] | None = None
    tool_choice: str | Mapping[str, Any] | None = None
    parallel_tool_calls: bool = True
    tool_format: str | None = None

    def __post_init__(self) -> None:
        self._check_tools()
        if (self.prompt is None) == (self.messages is None):
            raise ValueError("a Request needs exactly one of prompt= and messages=")
        if self.prompt is not None and not isinstance(self.prompt, str):
            raise TypeError(f"prompt must be a str, got {type(self.prompt).__name__}")
        if self.grammar is not None and not isinstance(self.grammar, (Grammar, CompiledGrammar)):
            raise TypeError("grammar must be a jaxguide.Grammar, a CompiledGrammar or None, got "
                            f"{type(self.grammar).__name__}")
        if self.max_new_tokens is not None and (isinstance(self.max_new_tokens, bool) or
                                                not isinstance(self.max_new_tokens, int) or
                                                self.max_new_tokens < 1):
            raise ValueError(f"max_new_tokens must be an int >= 1, got {self.max_new_tokens!r}")
        if self.opportunistic not in (None, True, False):
            raise ValueError(f"opportunistic must be None, True or False, got "
                             f"{self.opportunistic!r}")
        if self.seed is not None and (isinstance(self.seed, bool) or
                                      not isinstance(self.seed, int) or
                                      not 0 <= self.seed < 2**32):
            raise ValueError(f"seed must be an int in [0, 2**32), got {self.seed!r}")

    def _check_tools(self) -> None:
        """GrammarError for malformed tools, an unknown tool_choice / format, or tools next to
        a grammar."""
        if self.tools is None:
            if self.tool_choice is not None or self.tool_format is not None:
                raise GrammarError("tool_choice / tool_format need tools=")
            return
        if self.grammar is not None:
            raise GrammarError("give tools= or grammar=, not both (tools make the grammar)")
        chosen_tools(parse_tools(self.tools), self.tool_choice)
        if self.tool_format is not None:
            tool_format(self.tool_format)
        if self.parallel_tool_calls not in (True, False):
            raise GrammarError(f"parallel_tool_calls must be True or False, got "
                               f"{self.parallel_tool_calls!r}")


@dataclasses.dataclass
class Result:
    """What one request produced.

    Attributes:
      text: the generated text (UTF-8, undecodable bytes replaced), without the EOS token.
      token_ids: the generated token ids (sampled and forced), without the EOS token.
      finish_reason: "eos", "grammar_end", "max_tokens" or "error".
      error: None, or why the request failed.
      forced_tokens: how many of `token_ids` were fast-forwarded (not sampled).
      tool_calls: for a request with tools, the complete calls in the text, in order, as
        {"name": str, "arguments": value}; None without tools.
    """

    text: str
    token_ids: list[int]
    finish_reason: str
    error: str | None = None
    forced_tokens: int = 0
    tool_calls: list[dict[str, Any]] | None = None


@dataclasses.dataclass
class DecodeStats:
    """Where the time of a `generate` call went (seconds, wall clock on the host).

    `host_s`: accepting tokens, fast-forward, building inputs; `mask_wait_s`: waiting for mask
    rows after the forward was dispatched (zero when the fill hides behind the forward);
    `device_wait_s`: waiting for the sampled tokens (the forward and sampler still running).
    Opportunistic masking: `deferred_masks` counts (row, step) masks not filled in advance,
    `resampled` those whose unconstrained token was refused (mask filled then, second draw).
    """

    prefill_s: float = 0.0
    host_s: float = 0.0
    mask_wait_s: float = 0.0
    device_wait_s: float = 0.0
    total_s: float = 0.0
    steps: int = 0
    extend_steps: int = 0
    tokens: int = 0
    forced_tokens: int = 0
    deferred_masks: int = 0
    resampled: int = 0

    def as_dict(self) -> dict[str, float]:
        return dataclasses.asdict(self)
