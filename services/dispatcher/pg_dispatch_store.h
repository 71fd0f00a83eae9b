#ifndef JOBWHEEL_SERVICES_DISPATCHER_PG_DISPATCH_STORE_H_
#define JOBWHEEL_SERVICES_DISPATCHER_PG_DISPATCH_STORE_H_

#include <vector>

#include "common/pg/pg_pool.h"
#include "services/dispatcher/dispatch_store.h"

namespace jobwheel::dispatcher {

// DispatchStore on PostgreSQL (tables fires and runs, see common/pg/migrations.cc). Each call is
// one transaction with multi-row statements, so a batch costs a handful of round trips.
class PgDispatchStore : public DispatchStore {
 public:
  explicit PgDispatchStore(PgPool& pool) : pool_(pool) {}

  absl::StatusOr<std::vector<FireResult>> DispatchFires(const std::vector<v1::Fire>& fires,
                                                        absl::Time now,
                                                        const FirePlanner& plan) override;
  absl::StatusOr<std::vector<int64_t>> RecordTriggerOutcomes(
      const std::vector<TriggerOutcome>& outcomes) override;
  absl::StatusOr<std::vector<int64_t>> RerouteRuns(const std::vector<Reroute>& reroutes) override;
  absl::StatusOr<std::vector<ResultRecord>> RecordResults(
      const std::vector<v1::RunResult>& results, absl::Time now, const AppScope& scope,
      const std::vector<TriggerOutcome>& answers) override;

 private:
  PgPool& pool_;
};

}  // namespace jobwheel::dispatcher

#endif  // JOBWHEEL_SERVICES_DISPATCHER_PG_DISPATCH_STORE_H_
