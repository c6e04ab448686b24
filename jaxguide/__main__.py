"""`python -m jaxguide`: the main job on the embedded default model (SmolLM2-135M, CPU).

Constrained batch generation lands with the decode loop; until then this loads the default
model's GGUF vocabulary, builds its TokenizerInfo and token trie, compiles a JSON grammar against
it, and replays a JSON answer token by token: every token must be in the grammar's mask, EOS
only at the end. Mask times are printed.
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np

from jaxguide import Matcher, TokenizerInfo, allocate_token_bitmask, assets, compile_grammar
from jaxguide.grammar import JSON_LARK



def main() -> int:
    path = assets.smollm2_gguf_path()
    start = time.perf_counter()
    info = TokenizerInfo.from_gguf(path)
    elapsed = time.perf_counter() - start
    print(f"model vocabulary: {path}")
    print(f"  {info}")
    print(f"  built TokenizerInfo + token trie in {elapsed * 1e3:.1f} ms: "
          f"{info.native.trie_num_nodes} trie nodes, {info.native.memory_bytes / 2**20:.1f} MiB, "
          f"longest token {info.native.max_token_bytes} bytes")
    print(f"  EOS: {[info.special_token_names.get(i) for i in sorted(info.eos_token_ids)]}")
    sample = json.dumps({"city": "Paris", "country": "France", "population": 2102650,
                         "landmarks": ["Tour Eiffel", "Louvre"]}, ensure_ascii=False)
    ids = info.encode(sample)
    ok = info.decode_bytes(ids) == info.dummy_prefix + sample.encode()
    print(f"  sample output {sample!r}")
    print(f"  -> {len(ids)} tokens; bytes round-trip: {'ok' if ok else 'MISMATCH'}")
    prefix = b'{"'
    print(f"  tokens starting with {prefix!r}: {len(info.tokens_with_prefix(prefix))}")
    compiled = compile_grammar(JSON_LARK, info)
    matcher = Matcher(compiled)
    bitmask = allocate_token_bitmask(1, info.logits_width)
    eos = min(info.eos_token_ids)
    times, allowed_counts = [], []
    for token in ids + [eos]:
        start = time.perf_counter()
        matcher.fill_next_token_bitmask(bitmask)
        times.append(time.perf_counter() - start)
        bits = np.unpackbits(bitmask[0].view(np.uint8), bitorder="little")
        allowed_counts.append(int(bits.sum()))
        if not bits[token] or not matcher.accept_token(token):
            print(f"  MASK ERROR: token {token} {info.token_bytes(token)!r} was blocked")
            return 1
    micros = np.array(times) * 1e6
    print(f"  JSON grammar: all {len(ids)} tokens + EOS allowed by their masks; allowed tokens "
          f"per step min {min(allowed_counts)} / max {max(allowed_counts)}; mask time p50 "
          f"{np.percentile(micros, 50):.0f} us, max {micros.max():.0f} us")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
