#include "tools/jobwheelctl/terminal_text.h"

#include <cstdint>

#include "absl/strings/str_format.h"

namespace jobwheel::ctl {
namespace {

// Length of the valid UTF-8 sequence starting at text[i] (0 when invalid) and its code point.
size_t DecodeUtf8(absl::string_view text, size_t i, uint32_t* cp) {
  const auto byte = [&](size_t k) { return static_cast<uint8_t>(text[k]); };
  const uint8_t b0 = byte(i);
  size_t n = 0;
  uint32_t min = 0;
  if (b0 >= 0xc2 && b0 <= 0xdf) {
    n = 2, *cp = b0 & 0x1f, min = 0x80;
  } else if (b0 >= 0xe0 && b0 <= 0xef) {
    n = 3, *cp = b0 & 0x0f, min = 0x800;
  } else if (b0 >= 0xf0 && b0 <= 0xf4) {
    n = 4, *cp = b0 & 0x07, min = 0x10000;
  } else {
    return 0;
  }
  if (i + n > text.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((byte(i + k) & 0xc0) != 0x80) return 0;
    *cp = (*cp << 6) | (byte(i + k) & 0x3f);
  }
  if (*cp < min || *cp > 0x10ffff || (*cp >= 0xd800 && *cp <= 0xdfff)) return 0;
  return n;
}

bool IsBidiControl(uint32_t cp) {
  return (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
}

}  // namespace

std::string EscapeForTerminal(absl::string_view text, bool keep_tabs) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const uint8_t c = static_cast<uint8_t>(text[i]);
    if (c < 0x80) {
      if (c == '\t' && keep_tabs) {
        out.push_back('\t');
      } else if (c == '\n') {
        out += "\\n";
      } else if (c == '\r') {
        out += "\\r";
      } else if (c == '\t') {
        out += "\\t";
      } else if (c < 0x20 || c == 0x7f) {
        out += absl::StrFormat("\\x%02x", c);
      } else {
        out.push_back(static_cast<char>(c));
      }
      ++i;
      continue;
    }
    uint32_t cp = 0;
    const size_t n = DecodeUtf8(text, i, &cp);
    if (n == 0) {
      out += absl::StrFormat("\\x%02x", c);
      ++i;
    } else if (cp <= 0x9f) {  // C1 control, e.g. U+009B (CSI).
      out += absl::StrFormat("\\x%02x", cp);
      i += n;
    } else if (IsBidiControl(cp)) {
      out += absl::StrFormat("\\u%04x", cp);
      i += n;
    } else {
      out.append(text.data() + i, n);
      i += n;
    }
  }
  return out;
}

}  // namespace jobwheel::ctl
