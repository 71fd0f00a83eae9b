#include "common/auth/executor_callers.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/auth/bearer.h"

namespace jobwheel {

absl::string_view ExecutorRpcIssuer(ExecutorRpc rpc) {
  switch (rpc) {
    case ExecutorRpc::kRun:
    case ExecutorRpc::kRunBatch:
    case ExecutorRpc::kBeat:
    case ExecutorRpc::kIdleBeat:
    case ExecutorRpc::kGetRuns:
      return kIssuerDispatcher;
    case ExecutorRpc::kKill:
    case ExecutorRpc::kLog:
      return kIssuerScheduler;
  }
  return {};
}

absl::string_view ExecutorRpcName(ExecutorRpc rpc) {
  switch (rpc) {
    case ExecutorRpc::kRun:
      return "Run";
    case ExecutorRpc::kRunBatch:
      return "RunBatch";
    case ExecutorRpc::kKill:
      return "Kill";
    case ExecutorRpc::kBeat:
      return "Beat";
    case ExecutorRpc::kIdleBeat:
      return "IdleBeat";
    case ExecutorRpc::kLog:
      return "Log";
    case ExecutorRpc::kGetRuns:
      return "GetRuns";
  }
  return "?";
}

absl::Status AuthorizeExecutorCall(
    const std::multimap<grpc::string_ref, grpc::string_ref>& metadata,
    const ExecutorCallers& callers, ExecutorRpc rpc) {
  if (callers.insecure_dev) return absl::OkStatus();
  absl::StatusOr<absl::string_view> token = BearerTokenOf(metadata);
  if (!token.ok()) return token.status();
  if (callers.verifier == nullptr || !absl::StartsWith(*token, kCallerTokenPrefix)) {
    return absl::UnauthenticatedError("invalid token");
  }
  absl::StatusOr<CallerIdentity> caller = callers.verifier->Verify(*token);
  if (!caller.ok()) return caller.status();
  const absl::string_view allowed = ExecutorRpcIssuer(rpc);
  if (caller->issuer != allowed) {
    return absl::PermissionDeniedError(
        absl::StrCat("ExecutorService.", ExecutorRpcName(rpc), ": tokens of issuer \"",
                     caller->issuer, "\" are not accepted (only \"", allowed, "\")"));
  }
  return absl::OkStatus();
}

}  // namespace jobwheel
