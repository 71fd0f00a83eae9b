#ifndef JOBWHEEL_BENCH_BENCH_DB_H_
#define JOBWHEEL_BENCH_BENCH_DB_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "bench/fire_sets.h"
#include "bench/shed_ranges.h"
#include "pqxx/pqxx"

namespace jobwheel::bench {

// The bench's view of the jobwheel database. It defines its jobs directly under its own app
// name and only ever changes or deletes rows of those jobs (and the registrations of its own
// apps): a database it is attached to keeps every job, fire and run it did not create. One
// connection; not thread-safe.
class BenchDb {
 public:
  static absl::StatusOr<std::unique_ptr<BenchDb>> Connect(const std::string& dsn, std::string app);

  const std::string& app() const { return app_; }
  // A SQL condition on `job_id` that holds only for this bench's jobs.
  std::string OwnJobs() const;
  // A PostgreSQL literal of `t`.
  static std::string Ts(absl::Time t);

  absl::Status Exec(absl::string_view sql);
  absl::StatusOr<pqxx::result> Query(absl::string_view sql);
  // The first column of the first row as an integer (NULL: 0).
  absl::StatusOr<int64_t> Count(absl::string_view sql);

  // `n` FIX_RATE jobs of period `period_s`, first due times spread evenly over one period from
  // `first`: a steady n/period_s fires per second. Returns their schedules.
  absl::StatusOr<std::vector<JobSchedule>> CreateSpreadJobs(absl::string_view tag, int n,
                                                            int64_t period_s, absl::Time first);
  // `n` cron jobs `* * * * * ?` from `first` (a whole second): all due on the same second.
  absl::StatusOr<std::vector<JobSchedule>> CreateBurstJobs(absl::string_view tag, int n,
                                                           absl::Time first);

  // Disables the bench's jobs and deletes their pending fires due at or after `from`.
  absl::Status StopLoad(absl::Time from);
  // The same for the bench's jobs among `ids` only (while the others go on firing).
  absl::Status PauseJobs(const std::vector<int64_t>& ids, absl::Time from);
  // Statements run again after PostgreSQL aborted them (deadlock, serialization failure).
  int64_t retried() const { return retried_; }
  // Waits until the bench's jobs have no pending fire due before `due_before` and no open
  // run; DEADLINE_EXCEEDED after `timeout`.
  absl::Status WaitDrained(absl::Time due_before, absl::Duration timeout);
  // Ends the previous load: disables the bench's jobs, deletes their pending fires, waits for
  // their open runs to end (bounded), then deletes their runs, fires and the jobs themselves.
  absl::Status RemoveOwnLoad(absl::Duration timeout);
  // Deletes the bench's runs, fires and jobs at once, open or not.
  absl::Status DeleteOwnRows();
  // Waits (10 s) for the executors of `apps` to be offline, then deletes their rows and the
  // app rows left without executors or jobs.
  absl::Status RemoveOwnRegistrations(const std::vector<std::string>& apps);

  // The bench's fire rows due in [from, to): one key per row.
  struct FireRows {
    std::vector<FireKey> keys;
    int64_t failed = 0;   // FAILED (no executor etc.).
    int64_t skipped = 0;  // SKIPPED (misfire).
    int64_t pending = 0;  // Never handed off.
    // Rows standing for several due times ("misfire: N fire(s) …", a range the leader shed or
    // a pause cut off): not in `keys` nor counted above; ExpandRanges adds what they stand for.
    std::vector<SkippedRow> ranges;
  };
  absl::StatusOr<FireRows> ReadFires(absl::Time from, absl::Time to);
  // Fires due in [from, to) whose run's SUCCEEDED result is durable now.
  absl::StatusOr<int64_t> CountCompleted(absl::Time from, absl::Time to);
  // Fires whose run's start time (the executor's report of its handler start, durable with
  // its result) is in [from, to).
  absl::StatusOr<int64_t> CountStarted(absl::Time from, absl::Time to);

 private:
  BenchDb(std::unique_ptr<pqxx::connection> conn, std::string app)
      : conn_(std::move(conn)), app_(std::move(app)) {}
  absl::StatusOr<std::vector<JobSchedule>> ReadSchedules(bool burst, absl::Time first);
  // Deletes the pending fires due at or after `from` of the jobs `jobs` (an SQL condition on
  // job_id), locking them in id order.
  absl::Status DeletePendingFires(absl::string_view jobs, absl::Time from);
  // Disables the bench's enabled jobs matching the SQL condition `which`, recording the due
  // times cut off of those behind their schedule, as the API's pause does.
  absl::Status DisableJobs(absl::string_view which);

  std::unique_ptr<pqxx::connection> conn_;
  const std::string app_;
  int64_t retried_ = 0;
};

}  // namespace jobwheel::bench

#endif  // JOBWHEEL_BENCH_BENCH_DB_H_
