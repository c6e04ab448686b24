"""Small real GGUF vocabulary files for tokenizer tests, written with the `gguf` package."""

from __future__ import annotations

import gguf

from jaxguide import assets


def write_gguf(path, model=None, tokens=None, types=None, **fields) -> str:
    """A GGUF file holding only metadata: `tokenizer.ggml.model`, the token list and types
    (each left out when None), then `fields` by the writer's `add_<name>` methods
    (token_scores, token_merges, eos_token_id, ...). Returns the path."""
    writer = gguf.GGUFWriter(str(path), "llama")
    if model is not None:
        writer.add_tokenizer_model(model)
    if tokens is not None:
        writer.add_token_list(tokens)
    if types is not None:
        writer.add_token_types(types)
    for key, value in fields.items():
        getattr(writer, f"add_{key}")(value)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.close()
    return str(path)


def sentencepiece_vocab(processor) -> tuple[list[str], list[int], list[float]]:
    """(pieces, GGUF token types, scores) of a SentencePiece model, as llama.cpp's converter
    writes them (2 unknown, 3 control, 6 byte, 1 normal)."""
    tokens, types, scores = [], [], []
    for i in range(processor.vocab_size()):
        tokens.append(processor.id_to_piece(i))
        scores.append(processor.get_score(i))
        types.append(2 if processor.is_unknown(i) else 3 if processor.is_control(i)
                     else 6 if processor.is_byte(i) else 1)
    return tokens, types, scores


def smollm2_vocabulary() -> tuple[list[str], list[int], list[str]]:
    """(tokens, types, merges) of SmolLM2's GGUF vocabulary, read with the `gguf` package."""
    reader = gguf.GGUFReader(assets.smollm2_gguf_path())
    fields = reader.fields

    def strings(key):
        field = fields[key]
        return [bytes(field.parts[i]).decode("utf-8") for i in field.data]

    types = [int(fields["tokenizer.ggml.token_type"].parts[i][0])
             for i in fields["tokenizer.ggml.token_type"].data]
    return strings("tokenizer.ggml.tokens"), types, strings("tokenizer.ggml.merges")
