#ifndef JOBWHEEL_SERVICES_XXL_GATEWAY_XXL_CLIENT_H_
#define JOBWHEEL_SERVICES_XXL_GATEWAY_XXL_CLIENT_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace jobwheel::xxl {

// Calls one endpoint of an XXL executor: POST <base><path> with a JSON body and the
// XXL-JOB-ACCESS-TOKEN header; returns the answer's body (HTTP 200). The seam tests fake.
// Errors: UNAVAILABLE when no connection could be made (nothing was sent), DEADLINE_EXCEEDED
// when the request may have been sent but no answer came (outcome unknown), INTERNAL for an
// HTTP status other than 200.
class XxlClient {
 public:
  virtual ~XxlClient() = default;
  virtual absl::StatusOr<std::string> Post(const std::string& base, absl::string_view path,
                                           const std::string& body, const std::string& token,
                                           absl::Duration timeout) = 0;
};

// XxlClient on cpp-httplib: a new connection per call (no redirects followed; at most
// `max_body_bytes` of answer read). Thread-safe.
class HttplibXxlClient : public XxlClient {
 public:
  explicit HttplibXxlClient(size_t max_body_bytes = 16 << 20) : max_body_bytes_(max_body_bytes) {}
  absl::StatusOr<std::string> Post(const std::string& base, absl::string_view path,
                                   const std::string& body, const std::string& token,
                                   absl::Duration timeout) override;

 private:
  const size_t max_body_bytes_;
};

}  // namespace jobwheel::xxl

#endif  // JOBWHEEL_SERVICES_XXL_GATEWAY_XXL_CLIENT_H_
