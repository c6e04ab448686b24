"""Schemas with texts that must be accepted and rejected, each one a bug that walking the masks
found (issue #18); used by the JSON Schema instance tests and the soundness tests."""

REGRESSIONS = [
    # \d in the regexes jaxguide writes was Python's (any Unicode digit): 1٥ was an integer.
    ({"type": "integer"}, ["15"], ["1\u0665", "\u0661"]),
    ({"type": "number"}, ["1.5", "1e5"], ["1.5\u0966", "1e\u0660", "\uff11"]),
    ({"type": "integer", "minimum": 3, "maximum": 123456}, ["99"], ["9\u0669"]),
    ({"type": "number", "minimum": 0, "multipleOf": 0.1}, ["2.5"], ["2.\u0665"]),
    ({"type": "string", "format": "date"}, ['"2024-01-31"', '"2024-01-19"'],
     ['"2024-01-1\u0661"', '"202\u0664-01-01"']),
    # items after the prefix of the *same* schema object; allOf parts apply position by position
    ({"allOf": [{"prefixItems": [{"minimum": 3}]}], "items": {"minimum": 5}},
     ["[5, 5]", "[5]", "[]"], ["[3, 5]", "[3]", "[5, 4]"]),
    ({"$schema": "http://json-schema.org/draft-07/schema#",
      "allOf": [{"items": [{"type": "integer"}]}], "additionalItems": False},
     ["[1, null]", "[1]"], ['["x"]']),
    ({"allOf": [{"prefixItems": [{"type": "string"}]}, {"items": {"type": "integer"}}]},
     [], ['["x"]', "[1]"]),
    ({"allOf": [{"items": {"type": "integer"}}, {"prefixItems": [{"minimum": 2}]}]},
     ["[2, 1]", "[]"], ["[1]", '[2, "x"]']),
    # additionalProperties of one allOf part sees only its own properties and patterns
    ({"allOf": [{"type": "object", "additionalProperties": False},
                {"patternProperties": {"^z": {}}}]}, ["{}"], ['{"z": 1}']),
    ({"allOf": [{"patternProperties": {"^z": {"type": "integer"}},
                 "additionalProperties": False},
                {"properties": {"za": {"minimum": 2}}}]},
     ['{"za": 2}', '{"zb": 1}', "{}"], ['{"za": 1}', '{"y": 1}', '{"zb": "x"}']),
    ({"allOf": [{"properties": {"a": {}}, "additionalProperties": False},
                {"properties": {"b": {}}}]}, ['{"a": 1}'], ['{"b": 1}', '{"a": 1, "b": 2}']),
    # allOf with a $ref keeps the properties in the order of the parts
    ({"allOf": [{"$ref": "#/$defs/base"}, {"properties": {"c": {}, "d": {}}}],
      "$defs": {"base": {"properties": {"a": {}, "b": {}}}}},
     ['{"a": 1, "c": 2}', '{"a": 1, "b": 2, "c": 3, "d": 4}'], []),
    ({"propertyNames": False}, ["{}", "1", '"x"'], ['{"a": 1}']),
    ({"type": "object", "propertyNames": False, "required": ["a"]}, [], ["{}", '{"a": 1}']),
    ({"maxProperties": 2.0, "minProperties": 1.0}, ['{"a": 1, "b": 2}', '{"a": 1}'],
     ['{"a": 1, "b": 2, "c": 3}', "{}"]),
    ({"type": "array", "maxItems": 1.0}, ["[1]"], ["[1, 2]"]),
    # numbers compare by value
    ({"const": -2.0}, ["-2", "-2.0", "-2.00"], ["-2.5", "2", "-20"]),
    ({"enum": [0, 2.5]}, ["0", "-0", "0.0", "2.5", "2.50"], ["2.05", "25"]),
    ({"$schema": "http://json-schema.org/draft-04/schema#", "type": "integer", "enum": [0, 1]},
     ["0", "-0", "1"], ["-0.0", "1.0"]),  # a float text is not a draft-4 integer
    ({"type": "number", "multipleOf": 1}, ["6000.0", "6000", "-3.00"], ["6000.5"]),
    ({"type": "number", "multipleOf": 0.1, "maximum": 2}, ["1.50", "1.5", "2", "2.0"],
     ["1.55", "2.1", "2.10"]),
    ({"type": "number", "multipleOf": 0.1, "exclusiveMaximum": 1}, ["0.9", "0.90"],
     ["1", "1.0", "1.00"]),
    # enum / const values are filtered by their sibling keywords
    ({"type": "string", "enum": ["x", "hello"], "minLength": 5}, ['"hello"'], ['"x"']),
    ({"type": "integer", "enum": [1, 50], "maximum": 10}, ["1"], ["50"]),
    ({"enum": [{"a": 1}, {}], "required": ["a"]}, ['{"a": 1}'], ["{}"]),
    ({"enum": ["ab1", "ab"], "pattern": "^[a-z]+$"}, ['"ab"'], ['"ab1"']),
    ({"enum": [1, 2.5, 3], "exclusiveMinimum": 2}, ["2.5", "3", "3.0"], ["1"]),
    ({"enum": [3, 4, 6], "multipleOf": 3}, ["3", "6"], ["4"]),
    ({"enum": [[1], [1, 2], [1, 2, 3]], "maxItems": 2}, ["[1]", "[1, 2]"], ["[1, 2, 3]"]),
    ({"enum": [[1, 1], [1, 2]], "uniqueItems": True}, ["[1, 2]"], ["[1, 1]"]),
    ({"enum": ["a", "b", 3], "not": {"const": "a"}}, ['"b"', "3"], ['"a"']),
    ({"enum": ["1", "\u0661"], "pattern": "^\\d$"}, ['"1"'], ['"\u0661"']),
    ({"allOf": [{"enum": [1, 2, 3]}, {"enum": [2.0, 3]}]}, ["2", "3"], ["1"]),
]
