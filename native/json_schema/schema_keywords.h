// The vocabulary of the core's JSON Schema lowering (schema_lowering.cc): how the Python
// normalizer classifies keywords and values, so that the core takes the same shapes.
//
// Contract: each function is the Python rule it names, for the keywords and values the core
// lowers; the core falls back to Python for anything else (tests/grammars/
// test_native_lowering.py compares the two paths).
#ifndef JAXGUIDE_NATIVE_JSON_SCHEMA_SCHEMA_KEYWORDS_H_
#define JAXGUIDE_NATIVE_JSON_SCHEMA_SCHEMA_KEYWORDS_H_

#include <string>
#include <vector>

#include "native/json_schema/schema_lowering.h"

namespace jaxguide {

// null, a boolean, a number or a string.
bool IsScalar(const SchemaNode& node);
// A leaf's type name (string, number, integer, boolean, null).
bool IsLeafType(const std::string& name);
// [0-9A-Za-z_]*: a key spelled as itself (units.literal_units leaves it as it is).
bool IsPlainWord(const std::string& text);
// An injective spelling of a scalar (kind, length, text): equal spellings, equal values.
void AppendScalar(const SchemaNode& node, std::string* out);

// The key terminal of the keys other than `names` when they are all plain words, as units.
// not_names_units spells it for them (`(?!(?:a|b)")unit*`, the names sorted and distinct)
// inside Emitter.key_terminal_regex (then `colon`); false for other names, none, or no
// `canonical_unit` (units.CANONICAL_UNIT).
bool OtherPlainWordsKey(std::vector<std::string> names, const std::string& canonical_unit,
                        const std::string& colon, std::string* regex);

// The keywords of the object and array forms the core lowers itself.
bool IsObjectKeyword(const std::string& key);
bool IsArrayKeyword(const std::string& key);

// The type whose form reads a keyword (normalize's object_form, array_form, string_form,
// number_form), kNone for the others (enum, const, combinators, not, if ...).
enum class KeywordType { kNone, kObject, kArray, kString, kNumber };
KeywordType OwnerType(const std::string& key);

// Whether the normalizer's checks of every schema object (Combinators.trivial_or_checked: no
// null; check_shapes' KEYWORD_SHAPES) pass a keyword's value, read or not.
bool WellFormedKeyword(const std::string& key, const SchemaNode& value);

}  // namespace jaxguide

#endif  // JAXGUIDE_NATIVE_JSON_SCHEMA_SCHEMA_KEYWORDS_H_
