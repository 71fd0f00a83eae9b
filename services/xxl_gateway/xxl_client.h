#ifndef JOBWHEEL_SERVICES_XXL_GATEWAY_XXL_CLIENT_H_
#define JOBWHEEL_SERVICES_XXL_GATEWAY_XXL_CLIENT_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/time/clock.h"

namespace httplib {
class Client;
}  // namespace httplib

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

// XxlClient on cpp-httplib (no redirects followed; at most `max_body_bytes` of answer read;
// TCP_NODELAY).
// Connections are kept alive and reused, at most `max_idle_per_origin` idle ones per executor,
// each for at most `max_idle` after its last answer — well under the 90 s after which an XXL
// executor closes an idle connection, so a request is not sent on a connection being closed
// (and httplib checks that a kept connection is still open before reusing it). Thread-safe.
class HttplibXxlClient : public XxlClient {
 public:
  struct Options {
    size_t max_body_bytes = 16 << 20;
    int max_idle_per_origin = 32;
    absl::Duration max_idle = absl::Seconds(5);
  };
  HttplibXxlClient(Options options, const Clock& clock);
  ~HttplibXxlClient() override;
  absl::StatusOr<std::string> Post(const std::string& base, absl::string_view path,
                                   const std::string& body, const std::string& token,
                                   absl::Duration timeout) override;

 private:
  struct Idle {
    std::unique_ptr<httplib::Client> client;
    absl::Time since;
  };
  // An idle client of `origin` kept no longer than max_idle, or a new one (nullptr when the
  // origin is not usable).
  std::unique_ptr<httplib::Client> Take(const std::string& origin);
  void Give(const std::string& origin, std::unique_ptr<httplib::Client> client);

  const Options options_;
  const Clock& clock_;
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::vector<Idle>> idle_ ABSL_GUARDED_BY(mu_);
};

}  // namespace jobwheel::xxl

#endif  // JOBWHEEL_SERVICES_XXL_GATEWAY_XXL_CLIENT_H_
