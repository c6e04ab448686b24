"""GGUF pre-tokenizers: llama.cpp's `tokenizer.ggml.pre` catalogue, as split regexes.

Design note. A GGUF BPE vocabulary ("gpt2", "gemma4") names how text is cut into pieces before
the merges run (`tokenizer.ggml.pre`). llama.cpp maps each name to a pre-tokenizer type
(`llama_vocab::impl::load` in src/llama-vocab.cpp) and each type to a list of regexes
(`llm_tokenizer_bpe`). The regexes apply one after another: each cuts every piece into its
matches and the gaps between them (Hugging Face `Split(behavior="isolated")`, llama.cpp's
`unicode_regex_split`), so no token crosses a cut.

Where llama.cpp rewrote a model's regex for `std::regex` and kept the original of the model's
`tokenizer.json` in a comment (`(?i:...)` spelled out, possessive quantifiers dropped, `&&`
class intersections replaced by custom code), the original is used here: jaxguide runs the
regexes with the `tokenizers` library (Oniguruma, as the original tokenizer did), which has all
of them. Two llama.cpp custom splitters are written as regexes: AFMoE's digit groups
(`\\p{AFMoE_digits}`: a run of numbers cut into a 1-2 character head and groups of three) and
SuperBPE's zero-width cut before groups of three digits.

Some names change more than the regexes: `ignore_merges` (a piece that is a whole token is that
token, as Llama-3's tokenizer.json says), and the style of the vocabulary: "byte_level" (GPT-2
byte-to-unicode alphabet), "escaped_spaces" (Gemma-4 style: spaces are `▁`, UTF-8 text, byte
fallback `<0xNN>`), or "raw" (UTF-8 text, no byte map). A name llama.cpp does not know is an
error listing the known names; a missing name is llama.cpp's "default" (as llama.cpp does for
old files).
"""

from __future__ import annotations

from dataclasses import dataclass

from jaxguide.errors import TokenizerError


@dataclass(frozen=True)
class PreTokenizer:
    """How a GGUF BPE vocabulary cuts text before the merges.

    Attributes:
      name: the `tokenizer.ggml.pre` value (or "default").
      regexes: applied in order; each isolates its matches in every piece.
      ignore_merges: a piece that is a whole token is that token.
      style: "byte_level", "escaped_spaces" or "raw" (see the module docstring).
    """

    name: str
    regexes: tuple[str, ...]
    ignore_merges: bool = False
    style: str = "byte_level"


# GPT-2's pattern (and llama.cpp's `default` core).
GPT2_PATTERN = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)"
# Llama-3 / tiktoken cl100k pattern.
LLAMA3_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)
_QWEN2 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
          r"|\s*[\r\n]+|\s+(?!\S)|\s+")
_QWEN35 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}"
           r"| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
_JAIS2 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
          r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s{512}(?!\S)|\s{256}(?!\S)|\s{128}(?!\S)"
          r"|\s{64}(?!\S)|\s{32}(?!\S)|\s{16}(?!\S)|\s{8}(?!\S)|\s{4}(?!\S)|\s{1,2}(?!\S)|\s{1}")
_UPPER = r"[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]"
_LOWER = r"[\p{Ll}\p{Lm}\p{Lo}\p{M}]"
_CONTRACTIONS = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)"
_GPT4O = (rf"[^\r\n\p{{L}}\p{{N}}]?{_UPPER}*{_LOWER}+{_CONTRACTIONS}?"
          rf"|[^\r\n\p{{L}}\p{{N}}]?{_UPPER}+{_LOWER}*{_CONTRACTIONS}?"
          r"|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+")
_TEKKEN = (rf"[^\r\n\p{{L}}\p{{N}}]?{_UPPER}*{_LOWER}+|[^\r\n\p{{L}}\p{{N}}]?{_UPPER}+{_LOWER}*"
           r"|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+")
_KIMI_UPPER = r"[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]"
_KIMI_LOWER = r"[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]"
_KIMI_K2 = (rf"[\p{{Han}}]+|[^\r\n\p{{L}}\p{{N}}]?{_KIMI_UPPER}*{_KIMI_LOWER}+{_CONTRACTIONS}?"
            rf"|[^\r\n\p{{L}}\p{{N}}]?{_KIMI_UPPER}+{_KIMI_LOWER}*{_CONTRACTIONS}?"
            r"|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
_YOUTU_MAIN = (rf"[^\r\n\p{{L}}\p{{N}}]?{_UPPER}*{_LOWER}+{_CONTRACTIONS}?"
               rf"|[^\r\n\p{{L}}\p{{N}}]?{_UPPER}+{_LOWER}*{_CONTRACTIONS}?"
               r"|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+")
_BAILINGMOE = (r"'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}"
               r"| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+")
_SEED_CODER = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1}"
               r"| ?[^\s\p{L}\p{N}\r\n]+|\s*[\r\n]+|\s+(?!\S)|\s+")
_UFAKZEKA = (r"[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)"
             r"|\s+")
_EXAONE_MOE = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?(?:\p{L}\p{M}*(?: \p{L}\p{M}*)*)+"
               r"|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]?|\s*[\r\n]|\s+(?!\S)|\s+")
_MINICPM5 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}+"
             r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
# DeepSeek-V3 family (deepseek-v3, hunyuan-dense, joyai-llm, hy_v4) and its relatives.
_DEEPSEEK3_MAIN = (r"[!\"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+"
                   r"|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+"
                   r"|\s+(?!\S)|\s+")
_SPARK_MAIN = (r"[!\"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+"
               r"|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+|[\r\n]|\s+(?!\S)|\s+")
_CJK_KANA = "[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+"
_CJK_HANGUL = "[\u4e00-\u9fa5\u0800-\u4e00\uac00-\ud7ff]+"
_DEEPSEEK_LLM_LETTERS = (
    "\\s?[A-Za-z\xb5\xc0-\xd6\xd8-\xf6\xf8-\u01ba\u01bc-\u01bf\u01c4-\u0293\u0295-\u02af"
    "\u0370-\u0373\u0376\u0377\u037b-\u037d\u037f\u0386\u0388-\u038a\u038c\u038e-\u03a1"
    "\u03a3-\u03f5\u03f7-\u0481\u048a-\u052f\u0531-\u0556\u10a0-\u10c5\u13a0-\u13f5"
    "\u13f8-\u13fd\u1c90-\u1cba\u1cbd-\u1cbf\u1d00-\u1d2b\u1d6b-\u1d77\u1d79-\u1d9a"
    "\u1e00-\u1f15\u1f18-\u1f1d\u1f20-\u1f45\u1f48-\u1f4d\u1f50-\u1f57\u1f59\u1f5b\u1f5d"
    "\u1f5f-\u1f7d\u1f80-\u1fb4\u1fb6-\u1fbc\u1fbe\u1fc2-\u1fc4\u1fc6-\u1fcc\u1fd0-\u1fd3"
    "\u1fd6-\u1fdb\u1fe0-\u1fec\u1ff2-\u1ff4\u1ff6-\u1ffc\u2102\u2107\u210a-\u2113\u2115"
    "\u2119-\u211d\u2124\u2126\u2128\u212a-\u212d\u212f-\u2134\u2139\u213c-\u213f"
    "\u2145-\u2149\u214e\u2183\u2184\u2c00-\u2c7b\u2c7e-\u2ce4\u2ceb-\u2cee\u2cf2\u2cf3"
    "\ua640-\ua66d\ua680-\ua69b\ua722-\ua76f\ua771-\ua787\ua78b-\ua78e\uab70-\uabbf"
    "\ufb00-\ufb06\ufb13-\ufb17\uff21-\uff3a\uff41-\uff5a\U00010400-\U0001044f"
    "\U000104b0-\U000104d3\U000104d8-\U000104fb\U00010c80-\U00010cb2\U00010cc0-\U00010cf2"
    "\U000118a0-\U000118df\U0001e900-\U0001e943]+")
_DEEPSEEK_LLM_PUNCT = "\\s?[!-/:-~\uff01-\uff0f\uff1a-\uff5e\u2018-\u201f\u3000-\u3002]+"
_YOUTU_CJK = ("[\uac00-\ud7a3\u3131-\u318e]+|[\uff01\u2026\u201c\u201d\u2018\u2019\u2014\uff1a"
              "\uff1b\uff0c\u3001-\u303f\ufe30-\ufe4f]+|[\u3105-\u312f]+|" + _CJK_KANA)
_AFMOE_CJK = ("[\u4e00-\u9fff\u3400-\u4dbf\u8c48-\ufaff\u3040-\u309f\u30a0-\u30ff\uff65-\uff9f"
              "\u2f00-\u2fdf\u0e40-\u0e7f\u0e80-\u0eff\u1780-\u17ff\u1000-\u109f\uaa60-\uaa7f"
              "\ua9e0-\ua9ff\uac00-\ud7af\u1100-\u11ff]+")
_BLOOM = " ?[^(\\s|.,!?\u2026\u3002\uff0c\u3001\u0964\u06d4\u060c)]+"
# llama.cpp's custom AFMoE digit splitter: a run of numbers, its length mod 3 first, then 3s.
_AFMOE_DIGITS = r"\p{N}{1,3}(?=(?:\p{N}{3})*(?!\p{N}))"
_NEWLINE_RUNS = r"[^\n]+|[\n]+"

# llama.cpp pre-tokenizer type -> its regexes.
_TYPES: dict[str, tuple[str, ...]] = {
    "default": (r"[\p{P}\$\+<=>\^~\|]+", GPT2_PATTERN, r"\p{N}+", r"[0-9][0-9][0-9]"),
    "llama3": (LLAMA3_PATTERN,),
    "jais2": (_JAIS2,),
    "deepseek_llm": (r"[\r\n]", _DEEPSEEK_LLM_LETTERS, _DEEPSEEK_LLM_PUNCT, r"\s+$",
                     _CJK_HANGUL, r"\p{N}+"),
    "deepseek3_llm": (r"\p{N}{1,3}", _CJK_KANA, _DEEPSEEK3_MAIN),
    "spark2_5": (r"\p{N}{1,3}", _CJK_KANA, _SPARK_MAIN, r"\p{N}"),
    "youtu": (_YOUTU_CJK, _YOUTU_MAIN),
    "deepseek_coder": (r"[\r\n]", r"\s?\p{L}+", r"\s?\p{P}+", _CJK_HANGUL, r"\p{N}"),
    "falcon": (r"[\p{P}\$\+<=>\^~\|`]+", GPT2_PATTERN, r"[0-9][0-9][0-9]"),
    "starcoder": (r"\p{N}", GPT2_PATTERN),
    "gpt2": (GPT2_PATTERN,),
    "qwen2": (_QWEN2,),
    "qwen35": (_QWEN35,),
    "bloom": (_BLOOM,),
    "viking": (_BLOOM, r"\p{N}"),
    "tekken": (_TEKKEN,),
    "chameleon": (r"<sentinel:[0-9]+>", r"(IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z",
                  r"([\t\n]|    |  )", r"\p{N}", r"[\p{P}!-/:-@\[-`{-~]", GPT2_PATTERN),
    "gpt4o": (_GPT4O,),
    "tiny_aya": (r"\d{1,3}(?=(?:\d{3})*\b)", _GPT4O),
    "kimi_k2": (_KIMI_K2,),
    "superbpe": (r"\p{N}+", r"[0-9]{1,3}(?=(?:[0-9]{3})*(?![0-9]))"),
    "bailingmoe": (_BAILINGMOE,),
    "seed_coder": (_SEED_CODER,),
    "ufakzeka": (_UFAKZEKA,),
    "afmoe": (_AFMOE_DIGITS, _AFMOE_CJK, _DEEPSEEK3_MAIN),
    "laguna": (_NEWLINE_RUNS, _QWEN2),
    "exaone_moe": (_EXAONE_MOE,),
    "newlines": (_NEWLINE_RUNS,),
    "minicpm5": (r"\p{N}{1,3}", _MINICPM5),
    "whitespace": (r"\S+",),
}


def _names(type_name: str, *names: str, ignore_merges: bool = False,
           style: str = "byte_level") -> dict[str, PreTokenizer]:
    return {name: PreTokenizer(name, _TYPES[type_name], ignore_merges, style) for name in names}


# Every `tokenizer.ggml.pre` name llama.cpp knows (its `llama_vocab::impl::load`), in its order.
GGUF_PRE_TOKENIZERS: dict[str, PreTokenizer] = {
    **_names("default", "default"),
    **_names("minicpm5", "minicpm5", ignore_merges=True),
    **_names("llama3", "llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral",
             "midm-2.0", "lfm2", "jina-v5-nano", ignore_merges=True),
    **_names("deepseek_llm", "deepseek-llm"),
    **_names("deepseek_coder", "deepseek-coder"),
    **_names("deepseek3_llm", "deepseek-v3", "hunyuan-dense", "hy_v4", "joyai-llm"),
    **_names("spark2_5", "spark2_5"),
    **_names("youtu", "youtu", ignore_merges=True),
    **_names("falcon", "falcon"),
    **_names("gpt2", "mpt", "gpt-2", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v2-es",
             "jina-v2-de", "a.x-4.0", "mellum", "modern-bert", "jina-v1-en", "jina-v2-code",
             "roberta-bpe", "olmo", "jais", "exaone4", "trillion", "granite-docling"),
    **_names("starcoder", "starcoder", "refact", "command-r", "smollm", "codeshell", "exaone",
             "minerva-7b", "mellum2"),
    **_names("jais2", "jais-2"),
    **_names("newlines", "gemma4", "granite-embed-multi-311m", "sarvam-moe",
             style="escaped_spaces"),
    **_names("whitespace", "whitespace", style="raw"),
    **_names("qwen2", "qwen2", "deepseek-r1-qwen", "kormo", "f2llmv2", "stablelm2", "megrez",
             "hunyuan", "solar-open", "grok-2"),
    **_names("qwen35", "qwen35"),
    **_names("llama3", "dbrx", "smaug-bpe", "chatglm-bpe"),
    **_names("llama3", "glm4", "glm5", ignore_merges=True),
    **_names("bloom", "poro-chat", "bloom", "gpt3-finnish"),
    **_names("viking", "viking"),
    **_names("tekken", "tekken", ignore_merges=True),
    **_names("exaone_moe", "exaone-moe"),
    **_names("chameleon", "chameleon"),
    **_names("gpt4o", "gpt-4o", "llama4", "kanana2", "talkie", "minimax-m2"),
    **_names("gpt4o", "granite-embed-multi-97m", ignore_merges=True),
    **_names("tiny_aya", "tiny_aya", "cohere2moe"),
    **_names("superbpe", "superbpe"),
    **_names("bailingmoe", "bailingmoe", "bailingmoe2", "llada-moe"),
    **_names("seed_coder", "seed-coder"),
    **_names("kimi_k2", "kimi-k2"),
    **_names("ufakzeka", "ufakzeka"),
    **_names("afmoe", "afmoe"),
    **_names("laguna", "laguna"),
}


def gguf_pre_tokenizer(name: str | None, path: str) -> PreTokenizer:
    """The pre-tokenizer a GGUF file names (None: no `tokenizer.ggml.pre` key -> "default").

    Raises:
      TokenizerError: a name llama.cpp does not know (the message lists the known names).
    """
    if name is None:
        return GGUF_PRE_TOKENIZERS["default"]
    if not isinstance(name, str) or name not in GGUF_PRE_TOKENIZERS:
        raise TokenizerError(
            f"GGUF file {path!r}: unknown pre-tokenizer tokenizer.ggml.pre={name!r}; jaxguide "
            f"knows llama.cpp's names: {', '.join(sorted(GGUF_PRE_TOKENIZERS))}")
    return GGUF_PRE_TOKENIZERS[name]
