"""Token boundaries: where a tokenizer would cut text, at the prompt/output boundary
(`heal_prompt`) and around forced bytes (`encode_in_context`, used by fast-forward).

Canonical tokenization is a property of the tokenizer, not of the grammar: these functions ask
the tokenizer itself (`TokenizerInfo.encode`) and compare byte offsets, so the tokens they give
are the ones the model would have produced.
"""

from __future__ import annotations

from collections.abc import Sequence

from jaxguide.engine.tokenizer import TokenizerInfo


def heal_prompt(tokens: Sequence[int], tokenizer_info: TokenizerInfo, *,
                max_healed_tokens: int = 1) -> tuple[list[int], bytes]:
    """Token healing at the prompt/output boundary.

    A prompt that ends inside what the model would write as one longer token (a trailing space
    before a word, `"` before `":`) pushes the model towards unnatural tokenizations. This
    removes up to `max_healed_tokens` final tokens whose bytes some longer token extends, and
    returns them as bytes the output must start with: pass them as
    `Matcher(..., required_prefix=...)` so the first sampled token may span them.

    Returns:
      (kept_tokens, forced_prefix_bytes); nothing healed -> (tokens, b"").
    """
    kept, healed = [int(t) for t in tokens], b""
    for _ in range(max_healed_tokens):
        if not kept:
            break
        candidate = tokenizer_info.token_bytes(kept[-1]) + healed
        if len(candidate) == len(healed):  # a special token: the boundary is already clean
            break
        if not any(len(tokenizer_info.token_bytes(int(t))) > len(candidate)
                   for t in tokenizer_info.tokens_with_prefix(candidate)):
            break
        kept.pop()
        healed = candidate
    return kept, healed


def complete_utf8_prefix(data: bytes) -> bytes:
    """The longest prefix of `data` that ends on a UTF-8 character boundary."""
    for cut in range(len(data), max(len(data) - 4, -1), -1):
        try:
            data[:cut].decode("utf-8")
            return data[:cut]
        except UnicodeDecodeError:
            continue
    return b""


def encode_in_context(info: TokenizerInfo, context: bytes, data: bytes) -> list[int] | None:
    """The tokens the tokenizer gives `data` when it follows `context`, or None when the
    tokenization of context + data has no token boundary where `data` starts (the forced text
    would merge with what precedes it). Without context (the start, or after a special token)
    `data` is encoded alone, or — when the tokenizer prepends a dummy prefix (SentencePiece),
    which does not apply mid-sequence — after the first neutral context that leaves a clean
    boundary."""
    if not data:
        return []
    contexts = [context] if context else ([b""] if not info.dummy_prefix else
                                          [b"\n", b".", b"a", b"0"])
    for candidate in contexts:
        try:
            text = (candidate + data).decode("utf-8")
        except UnicodeDecodeError:
            return None
        tokens = info.encode(text)
        start = len(info.dummy_prefix) + len(candidate)
        if info.decode_bytes(tokens) != info.dummy_prefix + candidate + data:
            return None
        length = 0
        for i, token in enumerate(tokens):
            if length == start:
                return tokens[i:]
            length += len(info.token_bytes(token))
            if length > start:
                break
    return None


def _char_class(ch: str) -> str:
    """The pre-tokenizer patterns' classes: \\p{L} letters, \\p{N} numbers (not only 0-9),
    whitespace, other."""
    if ch.isalpha():
        return "letter"
    if ch.isnumeric():
        return "digit"
    if ch.isspace():
        return "space"
    return "other"


def unstable_tail_start(data: bytes, following: frozenset[str] | None = None) -> int:
    """The byte offset in `data` from which its tokenization may still change with the bytes
    that follow it (so forced tokens past it are held back).

    Pre-tokenizers (GPT-2 / Llama-3 / Qwen regexes, SentencePiece's whitespace and script
    splits) cut text between runs of one character class (letters, digits, whitespace,
    other), tokens never cross a pre-token, and only the last pre-token can change with what
    follows. It grows when the next character is of its class (punctuation also takes line
    breaks: `[\\r\\n]*`), and a lone punctuation character or space is taken into a following
    letters pre-token (`[^\\r\\n\\p{L}\\p{N}]?\\p{L}+`); a final whitespace run always may change
    (`\\s+(?!\\S)`, a space opening the next pre-token). `following`: the classes ("letter",
    "digit", "space", "other") the next character may have (None: any). Where the last run
    may change, the unstable tail is that run, from one character earlier where the patterns
    let that character open the run's pre-token (an isolated non-letter before letters, a
    space before punctuation or digits), and a whitespace run with a line break takes the
    punctuation run before it. Conservative for every tokenizer jaxguide loads."""
    text = data.decode("utf-8", errors="ignore")
    if not text:
        return 0
    if following is not None and _last_run_is_final(text, following):
        return len(data)
    i = _run_start(text, len(text))
    if i < len(text) and _char_class(text[i]) == "space" and (
            "\n" in text[i:] or "\r" in text[i:]) and i > 0 and _char_class(text[i - 1]) == "other":
        i = _run_start(text, i)
    return len(text[:i].encode("utf-8"))


def _last_run_is_final(text: str, following: frozenset[str]) -> bool:
    """Whether no character of the `following` classes can change the last pre-token."""
    kind = _char_class(text[-1])
    if kind == "space" or kind in following:
        return False
    if kind == "other":
        if "space" in following:  # a line break may close the punctuation pre-token
            return False
        lone = len(text) < 2 or _char_class(text[-2]) != "other"
        return not (lone and "letter" in following)
    return True


def _run_start(text: str, end: int) -> int:
    """Start of the run of one character class ending at `end`, with the character that may
    open its pre-token (see `unstable_tail_start`)."""
    if end == 0:
        return 0
    kind = _char_class(text[end - 1])
    i = end
    while i > 0 and _char_class(text[i - 1]) == kind:
        i -= 1
    if i > 0:
        before = text[i - 1]
        lone_other = _char_class(before) == "other" and (
            i < 2 or _char_class(text[i - 2]) != "other")
        if (kind == "letter" and before not in "\r\n" and (
                _char_class(before) == "space" or lone_other)) or (
                kind in ("other", "digit") and before == " "):
            i -= 1
    return i


def first_byte_classes(first_bytes) -> frozenset[str]:
    """The character classes (see `unstable_tail_start`) of characters starting with these
    bytes; a non-ASCII lead byte may start a letter, a digit or another character."""
    classes: set[str] = set()
    for b in first_bytes:
        b = int(b)
        if b >= 0x80:
            classes |= {"letter", "digit", "other"}
        else:
            classes.add(_char_class(chr(b)))
    return frozenset(classes)
