#include "services/scheduler/delay_chain_pass.h"

#include "spdlog/spdlog.h"

namespace jobwheel::scheduler {

absl::StatusOr<FireStore::DelayChainResult> DelayChainPass::Run() {
  const absl::Time start = clock_.Now();
  absl::StatusOr<FireStore::DelayChainResult> result = store_.AdvanceDelayChains(options_.batch);
  metrics_.DbQuery("delay_chains", clock_.Now() - start, result.ok());
  if (!result.ok() && result.status().code() != absl::StatusCode::kFailedPrecondition) {
    spdlog::warn("delay chains: {}", result.status().ToString());
  }
  return result;
}

}  // namespace jobwheel::scheduler
