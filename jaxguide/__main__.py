"""`python -m jaxguide`: the main job on the embedded default model (SmolLM2-135M, CPU).

Constrained batch generation lands with the decode loop; until then this loads the default
model's GGUF vocabulary, builds its TokenizerInfo and token trie, and checks that the token bytes
spell back a sample of constrained-style output exactly.
"""

from __future__ import annotations

import json
import sys
import time

from jaxguide import TokenizerInfo, assets


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
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
