#include "common/testing/client_context.h"

#include <chrono>

#include "common/auth/bearer.h"

namespace jobwheel::testing {

std::unique_ptr<grpc::ClientContext> Ctx(const std::string& token, absl::Duration deadline) {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(std::chrono::system_clock::now() + absl::ToChronoMilliseconds(deadline));
  AddBearer(*ctx, token);
  return ctx;
}

}  // namespace jobwheel::testing
