#include "common/model/instance_tag.h"

#include <openssl/sha.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace jobwheel {

std::string InstanceTag(absl::string_view instance_id) {
  if (instance_id.empty()) return "";
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(instance_id.data()), instance_id.size(), digest);
  std::string tag;
  tag.reserve(32);
  for (int i = 0; i < 16; ++i) absl::StrAppendFormat(&tag, "%02x", digest[i]);
  return tag;
}

std::string ExecutorAudience(absl::string_view app, absl::string_view address) {
  return absl::StrCat(app, "@", address);
}

}  // namespace jobwheel
