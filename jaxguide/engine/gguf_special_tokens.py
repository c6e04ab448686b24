"""llama.cpp's rules for the special tokens of a GGUF vocabulary: types, end of generation, strip.

Design note. A GGUF file stores a type per token, but llama.cpp (`llama_vocab::impl::load`,
release of llama-cpp-python 0.3.36) corrects them by token text, and decides by text which
tokens end generation, because converters do not always say so. `special_tokens` does the same,
on the token texts and types of the file, and returns the corrected types, the end-of-generation
(EOG) ids and the ids whose neighbouring whitespace is stripped in text with special tokens:

  1. Special ids: `tokenizer.ggml.{eos,eot,eom}_token_id` and `fim_{pad,rep,sep}_token_id`,
     with llama.cpp's per-model defaults (eos 2 for "llama", 11 for "gpt2", 1 for "t5", none
     for "gemma4" and "rwkv"; a default outside the vocabulary is none; a key outside it keeps
     the default). A missing eot / eom / FIM pad / repo / file-separator id is found by text
     (`EOT_NAMES`, ...); the token found is made control. Where several texts of one kind are
     present llama.cpp takes whichever its hash map yields first; we take all of them (no
     vocabulary of the conformance suite, nor Gemma 3, has two).
  2. EOG = the FIM pad / repo / file-separator ids, every token whose text is in `EOG_NAMES`
     (made control), and the eos, eot and eom ids.
  3. Two exceptions by text: with `<|return|>` and `<|call|>` (gpt-oss) or `<|call(s)|>` and
     `<|flush|>` (solar-open) in EOG, `<|end|>` leaves EOG and becomes user-defined (literal
     text); with `<|tool_response>` or `<|plamo:eos|>` in EOG (Gemma 4, PLaMo 2), `</s>` leaves
     it and becomes normal. gpt-oss's `<|channel|>`, `<|message|>`, `<|start|>` and
     `<|constrain|>` are always user-defined.
  4. Strip flags, set by model name as llama.cpp sets them: Phi-3 (`general.name` containing
     "phi-3" / "phi3", any case) strips whitespace right of every control, user-defined and
     unknown token and of `</s>`, but not of `<unk>`, `<s>` or `<|endoftext|>`; a `<mask>`
     (jina-v2 pre-tokenizers, nomic-bert-moe / jina-bert-v3) and modern-bert's `[MASK]` strip
     whitespace to their left. llama.cpp applies them where it splits text at special tokens;
     jaxguide's `encode_prompt` does (engine/tokenizer.py). Whitespace is C `isspace`: space,
     \\t, \\n, \\v, \\f, \\r.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6

# Texts llama.cpp looks for when the file names no id of that kind (taken, made control).
EOT_NAMES = frozenset({
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|end_of_text|>",
    "<EOT>", "_<EOT>", "[EOT]", "<｜end▁of▁sentence｜>", "<end_of_utterance>",
})
EOM_NAMES = frozenset({"<|eom_id|>"})
FIM_NAMES = {  # kind -> texts; only pad, repo and file-separator end generation
    "pre": frozenset({"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<｜fim▁begin｜>",
                      "<PRE>", "▁<PRE>", "<|code_prefix|>", "<|prefix|>"}),
    "suf": frozenset({"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<｜fim▁hole｜>",
                      "<SUF>", "▁<SUF>", "<|code_suffix|>", "<|suffix|>"}),
    "mid": frozenset({"<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<｜fim▁end｜>",
                      "<MID>", "▁<MID>", "<|code_middle|>", "<|middle|>"}),
    "pad": frozenset({"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"}),
    "rep": frozenset({"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"}),
    "sep": frozenset({"<|file_sep|>"}),
}
# Texts that end generation wherever they are (made control).
EOG_NAMES = frozenset({
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>",
    "<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]",
    "<|end_of_text|>", "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>",
    "<｜end▁of▁sentence｜>", "[e~[",
})
_ALWAYS_USER_DEFINED = frozenset({"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"})
_DEFAULT_EOS = {"llama": 2, "gpt2": 11, "t5": 1}
_KEY = "tokenizer.ggml.{}_token_id"
_LEGACY_KEYS = {"fim_pre": "prefix", "fim_suf": "suffix", "fim_mid": "middle"}


@dataclass(frozen=True)
class SpecialTokens:
    """Corrected token types (int32 [vocab]), EOG ids, and the ids that strip whitespace."""

    types: np.ndarray
    eog_ids: frozenset[int]
    lstrip_ids: frozenset[int]
    rstrip_ids: frozenset[int]


def special_tokens(meta: dict[str, Any], model: str, tokens: Sequence[str],
                   types: np.ndarray) -> SpecialTokens:
    """llama.cpp's corrected types, EOG set and strip flags of a GGUF vocabulary (see above)."""
    types = np.array(types, dtype=np.int32)
    by_text: dict[str, list[int]] = {}
    for i, token in enumerate(tokens):
        by_text.setdefault(token, []).append(i)

    def named(names: frozenset[str]) -> list[int]:
        return _ids(by_text, names)

    def found(kind: str, names: frozenset[str]) -> list[int]:
        # The deprecated key, read after the current one, wins as in llama.cpp.
        ids = _file_id(meta, _LEGACY_KEYS.get(kind, kind), len(tokens),
                       _file_id(meta, kind, len(tokens), None))
        if ids is not None:
            return [ids]
        ids_found = named(names)
        types[ids_found] = CONTROL
        return ids_found

    eos = _file_id(meta, "eos", len(tokens), _DEFAULT_EOS.get(model))
    eot, eom = found("eot", EOT_NAMES), found("eom", EOM_NAMES)
    fim = {kind: found("fim_" + kind, names) for kind, names in FIM_NAMES.items()}
    by_name = named(EOG_NAMES)
    types[by_name] = CONTROL
    eog = set(fim["pad"] + fim["rep"] + fim["sep"] + by_name + eot + eom)
    eog.update([eos] if eos is not None else [])
    texts = {tokens[i] for i in eog}
    types[named(_ALWAYS_USER_DEFINED)] = USER_DEFINED
    call = "<|call|>" in texts or "<|calls|>" in texts
    if "<|end|>" in texts and call and ("<|return|>" in texts or "<|flush|>" in texts):
        end = [i for i in eog if tokens[i] == "<|end|>"]
        eog.difference_update(end)
        types[end] = USER_DEFINED
    if "</s>" in texts and ("<|tool_response>" in texts or "<|plamo:eos|>" in texts):
        s = [i for i in eog if tokens[i] == "</s>"]
        eog.difference_update(s)
        types[s] = NORMAL
    lstrip, rstrip = _strip_ids(meta, types, by_text)
    return SpecialTokens(types, frozenset(eog), lstrip, rstrip)


def _ids(by_text: dict[str, list[int]], names: frozenset[str]) -> list[int]:
    """The ids of the tokens whose text is one of `names`, sorted."""
    return sorted(i for name in names for i in by_text.get(name, ()))


def _file_id(meta: dict[str, Any], kind: str, vocab_size: int, default: int | None) -> int | None:
    """The id the file names for `kind`, as llama.cpp reads it (defaults, range checks)."""
    if default is not None and not 0 <= default < vocab_size:
        default = None
    value = meta.get(_KEY.format(kind))
    if value is None or not 0 <= int(value) < vocab_size:
        return default
    return int(value)


def _strip_ids(meta: dict[str, Any], types: np.ndarray,
               by_text: dict[str, list[int]]) -> tuple[frozenset[int], frozenset[int]]:
    """(lstrip ids, rstrip ids) by llama.cpp's model-name rules."""

    def named(names: frozenset[str]) -> list[int]:
        return _ids(by_text, names)

    name = str(meta.get("general.name", "")).lower()
    pre = str(meta.get("tokenizer.ggml.pre", ""))
    arch = str(meta.get("general.architecture", ""))
    if any(p in pre for p in ("jina-v2-de", "jina-v2-es", "jina-v2-code")) or any(
            a in arch for a in ("nomic-bert-moe", "jina-bert-v3")):
        return frozenset(named(frozenset({"<mask>"}))), frozenset()
    if "phi-3" in name or "phi3" in name:
        special = np.isin(types, (CONTROL, USER_DEFINED, UNKNOWN))
        rstrip = set(np.flatnonzero(special).tolist()) | set(named(frozenset({"</s>"})))
        rstrip.difference_update(named(frozenset({"<unk>", "<s>", "<|endoftext|>"})))
        return frozenset(), frozenset(rstrip)
    if "modern-bert" in name:
        return frozenset(named(frozenset({"[MASK]"}))), frozenset()
    return frozenset(), frozenset()

