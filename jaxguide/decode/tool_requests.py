"""Requests with tools in the decode loops: their grammar, their prompt, their parsed calls.

A request with `tools=` gets the grammar of `tool_call_grammar` in its format (the request's, else
the model's `tool_format`, else "hermes"), with the format's trigger matched as a special token
where the tokenizer has one of that name; a chat request gets the tools listed in a system
prompt (`tool_system_prompt`, put before the request's own system message); and its Result gets
the calls parsed from its output, special tokens written by name.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from jaxguide.decode.requests import Request, Result
from jaxguide.engine.tokenizer import TokenizerInfo
from jaxguide.grammars.tool_formats import (
    parse_tool_calls,
    tool_call_grammar,
    tool_system_prompt,
)

DEFAULT_TOOL_FORMAT = "hermes"


def request_tool_format(request: Request, model: Any) -> str:
    """The tool format of a request: its own, the model's, or DEFAULT_TOOL_FORMAT."""
    return request.tool_format or getattr(model, "tool_format", None) or DEFAULT_TOOL_FORMAT


def request_grammar(request: Request, model: Any, tokenizer_info: TokenizerInfo):
    """The grammar a request decodes under: its `grammar`, or its tools' grammar.

    Raises:
      GrammarError: a tool schema that cannot be lowered.
    """
    if request.tools is None:
        return request.grammar
    return tool_call_grammar(request.tools, request.tool_choice,
                             format=request_tool_format(request, model),
                             parallel=request.parallel_tool_calls,
                             special_token_names=tokenizer_info.special_token_names.values())


def messages_with_tools(request: Request, model: Any) -> list[Mapping[str, Any]]:
    """The request's messages with its tools listed in the system message (first)."""
    messages = list(request.messages or [])
    if request.tools is None:
        return messages
    prompt = tool_system_prompt(request.tools, request_tool_format(request, model))
    if messages and messages[0].get("role") == "system":
        prompt = f"{prompt}\n\n{messages[0].get('content', '')}"
        messages = messages[1:]
    return [{"role": "system", "content": prompt}, *messages]


def text_with_special_names(tokenizer_info: TokenizerInfo, token_ids: Sequence[int]) -> str:
    """The decoded text with each special token written as its name."""
    names = tokenizer_info.special_token_names
    out, run = [], []
    for token in token_ids:
        if token in names:
            out.append(tokenizer_info.decode_bytes(run).decode("utf-8", "replace"))
            out.append(names[token])
            run = []
        else:
            run.append(token)
    out.append(tokenizer_info.decode_bytes(run).decode("utf-8", "replace"))
    return "".join(out)


def add_tool_calls(results: list[Result], requests: Sequence[Request], model: Any,
                   tokenizer_info: TokenizerInfo) -> None:
    """Fills `tool_calls` of the results of requests with tools."""
    for result, request in zip(results, requests):
        if request.tools is not None:
            text = text_with_special_names(tokenizer_info, result.token_ids)
            result.tool_calls = parse_tool_calls(text, request_tool_format(request, model))


def grammars_of(requests: Sequence[Request], model: Any, tokenizer_info: TokenizerInfo
                ) -> tuple[list[Any], dict[int, str]]:
    """Each request's grammar, and the rows whose tools' grammar failed (row -> why)."""
    grammars, errors = [], {}
    for row, request in enumerate(requests):
        try:
            grammars.append(request_grammar(request, model, tokenizer_info))
        except ValueError as e:  # GrammarError, JsonSchemaError
            grammars.append(None)
            errors[row] = f"{type(e).__name__}: {e}"
    return grammars, errors
