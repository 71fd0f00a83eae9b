#include "services/http_executor/http_transfer.h"

#include "absl/strings/match.h"

namespace jobwheel::http_executor {

std::string HttpResponse::Header(absl::string_view name) const {
  for (const auto& [n, v] : headers) {
    if (absl::EqualsIgnoreCase(n, name)) return v;
  }
  return "";
}

}  // namespace jobwheel::http_executor
