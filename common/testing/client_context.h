#ifndef JOBWHEEL_COMMON_TESTING_CLIENT_CONTEXT_H_
#define JOBWHEEL_COMMON_TESTING_CLIENT_CONTEXT_H_

#include <memory>
#include <string>

#include "absl/time/time.h"
#include "grpcpp/client_context.h"

namespace jobwheel::testing {

// A client context for one test call: `authorization: Bearer <token>` (when non-empty) and a
// deadline `deadline` from now.
std::unique_ptr<grpc::ClientContext> Ctx(const std::string& token,
                                         absl::Duration deadline = absl::Seconds(10));

}  // namespace jobwheel::testing

#endif  // JOBWHEEL_COMMON_TESTING_CLIENT_CONTEXT_H_
