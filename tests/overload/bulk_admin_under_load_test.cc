// Issue 24, "never deadlock under load": jobs paused, deleted and edited in bulk through
// JobAdminService while the real stack (PostgreSQL, registry, dispatcher, leading scheduler, two
// demo executors) fires every job every second. No call fails (a deadlock or serialization
// failure with the fire path is retried inside the store, never returned), and, counted on the
// executors: no run executes twice, no due time runs twice, and every due time of a job before
// its pause either ran or is recorded as skipped (a fire row or a misfire range).
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "common/testing/client_context.h"
#include "common/testing/executions.h"
#include "common/testing/process.h"
#include "common/time/clock.h"
#include "common/time/proto_time.h"
#include "gtest/gtest.h"
#include "pqxx/pqxx"
#include "services/scheduler/fire_plan.h"
#include "tests/e2e/stack_test.h"

namespace jobwheel::e2e {
namespace {

using ::jobwheel::testing::Ctx;
using ::jobwheel::testing::Eventually;
using ::jobwheel::testing::Execution;

// Every job fires every second: kJobs fires/s, spread over the second.
constexpr int kJobs = 600;
constexpr int kThreads = 8;

class BulkAdminUnderLoadTest : public StackTest {
 protected:
  std::vector<Stack::ExecutorSpec> ExecutorSpecs() const override { return {{}, {}}; }

  // Runs `call(i)` for i in [0, n) on kThreads threads; the failures, by message.
  static std::vector<std::string> InParallel(int n, const std::function<grpc::Status(int)>& call) {
    std::atomic<int> next{0};
    absl::Mutex mu;
    std::vector<std::string> failures;
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&] {
        for (int i = next++; i < n; i = next++) {
          const grpc::Status s = call(i);
          if (!s.ok()) {
            absl::MutexLock lock(&mu);
            failures.push_back(
                absl::StrCat("#", i, ": code ", s.error_code(), ": ", s.error_message()));
          }
        }
      });
    }
    for (std::thread& t : threads) t.join();
    return failures;
  }

  grpc::Status Pause(int64_t id, absl::Time* at) {
    jobwheel::v1::PauseJobRequest req;
    req.set_id(id);
    jobwheel::v1::PauseJobResponse resp;
    grpc::Status s = admin_->PauseJob(Ctx(stack_->admin_token()).get(), req, &resp);
    if (s.ok()) *at = FromProto(resp.job().update_time());
    return s;
  }
};

TEST_F(BulkAdminUnderLoadTest, PauseDeleteAndEditInBulkWhileFiring) {
  const absl::Time base = absl::FromUnixSeconds(absl::ToUnixSeconds(RealClock::Get().Now()) + 4);
  std::vector<int64_t> ids(kJobs, 0);
  std::vector<absl::Time> first(kJobs);
  std::vector<std::string> failures = InParallel(kJobs, [&](int i) {
    jobwheel::v1::Job job = NewJob(absl::StrCat("load-", i), "echo", "x");
    job.set_routing_strategy(jobwheel::v1::ROUTING_STRATEGY_ROUND);
    job.mutable_schedule()->mutable_fix_rate()->set_interval_seconds(1);
    *job.mutable_schedule()->mutable_fix_rate()->mutable_start_time() =
        ToProto(base + absl::Microseconds(static_cast<int64_t>(i) * 1000000 / kJobs));
    jobwheel::v1::CreateJobRequest req;
    *req.mutable_job() = job;
    jobwheel::v1::CreateJobResponse resp;
    grpc::Status s = admin_->CreateJob(Ctx(stack_->admin_token()).get(), req, &resp);
    if (s.ok()) {
      ids[i] = resp.job().id();
      first[i] = FromProto(resp.job().next_fire_time());
    }
    return s;
  });
  ASSERT_TRUE(failures.empty()) << failures.size() << " creates failed, first: " << failures[0];
  const int64_t min_id = *std::min_element(ids.begin(), ids.end());
  const int64_t max_id = *std::max_element(ids.begin(), ids.end());
  const std::string ours = absl::StrCat("job_id BETWEEN ", min_id, " AND ", max_id);

  // Firing at the full rate for a few seconds first.
  absl::SleepFor(std::max(base + absl::Seconds(6) - RealClock::Get().Now(), absl::ZeroDuration()));
  ASSERT_GT(QueryInt(absl::StrCat("SELECT count(*) FROM runs WHERE ", ours)), kJobs * 3);

  // A third paused, a third deleted, a third edited, at once, while everything fires.
  std::vector<absl::Time> paused_at(kJobs, absl::InfiniteFuture());
  const absl::Time bulk_start = RealClock::Get().Now();
  failures = InParallel(kJobs, [&](int i) -> grpc::Status {
    if (i % 3 == 0) return Pause(ids[i], &paused_at[i]);
    if (i % 3 == 1) {
      jobwheel::v1::DeleteJobRequest req;
      req.set_id(ids[i]);
      jobwheel::v1::DeleteJobResponse resp;
      return admin_->DeleteJob(Ctx(stack_->admin_token()).get(), req, &resp);
    }
    jobwheel::v1::UpdateJobRequest req;
    req.mutable_job()->set_id(ids[i]);
    req.mutable_job()->set_description("edited under load");
    req.mutable_update_mask()->add_paths("description");
    jobwheel::v1::UpdateJobResponse resp;
    return admin_->UpdateJob(Ctx(stack_->admin_token()).get(), req, &resp);
  });
  const absl::Duration bulk_took = RealClock::Get().Now() - bulk_start;
  EXPECT_TRUE(failures.empty()) << failures.size() << " bulk calls failed, first: " << failures[0];
  std::cerr << "bulk pause/delete/edit of " << kJobs << " jobs took "
            << absl::FormatDuration(bulk_took) << "\n";

  // The edited ones fire on, then are paused too, in bulk.
  absl::SleepFor(absl::Seconds(4));
  failures = InParallel(kJobs, [&](int i) -> grpc::Status {
    return i % 3 == 2 ? Pause(ids[i], &paused_at[i]) : grpc::Status::OK;
  });
  EXPECT_TRUE(failures.empty()) << failures.size() << " pauses failed, first: " << failures[0];

  // Drained: nothing pending, nothing open, every run's start recorded by an executor.
  const std::string pending =
      absl::StrCat("SELECT count(*) FROM fires WHERE status = ", jobwheel::v1::FIRE_STATUS_PENDING,
                   " AND ", ours);
  const std::string open =
      absl::StrCat("SELECT count(*) FROM runs WHERE status IN (", jobwheel::v1::RUN_STATUS_PENDING,
                   ", ", jobwheel::v1::RUN_STATUS_RUNNING, ") AND ", ours);
  ASSERT_TRUE(
      Eventually([&] { return QueryInt(pending) == 0 && QueryInt(open) == 0; }, absl::Seconds(30)))
      << QueryInt(pending) << " fires pending, " << QueryInt(open) << " runs open";
  const int64_t run_rows = QueryInt(absl::StrCat("SELECT count(*) FROM runs WHERE ", ours));
  std::vector<Execution> executions;
  ASSERT_TRUE(Eventually(
      [&] {
        executions = stack_->Executions();
        int64_t starts = 0;
        for (const Execution& e : executions) starts += e.start && e.handler == "echo";
        return starts >= run_rows;
      },
      absl::Seconds(10)))
      << run_rows << " runs, " << executions.size() << " execution lines";

  // The record: each run's due time, each skipped row's range.
  pqxx::connection conn(stack_->dsn());
  pqxx::nontransaction tx(conn);
  absl::flat_hash_map<int64_t, std::pair<int64_t, int64_t>> run_due;  // run → (job, due µs)
  for (const pqxx::row& r : tx.exec(absl::StrCat(
           "SELECT id, job_id, (EXTRACT(EPOCH FROM scheduled_time) * 1000000)::BIGINT, status "
           "FROM runs WHERE ",
           ours))) {
    run_due[r[0].as<int64_t>()] = {r[1].as<int64_t>(), r[2].as<int64_t>()};
    EXPECT_EQ(r[3].as<int>(), jobwheel::v1::RUN_STATUS_SUCCEEDED) << "run " << r[0].as<int64_t>();
  }
  absl::flat_hash_map<int64_t, absl::flat_hash_set<int64_t>> skipped;  // job → due µs
  int64_t skipped_rows = 0, failed_fires = 0;
  for (const pqxx::row& r : tx.exec(absl::StrCat(
           "SELECT job_id, (EXTRACT(EPOCH FROM scheduled_at) * 1000000)::BIGINT, status, reason "
           "FROM fires WHERE ",
           ours, " AND (status IN (", jobwheel::v1::FIRE_STATUS_SKIPPED, ", ",
           jobwheel::v1::FIRE_STATUS_FAILED, ") OR reason LIKE 'misfire:%')"))) {
    if (r[2].as<int>() == jobwheel::v1::FIRE_STATUS_FAILED) ++failed_fires;
    ++skipped_rows;
    // "misfire: N fire(s) …" stands for N due times from its scheduled time; any other row for
    // its own.
    const int64_t n = scheduler::MisfireRangeCount(r[3].as<std::string>()).value_or(1);
    for (int64_t k = 0; k < n; ++k) {
      skipped[r[0].as<int64_t>()].insert(r[1].as<int64_t>() + k * 1000000);
    }
  }
  EXPECT_EQ(failed_fires, 0);

  // Counted on the executors: each run once, each (job, due time) once.
  absl::flat_hash_map<int64_t, int> starts_of_run;
  absl::flat_hash_map<int64_t, absl::flat_hash_map<int64_t, int>> starts_of_due;
  int64_t unknown = 0;
  for (const Execution& e : executions) {
    if (!e.start || e.handler != "echo") continue;
    auto it = run_due.find(e.run_id);
    if (it == run_due.end()) {
      ++unknown;  // An execution the record does not know.
      continue;
    }
    ++starts_of_run[e.run_id];
    ++starts_of_due[it->second.first][it->second.second];
  }
  EXPECT_EQ(unknown, 0);
  int64_t dup_runs = 0, dup_due = 0, not_executed = 0;
  for (const auto& [run, n] : starts_of_run) dup_runs += n > 1;
  for (const auto& [job, dues] : starts_of_due) {
    for (const auto& [due, n] : dues) dup_due += n > 1;
  }
  for (const auto& [run, job_due] : run_due) not_executed += !starts_of_run.contains(run);
  EXPECT_EQ(dup_runs, 0);
  EXPECT_EQ(dup_due, 0);
  EXPECT_EQ(not_executed, 0) << "runs recorded but never started on an executor";

  // Every due time of a paused job before its pause ran or is recorded as skipped.
  int64_t expected = 0, ran = 0, shed = 0, lost = 0, after_pause = 0;
  std::string first_lost;
  for (int i = 0; i < kJobs; ++i) {
    if (i % 3 == 1) continue;  // Deleted: its record goes with it.
    const int64_t job = ids[i];
    const int64_t pause_us = absl::ToUnixMicros(paused_at[i]);
    ASSERT_NE(paused_at[i], absl::InfiniteFuture()) << "job " << job;
    const auto& dues = starts_of_due[job];
    for (int64_t t = absl::ToUnixMicros(first[i]); t < pause_us; t += 1000000) {
      ++expected;
      if (dues.contains(t)) {
        ++ran;
      } else if (skipped[job].contains(t)) {
        ++shed;
      } else {
        ++lost;
        if (first_lost.empty()) {
          first_lost = absl::StrCat("job ", job, " due ", absl::FormatTime(absl::FromUnixMicros(t)),
                                    " (paused ", absl::FormatTime(paused_at[i]), ")");
        }
      }
    }
    // Due after the pause: at most one, already claimed and due when the pause landed.
    for (const auto& [due, n] : dues) after_pause += due >= pause_us + 1000000;
  }
  std::cerr << "checked " << expected << " due times: " << ran << " ran, " << shed
            << " recorded skipped (" << skipped_rows << " rows), " << lost << " lost; "
            << executions.size() << " execution lines\n";
  EXPECT_EQ(lost, 0) << "first: " << first_lost;
  EXPECT_EQ(after_pause, 0) << "due times a second or more after their job's pause ran";
  EXPECT_GT(ran, expected / 2) << "the stack hardly fired: the test checked little";
}

}  // namespace
}  // namespace jobwheel::e2e
