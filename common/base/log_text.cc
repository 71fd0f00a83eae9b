#include "common/base/log_text.h"

#include "absl/strings/str_cat.h"

namespace jobwheel {

std::string LogText(absl::string_view text, size_t max_bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  const absl::string_view kept = text.substr(0, max_bytes);
  std::string out;
  out.reserve(kept.size() + 16);
  for (char ch : kept) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if (c == '\\') {
      out += "\\\\";
    } else if (c >= 0x20 && c < 0x7f) {
      out += ch;
    } else {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 0xf];
    }
  }
  if (kept.size() < text.size()) absl::StrAppend(&out, "...(", text.size(), " bytes)");
  return out;
}

}  // namespace jobwheel
