"""Fetches llama.cpp's tokenizer conformance suite (GGUF vocabularies + .inp/.out test pairs).

The files are in the llama-cpp-python 0.3.36 sdist on PyPI (vendor/llama.cpp/models/ggml-vocab-*,
MIT licence, copied with llama.cpp's LICENSE). `pip download --no-deps --no-build-isolation
--no-binary :all:` fetches the sdist in seconds (a plain `pip download` builds the package's
build tools first); nothing is built or installed. Cached: when every file is already in the
folder it does nothing.

Usage: python tools/llama_cpp_vocab/fetch.py [DIR]
DIR defaults to $JAXGUIDE_LLAMA_CPP_VOCABS, else ~/.cache/jaxguide/llama-cpp-python-0.3.36/models
(the folder `jaxguide.testing.gguf_conformance.suite_dir()` reads). Exit status 0 when the suite
is in place, 1 when it could not be fetched.
Standard library only.
"""

from __future__ import annotations

import glob
import importlib.util
import os
import subprocess
import sys
import tarfile
import tempfile

VERSION = "0.3.36"
PACKAGE = f"llama-cpp-python=={VERSION}"
STAMP = f".complete-llama-cpp-python-{VERSION}"
MODELS = "vendor/llama.cpp/models/"
EXPECTED_VOCABULARIES = 19


def default_dir() -> str:
    return os.environ.get("JAXGUIDE_LLAMA_CPP_VOCABS") or os.path.join(
        os.path.expanduser("~"), ".cache", "jaxguide", f"llama-cpp-python-{VERSION}", "models")


def _extract(sdist: str, target: str) -> int:
    """Copies the vocabulary files and llama.cpp's LICENSE into `target`; returns the number of
    .gguf files."""
    count = 0
    with tarfile.open(sdist, "r:gz") as archive:
        for member in archive.getmembers():
            parts = member.name.split("/", 1)
            inner = parts[1] if len(parts) == 2 else ""
            name = os.path.basename(inner)
            wanted = (inner.startswith(MODELS + "ggml-vocab-") and member.isfile()) or (
                inner == "vendor/llama.cpp/LICENSE")
            if not wanted:
                continue
            source = archive.extractfile(member)
            if source is None:
                continue
            with open(os.path.join(target, name if name != "LICENSE" else "LICENSE.llama.cpp"),
                      "wb") as out:
                out.write(source.read())
            count += name.endswith(".gguf")
    return count


def fetch(target: str) -> None:
    """Puts the suite into `target` (a no-op when it is complete). Raises RuntimeError."""
    if os.path.isfile(os.path.join(target, STAMP)):
        print(f"llama.cpp vocabulary suite already in {target}")
        return
    if importlib.util.find_spec("scikit_build_core") is None:
        raise RuntimeError("scikit-build-core is not installed: `pip download "
                           "--no-build-isolation` reads the sdist's metadata with it (it is in "
                           "jaxguide's test extra: pip install -e '.[test]')")
    os.makedirs(target, exist_ok=True)
    with tempfile.TemporaryDirectory() as download:
        command = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                   "--no-build-isolation", "--no-binary", ":all:", PACKAGE, "-d", download]
        done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True)
        sdists = glob.glob(os.path.join(download, "llama_cpp_python-*.tar.gz"))
        if done.returncode != 0 or len(sdists) != 1:
            raise RuntimeError(f"`{' '.join(command)}` failed ({done.returncode}):\n"
                               f"{done.stdout[-4000:]}")
        count = _extract(sdists[0], target)
    if count != EXPECTED_VOCABULARIES:
        raise RuntimeError(f"expected {EXPECTED_VOCABULARIES} vocabularies in the sdist, "
                           f"found {count}")
    with open(os.path.join(target, STAMP), "w") as f:
        f.write(f"{PACKAGE}\n")
    print(f"llama.cpp vocabulary suite ({count} vocabularies) fetched into {target}")


def main() -> int:
    target = sys.argv[1] if len(sys.argv) > 1 else default_dir()
    try:
        fetch(target)
    except (RuntimeError, OSError, tarfile.TarError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
