"""Local `$ref`s: JSON pointers into the root schema, and plain-name fragments; `$dynamicRef`
/ `$recursiveRef` where the dynamic scope is static.

Design note. A reference is resolved against the root only (`#...`; remote references are
refused). A fragment that is not a JSON pointer names a subschema by its `$anchor`, or by a
`$id` (`id` in draft 4) written `#name` (drafts 6 / 7); the names are collected once per
schema, walking every subschema but the data of `enum`, `const`, `default`, `examples`. A
resolved reference answers with the canonical `#/...` pointer of its target, so that the
memos keyed by pointer see one subschema under one name. Cost: one walk of the schema, on
the first plain-name reference. A dynamic reference is static where the root is the only
schema resource (`resolve_dynamic`); elsewhere it is refused.
"""

from __future__ import annotations

from urllib.parse import unquote

from jaxguide.grammars.json_schema.errors import JsonSchemaError

_AMBIGUOUS = "<ambiguous>"  # References.anchors: a name two subschemas give
_DATA_KEYWORDS = frozenset({"enum", "const", "default", "examples"})


class References:
    """The local references of one root schema."""

    def __init__(self, root):
        self.root = root
        self._anchors: dict | None = None  # `anchors`, built on first use
        self.embedded_resource = ""  # (`anchors`) the pointer of a subschema with its own $id

    def resolve(self, ref, pointer: str):
        """(the subschema `ref` names, its canonical `#/...` pointer): a local JSON pointer, or a
        plain name (`anchors`); JsonSchemaError when it names none, or not a schema."""
        if not isinstance(ref, str):
            raise JsonSchemaError("$ref must be a string", pointer, "$ref")
        if not ref.startswith("#"):
            raise JsonSchemaError(f"$ref {ref!r} is not local (remote references are not "
                                  "supported)", pointer, "$ref")
        frag = unquote(ref[1:])
        node = self.root
        if frag and not frag.startswith("/"):  # a plain name: `$anchor`, or `$id` "#name"
            target = self.anchors().get(frag)
            if target is None:
                raise JsonSchemaError(f"$ref {ref!r}: no subschema has this $anchor (or "
                                      "$id)", pointer, "$ref")
            if target is _AMBIGUOUS:
                raise JsonSchemaError(f"$ref {ref!r}: several subschemas have this $anchor",
                                      pointer, "$ref")
            frag = target
        for part in frag.split("/")[1:] if frag else []:
            part = part.replace("~1", "/").replace("~0", "~")
            if isinstance(node, dict) and part in node:
                node = node[part]
            elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            else:
                raise JsonSchemaError(f"$ref {ref!r} does not resolve", pointer, "$ref")
        if not isinstance(node, (dict, bool)):
            raise JsonSchemaError(f"$ref {ref!r} is not a schema", pointer, "$ref")
        return node, "#" + frag

    def resolve_dynamic(self, keyword: str, ref, pointer: str):
        """`resolve` for `$dynamicRef` / `$recursiveRef`: with one schema resource (no
        subschema with an `$id` of its own), the dynamic scope holds only the root, whose
        `$dynamicAnchor` (or `$anchor`) the reference names statically (`$recursiveRef`:
        `#`, the root). JsonSchemaError where embedded resources make the target depend on
        the path that reached it."""
        self.anchors()
        if self.embedded_resource:
            raise JsonSchemaError(f"{keyword} beside embedded schema resources (an $id at "
                                  f"#{self.embedded_resource}): its target depends on the "
                                  "dynamic scope", pointer, keyword)
        return self.resolve(ref, pointer)

    def anchors(self) -> dict:
        """Plain-name fragments -> the JSON pointer of their subschema: `$anchor: name`,
        `$dynamicAnchor: name`, and
        `$id` / `id` (draft 4) written `#name`; _AMBIGUOUS for a name given twice. Values
        of `enum`, `const`, `default`, `examples` are data, not searched."""
        if self._anchors is None:
            self._anchors = {}
            stack = [(self.root, "")]
            while stack:
                node, at = stack.pop()
                if isinstance(node, list):
                    stack += [(v, f"{at}/{i}") for i, v in enumerate(node)]
                    continue
                if not isinstance(node, dict):
                    continue
                names = [node.get("$anchor"), node.get("$dynamicAnchor")] + [
                    node.get(k)[1:] for k in ("$id", "id")
                    if isinstance(node.get(k), str) and node[k].startswith("#")]
                if at and isinstance(node.get("$id"), str) and not node["$id"].startswith("#"):
                    self.embedded_resource = at  # (a subschema that starts a resource)
                for name in names:
                    if isinstance(name, str) and name:
                        known = self._anchors.get(name)
                        self._anchors[name] = at if known in (None, at) else _AMBIGUOUS
                stack += [(v, f"{at}/{k.replace('~', '~0').replace('/', '~1')}")
                          for k, v in node.items() if k not in _DATA_KEYWORDS]
        return self._anchors
