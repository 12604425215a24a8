#include "state/safetensors.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "core/error.hpp"
#include "state/crc32c.hpp"

namespace mixp::state {
namespace {

// A cursor over the JSON header. Every read checks the end first; errors
// carry the byte offset so that a damaged file can be inspected.
class Json {
 public:
  Json(const uint8_t *p, size_t n, const std::string &what) : p_(p), n_(n), what_(what) {}

  [[noreturn]] void bad(const std::string &msg) const {
    fail(MIXP_ERR_CORRUPT, what_, " is corrupt: header byte ", pos_, ": ", msg);
  }

  void ws() noexcept {
    while (pos_ < n_ && (p_[pos_] == ' ' || p_[pos_] == '\t' || p_[pos_] == '\n' || p_[pos_] == '\r'))
      ++pos_;
  }
  bool at_end() noexcept {
    ws();
    return pos_ == n_;
  }
  // Consumes c (after whitespace) when it is next.
  bool accept(char c) noexcept {
    ws();
    if (pos_ < n_ && p_[pos_] == uint8_t(c)) {
      ++pos_;
      return true;
    }
    return false;
  }
  void expect(char c, const char *context) {
    if (!accept(c)) {
      if (pos_ >= n_) bad(str("the header ends where '", c, "' was expected (", context, ")"));
      bad(str("expected '", c, "' (", context, "), found ", describe(p_[pos_])));
    }
  }

  std::string string(const char *context) {
    ws();
    if (pos_ >= n_ || p_[pos_] != '"') bad(str("expected a string (", context, ")"));
    ++pos_;
    std::string s;
    for (;;) {
      if (pos_ >= n_) bad(str("unterminated string (", context, ")"));
      uint8_t c = p_[pos_++];
      if (c == '"') return s;
      if (c < 0x20) bad(str("control character ", describe(c), " inside a string (", context, ")"));
      if (c != '\\') {
        s.push_back(char(c));
        continue;
      }
      if (pos_ >= n_) bad("unterminated escape");
      c = p_[pos_++];
      switch (c) {
        case '"': s.push_back('"'); break;
        case '\\': s.push_back('\\'); break;
        case '/': s.push_back('/'); break;
        case 'b': s.push_back('\b'); break;
        case 'f': s.push_back('\f'); break;
        case 'n': s.push_back('\n'); break;
        case 'r': s.push_back('\r'); break;
        case 't': s.push_back('\t'); break;
        case 'u': utf8(s, unicode_escape()); break;
        default: bad(str("unknown escape \\", describe(c)));
      }
    }
  }

  // A non-negative integer without sign, fraction or exponent (the only
  // numbers the schema has), at most 2^63 - 1.
  uint64_t uint(const char *context) {
    ws();
    if (pos_ >= n_ || p_[pos_] < '0' || p_[pos_] > '9')
      bad(str("expected a non-negative integer (", context, ")"));
    if (p_[pos_] == '0' && pos_ + 1 < n_ && p_[pos_ + 1] >= '0' && p_[pos_ + 1] <= '9')
      bad(str("integer with a leading zero (", context, ")"));
    uint64_t v = 0;
    while (pos_ < n_ && p_[pos_] >= '0' && p_[pos_] <= '9') {
      const uint64_t d = p_[pos_++] - '0';
      if (v > (uint64_t(INT64_MAX) - d) / 10) bad(str("integer too large (", context, ")"));
      v = v * 10 + d;
    }
    if (pos_ < n_ && (p_[pos_] == '.' || p_[pos_] == 'e' || p_[pos_] == 'E'))
      bad(str("expected an integer, found a real number (", context, ")"));
    return v;
  }

  std::vector<uint64_t> uint_array(const char *context, size_t max) {
    std::vector<uint64_t> v;
    expect('[', context);
    if (accept(']')) return v;
    do {
      if (v.size() == max) bad(str("more than ", max, " entries (", context, ")"));
      v.push_back(uint(context));
    } while (accept(','));
    expect(']', context);
    return v;
  }

 private:
  static std::string describe(uint8_t c) {
    char buf[16];
    if (c >= 0x20 && c < 0x7f) std::snprintf(buf, sizeof buf, "'%c'", c);
    else std::snprintf(buf, sizeof buf, "byte 0x%02x", c);
    return buf;
  }

  uint32_t hex4() {
    if (n_ - pos_ < 4) bad("truncated \\u escape");
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) {
      uint8_t c = p_[pos_++];
      v <<= 4;
      if (c >= '0' && c <= '9') v |= c - '0';
      else if (c >= 'a' && c <= 'f') v |= c - 'a' + 10;
      else if (c >= 'A' && c <= 'F') v |= c - 'A' + 10;
      else bad(str("bad hex digit ", describe(c), " in a \\u escape"));
    }
    return v;
  }

  uint32_t unicode_escape() {
    uint32_t u = hex4();
    if (u >= 0xdc00 && u <= 0xdfff) bad("lone low surrogate in a \\u escape");
    if (u >= 0xd800 && u <= 0xdbff) {
      if (n_ - pos_ < 2 || p_[pos_] != '\\' || p_[pos_ + 1] != 'u')
        bad("high surrogate without its low half in a \\u escape");
      pos_ += 2;
      uint32_t lo = hex4();
      if (lo < 0xdc00 || lo > 0xdfff) bad("high surrogate without its low half in a \\u escape");
      u = 0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00);
    }
    return u;
  }

  static void utf8(std::string &s, uint32_t u) {
    if (u < 0x80) {
      s.push_back(char(u));
    } else if (u < 0x800) {
      s.push_back(char(0xc0 | (u >> 6)));
      s.push_back(char(0x80 | (u & 0x3f)));
    } else if (u < 0x10000) {
      s.push_back(char(0xe0 | (u >> 12)));
      s.push_back(char(0x80 | ((u >> 6) & 0x3f)));
      s.push_back(char(0x80 | (u & 0x3f)));
    } else {
      s.push_back(char(0xf0 | (u >> 18)));
      s.push_back(char(0x80 | ((u >> 12) & 0x3f)));
      s.push_back(char(0x80 | ((u >> 6) & 0x3f)));
      s.push_back(char(0x80 | (u & 0x3f)));
    }
  }

  const uint8_t *p_;
  size_t n_;
  size_t pos_ = 0;
  const std::string &what_;
};

struct DTypeInfo {
  const char *name;
  size_t size;
};
constexpr DTypeInfo kDTypes[] = {{"F64", 8}, {"F32", 4},  {"F16", 2},     {"BF16", 2},
                                 {"I64", 8}, {"I32", 4},  {"I16", 2},     {"I8", 1},
                                 {"U64", 8}, {"U32", 4},  {"U16", 2},     {"U8", 1},
                                 {"BOOL", 1}, {"F8_E4M3", 1}, {"F8_E5M2", 1}};

uint64_t read_le64(const uint8_t *p) noexcept {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

void parse_tensor(Json &j, Entry &e, const std::string &what) {
  bool have_dtype = false, have_shape = false, have_offsets = false;
  j.expect('{', "a tensor entry");
  if (!j.accept('}')) {
    do {
      std::string key = j.string("a tensor field name");
      j.expect(':', "after a field name");
      bool *seen = nullptr;
      if (key == "dtype") {
        seen = &have_dtype;
        e.dtype = j.string("dtype");
      } else if (key == "shape") {
        seen = &have_shape;
        std::vector<uint64_t> dims = j.uint_array("shape", kMaxFileDims);
        e.shape.assign(dims.begin(), dims.end());
      } else if (key == "data_offsets") {
        seen = &have_offsets;
        std::vector<uint64_t> off = j.uint_array("data_offsets", 2);
        if (off.size() != 2)
          fail(MIXP_ERR_CORRUPT, what, " is corrupt: tensor '", e.name,
               "': data_offsets must hold 2 integers, got ", off.size());
        e.begin = off[0];
        e.end = off[1];
      } else {
        fail(MIXP_ERR_CORRUPT, what, " is corrupt: tensor '", e.name, "' has an unknown field '",
             key, "'");
      }
      // `seen` is set only after the value parsed, so a repeat is caught here.
      if (*seen)
        fail(MIXP_ERR_CORRUPT, what, " is corrupt: tensor '", e.name, "' repeats the field '",
             key, "'");
      *seen = true;
    } while (j.accept(','));
    j.expect('}', "end of a tensor entry");
  }
  if (!have_dtype || !have_shape || !have_offsets)
    fail(MIXP_ERR_CORRUPT, what, " is corrupt: tensor '", e.name, "' lacks ",
         !have_dtype ? "dtype" : !have_shape ? "shape" : "data_offsets");
  e.elem_size = dtype_elem_size(e.dtype);
  if (!e.elem_size)
    fail(MIXP_ERR_CORRUPT, what, " is corrupt: tensor '", e.name, "' has an unknown dtype '",
         e.dtype, "'");
  if (e.end < e.begin)
    fail(MIXP_ERR_CORRUPT, what, " is corrupt: tensor '", e.name, "' has data_offsets [", e.begin,
         ", ", e.end, "] that end before they begin");
  // numel * elem_size must equal the byte count; computed with a bound so
  // that no product can overflow (every factor is at most 2^63).
  unsigned __int128 bytes = e.elem_size;
  for (int64_t d : e.shape) {
    bytes *= uint64_t(d);
    if (bytes > e.nbytes()) break;
  }
  if (bytes != e.nbytes())
    fail(MIXP_ERR_CORRUPT, what, " is corrupt: tensor '", e.name, "' (", e.dtype, " ",
         shape_str(e.shape.data(), int(e.shape.size())), ") needs a different byte count than its data_offsets [",
         e.begin, ", ", e.end, "] give");
}

File parse_json(const uint8_t *hdr, size_t n, uint64_t data_bytes, const std::string &what) {
  File f;
  Json j(hdr, n, what);
  bool have_meta = false;
  j.expect('{', "start of the header");
  if (!j.accept('}')) {
    do {
      std::string key = j.string("a tensor name");
      j.expect(':', "after a tensor name");
      if (key == "__metadata__") {
        if (have_meta) fail(MIXP_ERR_CORRUPT, what, " is corrupt: __metadata__ appears twice");
        have_meta = true;
        j.expect('{', "__metadata__");
        if (!j.accept('}')) {
          do {
            std::string k = j.string("a metadata key");
            j.expect(':', "after a metadata key");
            std::string v = j.string("a metadata value (metadata values are strings)");
            if (!f.metadata.emplace(std::move(k), std::move(v)).second)
              fail(MIXP_ERR_CORRUPT, what, " is corrupt: a metadata key appears twice");
          } while (j.accept(','));
          j.expect('}', "end of __metadata__");
        }
        continue;
      }
      Entry e;
      e.name = std::move(key);
      parse_tensor(j, e, what);
      if (!f.index.emplace(e.name, f.tensors.size()).second)
        fail(MIXP_ERR_CORRUPT, what, " is corrupt: tensor '", e.name, "' appears twice");
      f.tensors.push_back(std::move(e));
    } while (j.accept(','));
    j.expect('}', "end of the header");
  }
  if (!j.at_end()) j.bad("unexpected bytes after the header's closing '}'");

  // The data offsets must tile [0, data_bytes) exactly.
  std::vector<const Entry *> order;
  order.reserve(f.tensors.size());
  for (const Entry &e : f.tensors) order.push_back(&e);
  std::stable_sort(order.begin(), order.end(), [](const Entry *a, const Entry *b) {
    return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
  });
  uint64_t at = 0;
  for (const Entry *e : order) {
    if (e->begin != at)
      fail(MIXP_ERR_CORRUPT, what, " is corrupt: tensor '", e->name, "' starts at data offset ",
           e->begin, " but the previous tensor ends at ", at,
           e->begin < at ? " (overlap)" : " (gap)");
    at = e->end;
  }
  if (at != data_bytes)
    fail(MIXP_ERR_CORRUPT, what, " is corrupt: the tensors cover ", at,
         " bytes of data but the file holds ", data_bytes, " after the header",
         at > data_bytes ? " (truncated?)" : "");
  return f;
}

void put_le64(uint8_t *p, uint64_t v) noexcept {
  for (int i = 0; i < 8; ++i) p[i] = uint8_t(v >> (8 * i));
}

}  // namespace

size_t dtype_elem_size(const std::string &dtype) noexcept {
  for (const DTypeInfo &d : kDTypes)
    if (dtype == d.name) return d.size;
  return 0;
}

File parse_header(const uint8_t *data, size_t avail, uint64_t file_size, const std::string &what) {
  if (file_size < 8 || avail < 8)
    fail(MIXP_ERR_CORRUPT, what, " is corrupt: ", file_size,
         " bytes is too short for a safetensors file (truncated?)");
  const uint64_t n = read_le64(data);
  if (n > kMaxHeaderBytes)
    fail(MIXP_ERR_CORRUPT, what, " is corrupt: the header length ", n, " exceeds the ",
         kMaxHeaderBytes, "-byte limit (not a safetensors file?)");
  if (n < 2 || n > file_size - 8)
    fail(MIXP_ERR_CORRUPT, what, " is corrupt: the header length ", n, " does not fit in the ",
         file_size, "-byte file (truncated?)");
  if (avail - 8 < n)
    fail(MIXP_ERR_CORRUPT, what, " is corrupt: only ", avail, " of the header's ", n + 8,
         " bytes could be read");
  File f = parse_json(data + 8, size_t(n), file_size - 8 - n, what);
  f.data_offset = 8 + n;
  return f;
}

File parse(const uint8_t *data, size_t size, const std::string &what) {
  return parse_header(data, size, size, what);
}

uint32_t tensor_crc(const Entry &e, const uint8_t *bytes) noexcept {
  uint32_t c = crc32c(0, e.name.data(), e.name.size() + 0);
  const char zero = 0;
  c = crc32c(c, &zero, 1);
  c = crc32c(c, e.dtype.data(), e.dtype.size());
  c = crc32c(c, &zero, 1);
  for (int64_t d : e.shape) {
    uint8_t le[8];
    put_le64(le, uint64_t(d));
    c = crc32c(c, le, 8);
  }
  return crc32c(c, bytes, size_t(e.nbytes()));
}

uint32_t metadata_crc(const std::map<std::string, std::string> &metadata) noexcept {
  uint32_t c = 0;
  const char zero = 0;
  for (const auto &[k, v] : metadata) {
    if (k.rfind("crc32c.", 0) == 0) continue;
    c = crc32c(c, k.data(), k.size());
    c = crc32c(c, &zero, 1);
    c = crc32c(c, v.data(), v.size());
    c = crc32c(c, &zero, 1);
  }
  return c;
}

std::string crc_hex(uint32_t crc) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%08x", crc);
  return buf;
}

void verify_checksums(const File &f, const uint8_t *data, bool require, const std::string &what) {
  for (const auto &[k, v] : f.metadata) {
    if (k.rfind("crc32c.", 0) != 0 || k == "crc32c.__metadata__") continue;
    if (!f.find(k.substr(7)))
      fail(MIXP_ERR_CORRUPT, what, " is corrupt: a checksum names tensor '", k.substr(7),
           "', which the file does not hold");
  }
  const std::string *m = f.meta("crc32c.__metadata__");
  if (m) {
    if (*m != crc_hex(metadata_crc(f.metadata)))
      fail(MIXP_ERR_CORRUPT, what, " is corrupt: the metadata checksum does not match (",
           "the header was altered)");
  } else if (require) {
    fail(MIXP_ERR_CORRUPT, what, " is corrupt: the metadata checksum is missing");
  }
  for (const Entry &e : f.tensors) {
    const std::string *c = f.meta("crc32c." + e.name);
    if (!c) {
      if (require)
        fail(MIXP_ERR_CORRUPT, what, " is corrupt: tensor '", e.name, "' has no checksum");
      continue;
    }
    if (*c != crc_hex(tensor_crc(e, data + f.data_offset + e.begin)))
      fail(MIXP_ERR_CORRUPT, what, " is corrupt: tensor '", e.name,
           "' does not match its checksum (its bytes, dtype or shape were altered)");
  }
}

std::string json_quote(const std::string &s) {
  std::string o = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      o.push_back('\\');
      o.push_back(char(c));
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      o += buf;
    } else {
      o.push_back(char(c));
    }
  }
  return o + "\"";
}

std::string build_header(const std::vector<OutTensor> &tensors,
                         const std::map<std::string, std::string> &metadata) {
  std::string j = "{";
  if (!metadata.empty()) {
    j += "\"__metadata__\":{";
    bool first = true;
    for (const auto &[k, v] : metadata) {
      if (!first) j += ",";
      first = false;
      j += json_quote(k) + ":" + json_quote(v);
    }
    j += "}";
  }
  uint64_t at = 0;
  for (const OutTensor &t : tensors) {
    if (j.size() > 1) j += ",";
    j += json_quote(t.name) + ":{\"dtype\":\"" + t.dtype + "\",\"shape\":[";
    for (size_t i = 0; i < t.shape.size(); ++i) {
      if (i) j += ',';
      j += std::to_string(t.shape[i]);
    }
    j += "],\"data_offsets\":[" + std::to_string(at) + "," + std::to_string(at + t.nbytes) + "]}";
    at += t.nbytes;
  }
  j += "}";
  while ((j.size() + 8) % 8) j.push_back(' ');
  std::string out(8, '\0');
  put_le64(reinterpret_cast<uint8_t *>(out.data()), j.size());
  return out + j;
}

}  // namespace mixp::state
