"""Smoke test of the Bazel-built jaxguide (//:jaxguide): it imports and its extension works.

Run by `bazel test --config=offline //:jaxguide_smoke_test`; the full suite is pytest's (tests/).
"""

import os
import sys
import unittest


def _drop_editable_finders() -> None:
    # `pip install -e .` (scikit-build-core, setuptools) puts a finder at the front of
    # sys.meta_path that maps `jaxguide` to the source tree and the pip-built extension whatever
    # sys.path says; without this the test would silently check that build, not Bazel's.
    sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in type(f).__module__]


_drop_editable_finders()

import numpy as np  # noqa: E402

import jaxguide  # noqa: E402
from jaxguide import _native  # noqa: E402


class BazelBuiltJaxguideTest(unittest.TestCase):

    def test_imports_the_bazel_built_package(self):
        package_dir = os.path.dirname(os.path.realpath(jaxguide.__file__))
        native_file = os.path.realpath(_native.__file__)
        self.assertTrue(
            package_dir.endswith(os.path.join("python", "jaxguide")),
            f"jaxguide came from {package_dir}, not from //:jaxguide")
        self.assertEqual(os.path.basename(native_file), "_native.so")
        self.assertIn("bazel-out", native_file)

    def test_token_trie(self):
        vocab = [b"a", b"ab", b"abc", b"b", b"", b"ba", b"<eos>"]
        info = jaxguide.TokenizerInfo.from_token_bytes(vocab, eos_token_ids=[6])
        self.assertEqual(info.vocab_size, 7)
        self.assertEqual(info.eos_token_ids, frozenset({6}))
        self.assertEqual(info.token_bytes(2), b"abc")

        with_a = info.tokens_with_prefix(b"a")
        self.assertEqual(with_a.dtype, np.uint32)
        self.assertEqual(with_a.tolist(), [0, 1, 2])
        self.assertEqual(info.tokens_with_prefix(b"b").tolist(), [3, 5])
        self.assertEqual(info.tokens_with_prefix(b"abcd").tolist(), [])
        # EOS and empty tokens have no bytes: never in the trie.
        self.assertEqual(info.tokens_with_prefix(b"").tolist(), [0, 1, 2, 3, 5])
        self.assertEqual(info.tokens_prefixing(b"abz").tolist(), [0, 1])

    def test_native_errors_map_to_the_python_classes(self):
        # The empty vocabulary is rejected by the native TokenizerInfo; the binding must raise
        # jaxguide.TokenizerError (registered by jaxguide/engine/_core.py), not a bare RuntimeError.
        with self.assertRaisesRegex(jaxguide.TokenizerError, "empty"):
            jaxguide.TokenizerInfo.from_token_bytes([])


if __name__ == "__main__":
    unittest.main()
