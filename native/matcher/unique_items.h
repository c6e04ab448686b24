// UniqueItems: JSON Schema's `uniqueItems`, and the keys of objects whose members come in any
// order, beyond the grammar. A byte-level scanner over one matcher's JSON output that refuses
// the byte which decides an item equal to an earlier item of the same unique array, or a key
// equal to an earlier key of the same keyed object.
//
// Keyed objects (`property_order="any"`, a brace terminal flagged opens_keyed_object, learnt
// like a unique array's bracket) take each key once: a key is decided at its closing quote
// (decoded: `"a"` and `"\u0061"` are one key). The grammar lets the members come in any
// order and counts those of required names, so that with distinct keys all of them came when
// it lets the object close; which hypothesis of the parser reads the object does not matter
// (distinct keys is a property of the text).
//
// Design note. No grammar can say "the items differ", so the matcher runs this scanner beside
// its lexer. The grammar makes the output JSON, so the scanner only follows strings and
// nesting; which arrays must be unique comes from the parser: such an array's opening bracket is
// a terminal flagged `opens_unique_array`, and with each byte the matcher says whether such a
// terminal was scanned (the bracket's lexeme ends at the first byte after it and its
// whitespace: there the array learns whether it is unique; still undecided at its first other
// byte, it is not). An item's value is decided at a string's closing quote, an object's or an
// array's closing bracket, a literal's first letter (JSON leaves one way to finish `t`, `f`,
// `n`), and for a number at the first byte after it. Its canonical form (strings decoded,
// numbers as exact decimals, object members sorted by key with the last of a repeated key kept,
// whitespace dropped; `true` is not `1`, as in JSON Schema) is then looked up among the earlier
// items of that array.
//
// Dead ends. Refusing the byte that completes a duplicate is not enough: a grammar can leave
// only duplicates to write (`["ab", "a` under an enum of "ab" and "ac" must go on with `c`;
// a bounded integer `[12, 1` must go on with a digit). So the matcher also asks AtRisk: whether
// some unique array's item in progress could still become equal to one of its earlier items
// (PartialItem below compares the item's text so far with each earlier item's canonical form:
// a string's decoded prefix, a number's significant digits, an array's or object's members so
// far), or an item must still come after a comma. Only then does it search the grammar's
// continuations for one that makes the item differ (Matcher::ItemsCanDiffer, a bounded
// search); the mask keeps a token only if one exists.
//
// Sound (never lets a duplicate through), and exact up to documented approximations: where the
// parser holds several hypotheses an array is unique if one of them says so; a search that
// runs out of its budget allows the token (a possible dead end, never a duplicate); an object
// member whose value differs from the earlier item's is taken to keep the objects apart (JSON
// keeps the last of a repeated key, so a later repeat could still make them equal: the
// grammars jaxguide writes never force one).
//
// Cost: O(1) per byte, plus the item's length when an item is decided (its canonical form) and
// a hash lookup. AtRisk reads the open items against the earlier items of their arrays. Items
// only grow, so a Checkpoint (the frame stack, the scanner's flags and two sizes) restores any
// earlier state, for Rollback and for trying a token.
#ifndef JAXGUIDE_NATIVE_MATCHER_UNIQUE_ITEMS_H_
#define JAXGUIDE_NATIVE_MATCHER_UNIQUE_ITEMS_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace jaxguide {

class UniqueItems {
 public:
  // What the parser scanned with a byte (Matcher::Step): a terminal flagged
  // opens_unique_array, a terminal flagged opens_keyed_object.
  struct Scanned {
    bool unique_array = false;
    bool keyed_object = false;
  };
  // For a token's bytes before the parser has read them: every container opened in them
  // checked (sound: more checks).
  static constexpr Scanned kAssumeChecked{true, true};

  struct Frame {
    bool array = false;         // else an object
    uint8_t status = 0;         // kPending, kUnique (arrays) or kKeyed (objects), kPlain
    uint8_t item = 0;           // arrays: kNoItem, kNumber, kOther, kDecided; keyed objects:
                                // kKeyDue, kKeyOpen, kKeyDone, kValue
    uint32_t item_start = 0;    // offset of the item's first byte (arrays), of the key's quote
                                // (keyed objects)
    uint32_t serial = 0;        // which container (its items' / keys' entries in the set)
  };
  struct Checkpoint {
    std::vector<Frame> frames;
    size_t text_size = 0;
    size_t items_size = 0;
    uint32_t next_serial = 0;
    bool in_string = false;
    bool escaped = false;
    size_t active_frames = 0;
  };

  // Which containers the grammar checks (unique arrays, keyed objects); a container of a kind
  // the grammar never checks is plain from its first byte.
  void Configure(bool unique_arrays, bool keyed_objects);
  // Reads one byte of the output, with what the parser scanned with it (see the design
  // note). Returns false when the byte repeats an item of a unique array or a key of a keyed
  // object; the state is then partly advanced (Restore a checkpoint).
  bool Feed(uint8_t byte, Scanned scanned);
  Checkpoint Save() const;
  void Restore(const Checkpoint& checkpoint);
  // Whether a container that is (or may still become) checked is open: masks must be checked.
  bool Active() const { return active_frames_ > 0; }
  bool InString() const { return in_string_; }
  // Whether the output, as it stands, may still be completed only by repeating: some unique
  // array's item in progress can still become equal to an earlier item of that array, or an
  // item must follow a comma; some keyed object's key in progress can still become an earlier
  // key, or a key must follow a comma. With `remainders`, when the text ends inside a string,
  // the rest of every earlier item's string (or key) it is still a prefix of (decoded bytes):
  // a token that extends the string with other bytes (no quote, no backslash) leaves nothing
  // at risk.
  bool AtRisk(std::vector<std::string>* remainders = nullptr) const;
  // Appends to `key` what the future of the scanner depends on, for states that share their
  // first `items_before` items: the open containers and items, the items decided after those,
  // the text of the items in progress without its white space outside strings (which changes
  // no value: the same search follows any run of it). Two such states with equal keys refuse
  // the same continuations. (A search's memo key, with the parser's threads.)
  void AppendStateKey(size_t items_before, std::string* key) const;
  size_t num_items() const { return items_.size(); }

  // The canonical form of one complete JSON value (see the design note); injective on values.
  static std::string Canonical(std::string_view json);

  static constexpr uint8_t kPending = 0, kUnique = 1, kPlain = 2, kKeyed = 3;
  static constexpr uint8_t kNoItem = 0, kNumber = 1, kOther = 2, kDecided = 3;
  static constexpr uint8_t kKeyDue = 0, kKeyOpen = 4, kKeyDone = 5, kValue = 6;

 private:
  void Push(bool array);
  void Pop();
  // Records the decided item text[begin, end) of the top frame; false if it repeats one.
  bool Decide(size_t begin, size_t end);
  bool DecideLiteral(uint8_t letter);
  // Records the key text[begin, end) (quoted) of the top keyed object; false if it repeats.
  bool DecideKey(size_t begin, size_t end);
  bool Insert(std::string key);
  bool TopIsCheckedArray() const {
    return !frames_.empty() && frames_.back().array && frames_.back().status != kPlain;
  }
  bool TopIsKeyedObject() const {
    return !frames_.empty() && !frames_.back().array && frames_.back().status == kKeyed;
  }
  // Appends, for keyed object `frame` whose key in progress is `partial` (decoded), the rest
  // of each earlier key it begins; whether there is one.
  bool KeyAtRisk(const Frame& frame, std::string_view partial,
                 std::vector<std::string>* remainders) const;

  std::vector<Frame> frames_;
  std::string text_;
  // Entries (serial + canonical form of an item, or serial + 'k' + decoded key) in insertion
  // order, and how many times each is in items_.
  std::vector<std::string> items_;
  std::unordered_map<std::string, uint32_t> seen_;
  uint32_t next_serial_ = 0;
  size_t active_frames_ = 0;  // frames with status != kPlain on the stack
  bool in_string_ = false;
  bool escaped_ = false;
  bool unique_arrays_ = true, keyed_objects_ = false;
};

}  // namespace jaxguide

#endif  // JAXGUIDE_NATIVE_MATCHER_UNIQUE_ITEMS_H_
