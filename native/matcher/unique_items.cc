// UniqueItems: the scanner and the canonical form of JSON values (see unique_items.h).
#include "native/matcher/unique_items.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <utility>
#include <vector>

namespace jaxguide {
namespace {

bool IsSpace(uint8_t b) { return b == ' ' || b == '\t' || b == '\n' || b == '\r'; }

// Reads one byte inside a JSON string (after its opening quote): whether it closes the
// string. *escaped: the byte follows a backslash (set and cleared here).
bool ClosesString(uint8_t byte, bool* escaped) {
  if (*escaped) {
    *escaped = false;
    return false;
  }
  if (byte == '\\') {
    *escaped = true;
    return false;
  }
  return byte == '"';
}

bool IsNumberByte(uint8_t b) {
  return (b >= '0' && b <= '9') || b == '-' || b == '+' || b == '.' || b == 'e' || b == 'E';
}

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {  // lone surrogates too (WTF-8): distinct values stay distinct
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

void AppendLength(size_t n, std::string* out) {
  out->append(std::to_string(n));
  out->push_back(':');
}

uint32_t Hex4(std::string_view h) {
  uint32_t v = 0;
  for (const char x : h) {
    v = v * 16 + static_cast<uint32_t>(x <= '9' ? x - '0' : (x | 0x20) - 'a' + 10);
  }
  return v;
}

// Decodes the JSON string escape at s[i] (its backslash) into `out` (UTF-8; a lone surrogate
// as WTF-8, so distinct strings stay distinct); returns the bytes it takes, 0 when the text
// ends inside it (a high surrogate's `\uXXXX` at the end waits for a low one too).
size_t DecodeEscape(std::string_view s, size_t i, std::string* out) {
  if (i + 1 >= s.size()) return 0;
  const char e = s[i + 1];
  if (e != 'u') {
    switch (e) {
      case 'b': out->push_back('\b'); break;
      case 'f': out->push_back('\f'); break;
      case 'n': out->push_back('\n'); break;
      case 'r': out->push_back('\r'); break;
      case 't': out->push_back('\t'); break;
      default: out->push_back(e);  // \" \\ \/
    }
    return 2;
  }
  if (i + 6 > s.size()) return 0;
  uint32_t cp = Hex4(s.substr(i + 2, 4));
  size_t length = 6;
  if (cp >= 0xD800 && cp < 0xDC00) {
    if (i + 6 >= s.size()) return 0;  // a low half may still follow
    if (s[i + 6] == '\\') {
      if (i + 7 >= s.size()) return 0;
      if (s[i + 7] == 'u') {
        if (i + 12 > s.size()) return 0;
        const uint32_t low = Hex4(s.substr(i + 8, 4));
        if (low >= 0xDC00 && low < 0xE000) {
          cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          length = 12;
        }
      }
    }
  }
  AppendUtf8(cp, out);
  return length;
}

// Appends the decoded content of a JSON string (no quotes), as far as it goes: an escape cut
// short at the end is left out.
void DecodeString(std::string_view content, std::string* out) {
  for (size_t i = 0; i < content.size();) {
    if (content[i] != '\\') {
      out->push_back(content[i++]);
      continue;
    }
    const size_t length = DecodeEscape(content, i, out);
    if (length == 0) return;
    i += length;
  }
}

// A recursive-descent reader of one JSON value (the grammar made it valid JSON; anything else
// is read leniently, never out of bounds) into its canonical form.
class CanonicalReader {
 public:
  explicit CanonicalReader(std::string_view text) : s_(text) {}

  void Value(std::string* out) {
    SkipSpace();
    if (i_ >= s_.size()) return;
    const char c = s_[i_];
    if (c == '"') {
      std::string decoded;
      String(&decoded);
      out->push_back('s');
      AppendLength(decoded.size(), out);
      out->append(decoded);
    } else if (c == '{') {
      Object(out);
    } else if (c == '[') {
      Array(out);
    } else if (c == 't' || c == 'f' || c == 'n') {
      out->push_back(c == 'n' ? 'z' : c);
      while (i_ < s_.size() && s_[i_] >= 'a' && s_[i_] <= 'z') ++i_;
    } else {
      Number(out);
    }
  }

 private:
  void SkipSpace() {
    while (i_ < s_.size() && IsSpace(static_cast<uint8_t>(s_[i_]))) ++i_;
  }

  void String(std::string* out) {
    ++i_;  // the opening quote
    while (i_ < s_.size() && s_[i_] != '"') {
      if (s_[i_] != '\\') {
        out->push_back(s_[i_++]);
        continue;
      }
      const size_t length = DecodeEscape(s_, i_, out);
      if (length == 0) break;  // (a complete value never ends inside an escape)
      i_ += length;
    }
    ++i_;  // the closing quote
  }

  void Object(std::string* out) {
    ++i_;
    std::map<std::string, std::string> members;  // sorted by key; the last repeat wins
    SkipSpace();
    while (i_ < s_.size() && s_[i_] != '}') {
      SkipSpace();
      std::string key;
      String(&key);
      SkipSpace();
      if (i_ < s_.size() && s_[i_] == ':') ++i_;
      std::string value;
      Value(&value);
      members[std::move(key)] = std::move(value);
      SkipSpace();
      if (i_ < s_.size() && s_[i_] == ',') ++i_;
      SkipSpace();
    }
    ++i_;
    out->push_back('o');
    AppendLength(members.size(), out);
    for (const auto& [key, value] : members) {
      AppendLength(key.size(), out);
      out->append(key);
      out->append(value);
    }
  }

  void Array(std::string* out) {
    ++i_;
    std::string items;
    size_t count = 0;
    SkipSpace();
    while (i_ < s_.size() && s_[i_] != ']') {
      Value(&items);
      ++count;
      SkipSpace();
      if (i_ < s_.size() && s_[i_] == ',') ++i_;
      SkipSpace();
    }
    ++i_;
    out->push_back('a');
    AppendLength(count, out);
    out->append(items);
  }

  // An exact decimal: sign, significant digits without leading or trailing zeros, and the
  // power of ten of the last one (saturated far beyond any double). 0 and -0 are one value.
  void Number(std::string* out) {
    bool negative = false;
    if (i_ < s_.size() && s_[i_] == '-') {
      negative = true;
      ++i_;
    }
    std::string digits;
    int64_t exponent = 0;
    while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') digits.push_back(s_[i_++]);
    if (i_ < s_.size() && s_[i_] == '.') {
      ++i_;
      while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') {
        digits.push_back(s_[i_++]);
        --exponent;
      }
    }
    if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
      ++i_;
      bool minus = false;
      if (i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-')) minus = s_[i_++] == '-';
      int64_t e = 0;
      while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') {
        e = std::min<int64_t>(e * 10 + (s_[i_++] - '0'), int64_t{1} << 40);
      }
      exponent += minus ? -e : e;
    }
    const size_t first = digits.find_first_not_of('0');
    if (first == std::string::npos) {
      out->append("n0");
      return;
    }
    size_t last = digits.size();
    while (digits[last - 1] == '0') {
      --last;
      ++exponent;
    }
    out->append(negative ? "n-" : "n");
    out->append(digits, first, last - first);
    out->push_back('e');
    out->append(std::to_string(exponent));
    out->push_back(';');
  }

  std::string_view s_;
  size_t i_ = 0;
};

// Where a canonical value (see the design note) ends, from its first byte at `i`.
size_t SkipCanonical(std::string_view c, size_t i);

// Reads "<n>:" at i (advancing i past the colon).
size_t ReadCount(std::string_view c, size_t* i) {
  size_t n = 0;
  while (*i < c.size() && c[*i] >= '0' && c[*i] <= '9') n = n * 10 + static_cast<size_t>(c[(*i)++] - '0');
  if (*i < c.size()) ++*i;  // ':'
  return n;
}

size_t SkipCanonical(std::string_view c, size_t i) {
  if (i >= c.size()) return c.size();
  switch (c[i++]) {
    case 's': {
      const size_t n = ReadCount(c, &i);
      return std::min(c.size(), i + n);
    }
    case 'n': {
      if (i < c.size() && c[i] == '0') return i + 1;
      const size_t end = c.find(';', i);
      return end == std::string_view::npos ? c.size() : end + 1;
    }
    case 'o': {
      const size_t n = ReadCount(c, &i);
      for (size_t k = 0; k < n && i < c.size(); ++k) {
        i += ReadCount(c, &i);          // the key
        i = SkipCanonical(c, i);       // its value
      }
      return std::min(i, c.size());
    }
    case 'a': {
      const size_t n = ReadCount(c, &i);
      for (size_t k = 0; k < n && i < c.size(); ++k) i = SkipCanonical(c, i);
      return std::min(i, c.size());
    }
    default:
      return i;  // t, f, z
  }
}

// Whether an open number (its text so far, which more bytes may extend) can still become the
// number of canonical form `c`: the same sign, and significant digits that can still grow
// into c's (an exponent may come, so the decimal point's place is not compared).
bool OpenNumberCanBecome(std::string_view raw, std::string_view c) {
  if (c.empty() || c[0] != 'n') return false;
  const bool negative = !raw.empty() && raw[0] == '-';
  std::string digits;  // mantissa digits, leading zeros dropped
  bool exponent = false;
  for (const char ch : raw) {
    if (ch == 'e' || ch == 'E') exponent = true;
    if (exponent || ch < '0' || ch > '9') continue;
    if (!digits.empty() || ch != '0') digits.push_back(ch);
  }
  if (c == "n0") return digits.empty();
  const bool c_negative = c.size() > 1 && c[1] == '-';
  if (negative != c_negative) return false;
  const size_t begin = c_negative ? 2 : 1;
  const std::string_view target = c.substr(begin, c.find('e', begin) - begin);
  while (exponent && !digits.empty() && digits.back() == '0') digits.pop_back();
  if (digits.empty()) return !exponent;
  if (exponent) return digits == target;
  // More digits may come: digits must begin target, or be target followed by zeros.
  if (target.substr(0, digits.size()) == digits) return true;
  return digits.size() > target.size() && digits.compare(0, target.size(), target) == 0 &&
         digits.find_first_not_of('0', target.size()) == std::string::npos;
}

// Whether the text of a JSON value in progress (a prefix of valid JSON, as the grammar made
// it) can still become the value of a given canonical form. Recursive over arrays and
// objects: their members so far must equal the target's, the member in progress must be able
// to become the target's. An object member whose value differs is taken to rule the target
// out (see the design note on repeated keys).
class PartialItem {
 public:
  PartialItem(std::string_view raw, std::vector<std::string>* remainders)
      : s_(raw), remainders_(remainders) {}

  bool CanBecome(std::string_view canonical) {
    i_ = 0;
    return Value(canonical) != kNo;
  }

 private:
  enum Result { kNo, kOpen, kEqual };  // kOpen: the text ends inside the value

  void SkipSpace() {
    while (i_ < s_.size() && IsSpace(static_cast<uint8_t>(s_[i_]))) ++i_;
  }
  bool AtEnd() const { return i_ >= s_.size(); }

  Result Value(std::string_view c) {
    SkipSpace();
    if (AtEnd()) return kOpen;
    const char ch = s_[i_];
    if (ch == '"') {
      if (c.empty() || c[0] != 's') return kNo;
      size_t at = 1;
      const size_t n = ReadCount(c, &at);
      return String(c.substr(at, n));
    }
    if (ch == '[') return Array(c);
    if (ch == '{') return Object(c);
    if (ch == 't' || ch == 'f' || ch == 'n') {
      while (!AtEnd() && s_[i_] >= 'a' && s_[i_] <= 'z') ++i_;
      return c.size() == 1 && c[0] == (ch == 'n' ? 'z' : ch) ? kEqual : kNo;
    }
    const size_t begin = i_;
    while (!AtEnd() && IsNumberByte(static_cast<uint8_t>(s_[i_]))) ++i_;
    if (AtEnd()) return OpenNumberCanBecome(s_.substr(begin), c) ? kOpen : kNo;
    return UniqueItems::Canonical(s_.substr(begin, i_ - begin)) == c ? kEqual : kNo;
  }

  // Decodes the string at i_ (its opening quote) against `target`, a decoded string; the
  // text may end inside it (then the rest of target is a remainder).
  Result String(std::string_view target) {
    ++i_;
    std::string decoded;
    while (!AtEnd()) {
      const char ch = s_[i_];
      if (ch == '"') {
        ++i_;
        return decoded == target ? kEqual : kNo;
      }
      if (ch != '\\') {
        decoded.push_back(ch);
        ++i_;
      } else {
        const size_t length = DecodeEscape(s_, i_, &decoded);
        if (length == 0) {  // the text ends inside the escape
          i_ = s_.size();
          break;
        }
        i_ += length;
      }
      if (decoded.size() > target.size() ||
          target.compare(0, decoded.size(), decoded) != 0) {
        return kNo;
      }
    }
    if (target.compare(0, decoded.size(), decoded) != 0 || decoded.size() > target.size()) {
      return kNo;
    }
    if (remainders_ != nullptr) remainders_->emplace_back(target.substr(decoded.size()));
    return kOpen;
  }

  Result Array(std::string_view c) {
    if (c.empty() || c[0] != 'a') return kNo;
    size_t at = 1;
    const size_t count = ReadCount(c, &at);
    ++i_;  // [
    size_t index = 0;
    bool item_due = false;  // after a comma
    for (;;) {
      SkipSpace();
      if (AtEnd()) return item_due && index >= count ? kNo : kOpen;
      if (s_[i_] == ']') {
        ++i_;
        return index == count ? kEqual : kNo;
      }
      if (s_[i_] == ',') {
        ++i_;
        item_due = true;
        continue;
      }
      item_due = false;
      if (index >= count) return kNo;
      const size_t end = SkipCanonical(c, at);
      const Result item = Value(c.substr(at, end - at));
      if (item != kEqual) return item;
      at = end;
      ++index;
    }
  }

  Result Object(std::string_view c) {
    if (c.empty() || c[0] != 'o') return kNo;
    size_t at = 1;
    const size_t count = ReadCount(c, &at);
    std::map<std::string_view, std::string_view> members;
    for (size_t k = 0; k < count && at < c.size(); ++k) {
      const size_t n = ReadCount(c, &at);
      const std::string_view key = c.substr(at, n);
      at += n;
      const size_t end = SkipCanonical(c, at);
      members.emplace(key, c.substr(at, end - at));
      at = end;
    }
    ++i_;  // {
    std::map<std::string_view, bool> written;
    for (;;) {
      SkipSpace();
      if (AtEnd()) return kOpen;
      if (s_[i_] == '}') {
        ++i_;
        return written.size() == members.size() ? kEqual : kNo;
      }
      if (s_[i_] == ',') {
        ++i_;
        continue;
      }
      if (s_[i_] != '"') return kNo;
      // The key: open, it must begin some key of the target.
      std::vector<std::string>* remainders = remainders_;
      std::vector<std::string> open_keys;
      remainders_ = &open_keys;
      bool found = false;
      std::string_view value;
      std::string_view key;
      const size_t key_start = i_;
      for (const auto& [name, canonical] : members) {
        i_ = key_start;
        const Result r = String(name);
        if (r == kOpen) found = true;
        if (r == kEqual) {
          key = name;
          value = canonical;
          break;
        }
      }
      remainders_ = remainders;
      if (key.data() == nullptr) {
        if (!found) return kNo;
        if (remainders_ != nullptr) {
          for (std::string& rest : open_keys) remainders_->push_back(std::move(rest));
        }
        return kOpen;
      }
      SkipSpace();
      if (AtEnd()) return kOpen;
      if (s_[i_] == ':') ++i_;
      const Result member = Value(value);
      if (member != kEqual) return member;
      written[key] = true;
    }
  }

  std::string_view s_;
  size_t i_ = 0;
  std::vector<std::string>* remainders_;
};

}  // namespace

std::string UniqueItems::Canonical(std::string_view json) {
  std::string out;
  CanonicalReader(json).Value(&out);
  return out;
}

void UniqueItems::Configure(bool unique_arrays, bool keyed_objects) {
  unique_arrays_ = unique_arrays;
  keyed_objects_ = keyed_objects;
}

void UniqueItems::Push(bool array) {
  Frame frame;
  frame.array = array;
  frame.status = (array ? unique_arrays_ : keyed_objects_) ? kPending : kPlain;
  frame.serial = next_serial_++;
  if (frame.status != kPlain) ++active_frames_;
  frames_.push_back(frame);
}

void UniqueItems::Pop() {
  if (frames_.empty()) return;
  if (frames_.back().status != kPlain) --active_frames_;
  frames_.pop_back();
}

bool UniqueItems::DecideKey(size_t begin, size_t end) {
  Frame& top = frames_.back();
  top.item = kKeyDone;
  std::string key(reinterpret_cast<const char*>(&top.serial), sizeof(top.serial));
  key.push_back('k');
  DecodeString(std::string_view(text_).substr(begin + 1, end - begin - 2), &key);
  return Insert(std::move(key));
}

bool UniqueItems::Insert(std::string key) {
  uint32_t& count = seen_[key];
  if (count > 0) return false;
  ++count;
  items_.push_back(std::move(key));
  return true;
}

bool UniqueItems::Decide(size_t begin, size_t end) {
  Frame& top = frames_.back();
  top.item = kDecided;
  std::string key(reinterpret_cast<const char*>(&top.serial), sizeof(top.serial));
  key += Canonical(std::string_view(text_).substr(begin, end - begin));
  return Insert(std::move(key));
}

bool UniqueItems::DecideLiteral(uint8_t letter) {
  Frame& top = frames_.back();
  top.item = kDecided;
  std::string key(reinterpret_cast<const char*>(&top.serial), sizeof(top.serial));
  key.push_back(letter == 'n' ? 'z' : static_cast<char>(letter));
  return Insert(std::move(key));
}

bool UniqueItems::Feed(uint8_t byte, Scanned scanned) {
  const size_t offset = text_.size();
  text_.push_back(static_cast<char>(byte));
  if (!in_string_ && !frames_.empty()) {
    Frame& top = frames_.back();
    if (top.status == kPending) {
      if (top.array ? scanned.unique_array : scanned.keyed_object) {
        top.status = top.array ? kUnique : kKeyed;
      } else if (!IsSpace(byte)) {
        top.status = kPlain;
        --active_frames_;
      }
    }
  }
  if (in_string_) {
    if (ClosesString(byte, &escaped_)) {
      in_string_ = false;
      if (TopIsCheckedArray() && frames_.back().item == kOther) {
        return Decide(frames_.back().item_start, offset + 1);
      }
      if (TopIsKeyedObject() && frames_.back().item == kKeyOpen) {
        return DecideKey(frames_.back().item_start, offset + 1);
      }
    }
    return true;
  }
  if (TopIsCheckedArray() && frames_.back().item == kNumber && !IsNumberByte(byte)) {
    if (!Decide(frames_.back().item_start, offset)) return false;
  }
  const bool item_starts = !frames_.empty() && frames_.back().array &&
                           frames_.back().item == kNoItem && !IsSpace(byte) && byte != ',' &&
                           byte != ']';
  if (item_starts) {
    frames_.back().item_start = static_cast<uint32_t>(offset);
    frames_.back().item = IsNumberByte(byte) ? kNumber : kOther;
  }
  switch (byte) {
    case '"':
      in_string_ = true;
      if (TopIsKeyedObject() && frames_.back().item == kKeyDue) {
        frames_.back().item = kKeyOpen;
        frames_.back().item_start = static_cast<uint32_t>(offset);
      }
      break;
    case '[':
    case '{':
      Push(byte == '[');
      break;
    case ']':
    case '}':
      Pop();
      if (TopIsCheckedArray() && frames_.back().item == kOther) {
        return Decide(frames_.back().item_start, offset + 1);
      }
      break;
    case ',':
      if (!frames_.empty() && frames_.back().array) frames_.back().item = kNoItem;
      if (TopIsKeyedObject()) frames_.back().item = kKeyDue;
      break;
    case ':':
      if (TopIsKeyedObject()) frames_.back().item = kValue;
      break;
    case 't':
    case 'f':
    case 'n':
      if (item_starts && TopIsCheckedArray()) return DecideLiteral(byte);
      break;
    default:
      break;
  }
  return true;
}

bool UniqueItems::KeyAtRisk(const Frame& frame, std::string_view partial,
                            std::vector<std::string>* remainders) const {
  bool risk = false;
  for (const std::string& entry : items_) {
    if (entry.size() <= sizeof(frame.serial) ||
        std::memcmp(entry.data(), &frame.serial, sizeof(frame.serial)) != 0 ||
        entry[sizeof(frame.serial)] != 'k') {
      continue;
    }
    const std::string_view key = std::string_view(entry).substr(sizeof(frame.serial) + 1);
    if (frame.item == kKeyDue) return true;  // a key must follow, and some are taken
    if (key.substr(0, partial.size()) == partial) {
      risk = true;
      if (remainders == nullptr) return true;
      remainders->emplace_back(key.substr(partial.size()));
    }
  }
  return risk;
}

bool UniqueItems::AtRisk(std::vector<std::string>* remainders) const {
  bool risk = false;
  for (const Frame& frame : frames_) {
    if (!frame.array && frame.status == kKeyed &&
        (frame.item == kKeyDue || frame.item == kKeyOpen)) {
      std::string partial;
      if (frame.item == kKeyOpen) {  // the key so far, decoded (an escape cut short dropped)
        DecodeString(std::string_view(text_).substr(frame.item_start + 1), &partial);
      }
      if (KeyAtRisk(frame, partial, remainders)) {
        risk = true;
        if (remainders == nullptr) return true;
      }
      continue;
    }
    if (!frame.array || frame.status != kUnique || frame.item == kDecided) continue;
    const std::string_view partial = std::string_view(text_).substr(frame.item_start);
    for (const std::string& key : items_) {
      if (std::memcmp(key.data(), &frame.serial, sizeof(frame.serial)) != 0) continue;
      // An earlier item of this array: after a comma any item could repeat it.
      if (frame.item == kNoItem) return true;
      PartialItem item(partial, remainders);
      if (item.CanBecome(std::string_view(key).substr(sizeof(frame.serial)))) {
        risk = true;
        if (remainders == nullptr) return true;
      }
    }
  }
  return risk;
}

void UniqueItems::AppendStateKey(size_t items_before, std::string* key) const {
  size_t open_item = text_.size();
  for (const Frame& frame : frames_) {
    const uint8_t fields[3] = {frame.array, frame.status, frame.item};
    key->append(reinterpret_cast<const char*>(fields), sizeof(fields));
    key->append(reinterpret_cast<const char*>(&frame.serial), sizeof(frame.serial));
    if (frame.array ? frame.item == kNumber || frame.item == kOther : frame.item == kKeyOpen) {
      open_item = std::min<size_t>(open_item, frame.item_start);
    }
  }
  const size_t sizes[2] = {items_.size(), frames_.size()};
  key->append(reinterpret_cast<const char*>(sizes), sizeof(sizes));
  for (size_t i = std::min(items_before, items_.size()); i < items_.size(); ++i) {
    const size_t length = items_[i].size();
    key->append(reinterpret_cast<const char*>(&length), sizeof(length));
    key->append(items_[i]);
  }
  key->push_back(static_cast<char>(in_string_ * 2 + escaped_));
  // The open items' text without its white space outside strings, which changes no value (a
  // search from after a run of spaces is the one from after any other run; an open item
  // starts outside a string).
  bool in_string = false, escaped = false;
  for (size_t i = open_item; i < text_.size(); ++i) {
    const char c = text_[i];
    if (in_string) {
      in_string = !ClosesString(static_cast<uint8_t>(c), &escaped);
    } else if (c == '"') {
      in_string = true;
    } else if (IsSpace(static_cast<uint8_t>(c))) {
      continue;
    }
    key->push_back(c);
  }
}

UniqueItems::Checkpoint UniqueItems::Save() const {
  return Checkpoint{frames_,    text_.size(), items_.size(), next_serial_,
                    in_string_, escaped_,     active_frames_};
}

void UniqueItems::Restore(const Checkpoint& checkpoint) {
  frames_ = checkpoint.frames;
  text_.resize(checkpoint.text_size);
  while (items_.size() > checkpoint.items_size) {
    auto it = seen_.find(items_.back());
    if (it != seen_.end() && --it->second == 0) seen_.erase(it);
    items_.pop_back();
  }
  next_serial_ = checkpoint.next_serial;
  in_string_ = checkpoint.in_string;
  escaped_ = checkpoint.escaped;
  active_frames_ = checkpoint.active_frames;
}

}  // namespace jaxguide
