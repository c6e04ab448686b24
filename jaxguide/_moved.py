"""The module paths of jaxguide before the layout step, still importable.

`jaxguide.mask_queue`, `jaxguide.json_schema`, ... were flat modules; they now live in
subpackages (`jaxguide.device.mask_queue`, `jaxguide.grammars.json_schema`, ...). Importing an
old path gives a small module that forwards every attribute to the new one (on first use, so
`import jaxguide.mask_queue` alone does not import JAX); the objects are the same.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types

MOVED_MODULES = {
    "jaxguide.grammar": "jaxguide.grammars.grammar",
    "jaxguide.json_schema": "jaxguide.grammars.json_schema",
    "jaxguide.json_schema_dialect": "jaxguide.grammars.json_schema.dialect",
    "jaxguide.tokenizer": "jaxguide.engine.tokenizer",
    "jaxguide.gguf_metadata": "jaxguide.engine.gguf_metadata",
    "jaxguide.matcher": "jaxguide.engine",
    "jaxguide.batch_matcher": "jaxguide.engine.batch_matcher",
    "jaxguide.speculation": "jaxguide.engine.speculation",
    "jaxguide.mask_queue": "jaxguide.device.mask_queue",
    "jaxguide.sampling": "jaxguide.device.sampling",
    "jaxguide.distributed": "jaxguide.device.distributed",
    "jaxguide.speculative_decode": "jaxguide.decode.speculative",
    "jaxguide.assets": "jaxguide.models.assets",
    "jaxguide.config": "jaxguide.jobs.config",
    "jaxguide.generation_job": "jaxguide.jobs.generation_job",
}


class _ForwardingModule(types.ModuleType):
    """An old module path: attribute reads go to the module it moved to."""

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(importlib.import_module(MOVED_MODULES[self.__name__]), name)

    def __dir__(self):
        return dir(importlib.import_module(MOVED_MODULES[self.__name__]))


class _MovedModuleFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path=None, target=None):
        if name not in MOVED_MODULES:
            return None
        return importlib.machinery.ModuleSpec(name, self)

    def create_module(self, spec):
        module = _ForwardingModule(spec.name)
        module.__doc__ = f"Moved to {MOVED_MODULES[spec.name]} (this path keeps working)."
        return module

    def exec_module(self, module) -> None:
        pass


def install() -> None:
    if not any(isinstance(finder, _MovedModuleFinder) for finder in sys.meta_path):
        sys.meta_path.append(_MovedModuleFinder())
