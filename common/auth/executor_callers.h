#ifndef JOBWHEEL_COMMON_AUTH_EXECUTOR_CALLERS_H_
#define JOBWHEEL_COMMON_AUTH_EXECUTOR_CALLERS_H_

#include <map>
#include <memory>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "common/auth/caller_token.h"
#include "grpcpp/grpcpp.h"

namespace jobwheel {

// Who may call ExecutorService, on every kind of executor (the C++ SDK, the XXL gateway's
// identities): caller tokens (common/auth/caller_token.h) for the executor's
// "<app>@<address>", each issuer only on the RPCs it makes:
//  - the dispatcher (kIssuerDispatcher): Run, RunBatch, Beat, IdleBeat, GetRuns;
//  - the scheduler (kIssuerScheduler): Kill, Log (its admin API's kill and log viewer).
// A missing, malformed, forged or expired token is UNAUTHENTICATED; a valid token of an issuer
// on an RPC it may not call is PERMISSION_DENIED. `insecure_dev` accepts any call.
struct ExecutorCallers {
  bool insecure_dev = false;
  std::shared_ptr<const CallerTokenVerifier> verifier;
};

enum class ExecutorRpc { kRun, kRunBatch, kKill, kBeat, kIdleBeat, kLog, kGetRuns };

// The issuer whose tokens `rpc` accepts.
absl::string_view ExecutorRpcIssuer(ExecutorRpc rpc);
absl::string_view ExecutorRpcName(ExecutorRpc rpc);

// OK when the call's `authorization: Bearer <caller token>` may make `rpc` (see
// ExecutorCallers).
absl::Status AuthorizeExecutorCall(
    const std::multimap<grpc::string_ref, grpc::string_ref>& metadata,
    const ExecutorCallers& callers, ExecutorRpc rpc);

}  // namespace jobwheel

#endif  // JOBWHEEL_COMMON_AUTH_EXECUTOR_CALLERS_H_
