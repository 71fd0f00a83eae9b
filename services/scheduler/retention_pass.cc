#include "services/scheduler/retention_pass.h"

namespace jobwheel::scheduler {
namespace {

// Rows deleted per retention transaction, and transactions per kind of row and pass.
constexpr int kRetentionBatch = 1000;
constexpr int kRetentionRounds = 100;

// Calls `delete_batch(kRetentionBatch)` until it deletes nothing (at most kRetentionRounds
// times); how many rows it deleted in all.
template <typename DeleteBatch>
absl::StatusOr<int> DeleteInRounds(DeleteBatch delete_batch) {
  int deleted = 0;
  for (int round = 0; round < kRetentionRounds; ++round) {
    absl::StatusOr<int> n = delete_batch(kRetentionBatch);
    if (!n.ok()) return n.status();
    deleted += *n;
    if (*n == 0) break;
  }
  return deleted;
}

}  // namespace

absl::StatusOr<int> RetentionPass::Run() {
  const absl::Time cutoff = clock_.Now() - options_.retention;
  absl::StatusOr<int> history =
      DeleteInRounds([&](int limit) { return store_.DeleteHistory(cutoff, limit); });
  if (!history.ok()) return history.status();
  const absl::Time audit_cutoff = clock_.Now() - options_.audit_retention;
  absl::StatusOr<int> audit =
      DeleteInRounds([&](int limit) { return store_.DeleteAuditHistory(audit_cutoff, limit); });
  if (!audit.ok()) return audit.status();
  return *history + *audit;
}

}  // namespace jobwheel::scheduler
