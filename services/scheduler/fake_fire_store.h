#ifndef JOBWHEEL_SERVICES_SCHEDULER_FAKE_FIRE_STORE_H_
#define JOBWHEEL_SERVICES_SCHEDULER_FAKE_FIRE_STORE_H_

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/time/clock.h"
#include "jobwheel/v1/types.pb.h"
#include "services/scheduler/alarm_outbox_fake.h"
#include "services/scheduler/fire_store.h"

namespace jobwheel::scheduler {

// An in-memory FireStore for tests, with the PostgreSQL store's semantics (pg_fire_store_test
// checks those against the database): jobs, fires, runs and executors in maps; one mutex
// stands for the transaction, so an operation is atomic. "The database's now" is `clock`.
// Leadership is set by the test; a failure can be injected for the next operation.
class FakeFireStore : public FireStore {
 public:
  struct FireRow {
    int64_t id = 0;
    int64_t job_id = 0;
    absl::Time scheduled;
    jobwheel::v1::TriggerType trigger_type = jobwheel::v1::TRIGGER_TYPE_MANUAL;
    jobwheel::v1::FireStatus status = jobwheel::v1::FIRE_STATUS_PENDING;
    std::string reason;
    std::optional<std::string> param;
    int shard_index = 0;
    int shard_total = 0;
    std::string executor_address;
    int attempt = 0;
    std::optional<int64_t> parent_run_id;
    int64_t epoch = 0;
    absl::Time create_time;
  };
  struct RunRow {
    int64_t id = 0;
    int64_t fire_id = 0;
    int64_t job_id = 0;
    std::string app = "demo";
    jobwheel::v1::RunStatus status = jobwheel::v1::RUN_STATUS_PENDING;
    int attempt = 0;
    int shard_index = 0;
    int shard_total = 1;
    std::string executor_address = "127.0.0.1:7200";
    std::string result_message;
    std::string trigger_message;
    absl::Time trigger_time;
    std::optional<absl::Time> start_time;
    std::optional<absl::Time> end_time;
    bool followup_done = false;
    bool alarm_sent = false;
  };
  struct ExecutorRow {
    std::string app = "demo";
    std::string address;
    bool online = true;
    // The label jobwheel.process_start_us, as the SDK writes it (any text).
    std::optional<std::string> process_start_us;
    // executors.offline_since and instance_since.
    std::optional<absl::Time> offline_since;
    std::optional<absl::Time> instance_since;
  };

  explicit FakeFireStore(const Clock& clock) : clock_(clock) {}

  // Leadership and the epoch that writes carry.
  void SetLeader(bool leader, int64_t epoch = 1);
  // The next operation fails with `status` (and writes nothing).
  void FailNext(absl::Status status);
  // The next operation named `what` ("claim due jobs", "load pending fires", "settle late
  // fires", "monitors", "retention") fails with `status`.
  void FailNextOf(std::string what, absl::Status status);
  // Runs `hook` inside the next operation (as PgFireStore's fenced transaction calls the
  // elector's on_deposed on the calling thread when it finds leadership lost).
  void OnNextOperation(std::function<void()> hook);
  // How many operations ran (succeeded or not): the transactions a real store would open.
  int operations() const;

  // Jobs: `job.id()` 0 gets the next id. `child_scope` nullopt: every app; default {}: the
  // parent's app only (the column's default).
  int64_t AddJob(jobwheel::v1::Job job,
                 std::optional<std::vector<std::string>> child_scope = std::vector<std::string>{});
  void UpdateJob(int64_t id, const std::function<void(jobwheel::v1::Job&)>& edit);
  void DeleteJob(int64_t id);
  std::optional<jobwheel::v1::Job> job(int64_t id) const;

  int64_t AddFire(FireRow fire);
  std::vector<FireRow> fires() const;
  // As a dispatcher: a PENDING fire becomes DISPATCHED (false when it is not PENDING).
  bool DispatchFire(int64_t id);
  void DeleteFire(int64_t id);

  int64_t AddRun(RunRow run);
  std::vector<RunRow> runs() const;
  std::optional<RunRow> run(int64_t id) const;
  void SetExecutors(std::vector<ExecutorRow> executors);
  // Where the monitor pass queues alarms: its own outbox unless the test shares one (with an
  // AlarmSender, say) through SetAlarmOutbox.
  FakeAlarmOutbox& alarm_outbox();
  void SetAlarmOutbox(FakeAlarmOutbox* outbox);

  // FireStore.
  bool IsLeader() const override;
  absl::StatusOr<ClaimResult> ClaimDueJobs(absl::Time horizon, int limit,
                                           const ClaimPlanner& plan) override;
  absl::StatusOr<PendingPage> LoadPendingFires(const PendingCursor& after, bool all_types,
                                               int limit, const LatePlanner& late) override;
  absl::StatusOr<std::vector<int64_t>> SettleLateFires(const std::vector<int64_t>& fire_ids,
                                                       const LatePlanner& late) override;
  absl::StatusOr<MonitorResult> RunMonitorPass(const MonitorLimits& limits,
                                               const FollowupPlanner& plan) override;
  // No delay chains: FIX_DELAY is tested against PostgreSQL (pg_fire_store_test).
  absl::StatusOr<DelayChainResult> AdvanceDelayChains(int limit) override;
  absl::StatusOr<int> DeleteHistory(absl::Time cutoff, int limit) override;
  absl::StatusOr<int> DeleteAuditHistory(absl::Time cutoff, int limit) override;

 private:
  struct JobRow {
    jobwheel::v1::Job job;
    std::optional<std::vector<std::string>> child_scope;
  };
  // Counts the operation; FAILED_PRECONDITION when not leading, or the injected failure.
  absl::Status Begin(absl::string_view what) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Applies a late-fire plan to the rows still PENDING (as PgFireStore's UPDATE does).
  void ApplyLatePlan(const LatePlan& plan) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Inserts unless a unique index of the fires table would refuse it; returns its id or 0.
  int64_t InsertFire(FireRow fire) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Ends lost runs as PgFireStore's monitor pass does.
  void EndLostRuns(const MonitorLimits& limits, MonitorResult& result)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Clock& clock_;
  mutable absl::Mutex mu_;
  bool leader_ ABSL_GUARDED_BY(mu_) = false;
  int64_t epoch_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Status fail_next_ ABSL_GUARDED_BY(mu_);
  // Which operation fail_next_ is for (empty: any).
  std::string fail_next_what_ ABSL_GUARDED_BY(mu_);
  std::function<void()> next_hook_ ABSL_GUARDED_BY(mu_);
  int operations_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  std::map<int64_t, JobRow> jobs_ ABSL_GUARDED_BY(mu_);
  std::map<int64_t, FireRow> fires_ ABSL_GUARDED_BY(mu_);
  std::map<int64_t, RunRow> runs_ ABSL_GUARDED_BY(mu_);
  std::vector<ExecutorRow> executors_ ABSL_GUARDED_BY(mu_);
  FakeAlarmOutbox own_outbox_;
  FakeAlarmOutbox* outbox_ ABSL_GUARDED_BY(mu_) = &own_outbox_;
};

}  // namespace jobwheel::scheduler

#endif  // JOBWHEEL_SERVICES_SCHEDULER_FAKE_FIRE_STORE_H_
