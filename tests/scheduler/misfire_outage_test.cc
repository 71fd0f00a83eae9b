// Misfire strategies across an outage, with real processes: PostgreSQL, registry, dispatcher,
// a demo executor and two scheduler processes, never running at the same time.
//
// Two jobs fire every second (`* * * * * ?`), one DO_NOTHING and one FIRE_ONCE_NOW. Scheduler
// A leads and claims ahead (--preread_window 5 s + --claim_ahead 5 s), so when it is killed
// (SIGKILL) it leaves about 10 s of PENDING fires per job. No standby runs: for 30 s nothing
// fires. Then scheduler B starts and takes over with --misfire_threshold=5s: A's fires are now
// late (the takeover load), and the jobs' next_fire_at is more than the threshold in the past
// (the claim). Counted on the executor (its executions file; each execution's fire row gives
// the scheduled second and trigger type) and in B's Prometheus metrics:
//  - DO_NOTHING: no execution for any second of the outage (from the kill to the threshold
//    before B took over); every second from the takeover on executes once; the missed seconds
//    are SKIPPED rows ("late:" one second each, "misfire: N fire(s) from ..." a range) and
//    jobwheel_scheduler_misfires_total{strategy="do_nothing"} counts them all;
//  - FIRE_ONCE_NOW: exactly one execution (trigger type MISFIRE) stands for the missed seconds,
//    the others are SKIPPED; then every second again; strategy="fire_once_now" counts them;
//  - every second of each job from its first fire to the end of the window is stood for by
//    exactly one fire row (none lost, none twice); each run id executed once, each fire row at
//    most once, skipped rows never.
#include <signal.h>

#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "common/testing/executions.h"
#include "common/testing/process.h"
#include "common/testing/stack.h"
#include "common/testing/stack_test.h"
#include "common/time/clock.h"
#include "common/time/proto_time.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "jobwheel/v1/job_admin.grpc.pb.h"
#include "jobwheel/v1/leadership.grpc.pb.h"
#include "pqxx/pqxx"
#include "services/scheduler/fire_plan.h"

namespace jobwheel {
namespace {

using testing::Eventually;
using testing::PickFreePort;
using testing::Stack;

constexpr char kCron[] = "* * * * * ?";
constexpr absl::Duration kThreshold = absl::Seconds(5);
constexpr absl::Duration kOutage = absl::Seconds(30);
constexpr int kPending = 1;
constexpr int kDispatched = 2;
constexpr int kSkipped = 3;
constexpr int kMisfireTrigger = 4;  // jobwheel.v1.TRIGGER_TYPE_MISFIRE
constexpr int kCronTrigger = 1;

std::string Ms(absl::Duration d) { return absl::StrCat(absl::ToInt64Milliseconds(d), " ms"); }
std::string Sec(int64_t unix_s) {
  return absl::FormatTime("%H:%M:%S", absl::FromUnixSeconds(unix_s), absl::UTCTimeZone());
}

// One fire row of a job.
struct FireRow {
  int64_t id = 0;
  int64_t scheduled_s = 0;  // Unix seconds (every fire is on a whole second).
  int trigger = 0;
  int status = 0;
  std::string reason;
  // The seconds it stands for: its own, or a claim-time misfire row's whole range.
  int64_t seconds = 1;
};

// "misfire: N fire(s) from ..." → N; 1 for any other reason (-1: a misfire row without a count).
int64_t SecondsStoodFor(const std::string& reason) {
  if (!absl::StartsWith(reason, "misfire: ")) return 1;
  return scheduler::MisfireRangeCount(reason).value_or(-1);
}

class MisfireOutageTest : public testing::StackTest {
 protected:
  void SetUp() override {
    Stack::Options options;
    options.migrate_database = true;
    options.metrics = true;
    options.executor_token = absl::StrCat("misfire-outage-executor-", PickFreePort());
    options.scheduler.replicas = 2;
    options.scheduler.replica_ids = {"sched-a", "sched-b"};
    options.scheduler.start_later = true;
    options.scheduler.extra_flags = {"--misfire_threshold=5s", "--preread_window=5s",
                                     "--claim_ahead=5s"};
    ASSERT_NO_FATAL_FAILURE(StartStack(options));
  }

  std::shared_ptr<grpc::Channel> SchedulerChannel(int i) {
    return grpc::CreateChannel(stack_->scheduler(i), grpc::InsecureChannelCredentials());
  }

  int64_t CreateEverySecondJob(int scheduler, const std::string& name,
                               jobwheel::v1::MisfireStrategy strategy) {
    auto admin = jobwheel::v1::JobAdminService::NewStub(SchedulerChannel(scheduler));
    jobwheel::v1::CreateJobRequest create;
    jobwheel::v1::Job* job = create.mutable_job();
    job->set_app("demo");
    job->set_name(name);
    job->set_handler("echo");
    job->mutable_schedule()->mutable_cron()->set_expression(kCron);
    job->mutable_schedule()->mutable_cron()->set_time_zone("UTC");
    job->set_misfire_strategy(strategy);
    job->set_enabled(true);
    jobwheel::v1::CreateJobResponse created;
    grpc::Status s = admin->CreateJob(Ctx().get(), create, &created);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return created.job().id();
  }

  int64_t Count(const std::string& sql) {
    pqxx::nontransaction tx(*db_);
    pqxx::result r = tx.exec(sql);
    return r.empty() || r[0][0].is_null() ? 0 : r[0][0].as<int64_t>();
  }

  std::vector<FireRow> Fires(int64_t job) {
    std::vector<FireRow> out;
    pqxx::nontransaction tx(*db_);
    for (const pqxx::row& r : tx.exec(absl::StrCat(
             "SELECT id, (EXTRACT(EPOCH FROM scheduled_at) * 1000000)::BIGINT, trigger_type, "
             "status, coalesce(reason, '') FROM fires WHERE job_id = ",
             job, " ORDER BY scheduled_at, id"))) {
      FireRow f;
      f.id = r[0].as<int64_t>();
      const int64_t us = r[1].as<int64_t>();
      EXPECT_EQ(us % 1000000, 0) << "fire " << f.id << " not on a whole second";
      f.scheduled_s = us / 1000000;
      f.trigger = r[2].as<int>();
      f.status = r[3].as<int>();
      f.reason = r[4].as<std::string>();
      f.seconds = SecondsStoodFor(f.reason);
      out.push_back(std::move(f));
    }
    return out;
  }

  // Handler starts of `job` on the executor, by fire id.
  std::map<int64_t, int> StartsPerFire(int64_t job) {
    std::map<int64_t, int> n;
    for (const testing::Execution& e : testing::Starts(stack_->Executions(0), job)) ++n[e.fire_id];
    return n;
  }

  // Executions of CRON fires of `job` scheduled at or after `from`.
  int ExecutedSince(int64_t job, absl::Time from) {
    const std::map<int64_t, int> starts = StartsPerFire(job);
    int n = 0;
    for (const FireRow& f : Fires(job)) {
      if (f.trigger == kCronTrigger && absl::FromUnixSeconds(f.scheduled_s) >= from &&
          starts.count(f.id) > 0) {
        ++n;
      }
    }
    return n;
  }

  // The value of jobwheel_scheduler_misfires_total{strategy=...} on scheduler i (-1: none).
  double Misfires(int i, const std::string& strategy) {
    httplib::Client client("127.0.0.1", stack_->scheduler_process(i).metrics_port);
    client.set_connection_timeout(2, 0);
    client.set_read_timeout(5, 0);
    auto res = client.Get("/metrics");
    if (!res || res->status != 200) return -1;
    const std::string prefix =
        absl::StrCat("jobwheel_scheduler_misfires_total{strategy=\"", strategy, "\"} ");
    for (absl::string_view line : absl::StrSplit(res->body, '\n')) {
      if (!absl::StartsWith(line, prefix)) continue;
      double v = -1;
      return absl::SimpleAtod(line.substr(prefix.size()), &v) ? v : -1;
    }
    return -1;
  }
};

TEST_F(MisfireOutageTest, TakeoverAfterAnOutageSkipsDoNothingAndFiresOnceNowOnce) {
  // Scheduler A leads, with the demo executor online.
  ASSERT_TRUE(stack_->StartScheduler(0).ok()) << stack_->Logs();
  ASSERT_TRUE(stack_->WaitLeader(0, absl::Seconds(10)).ok());
  auto executor = stack_->AddExecutor({});
  ASSERT_TRUE(executor.ok()) << executor.status();

  const int64_t skip_job =
      CreateEverySecondJob(0, "do-nothing", jobwheel::v1::MISFIRE_STRATEGY_DO_NOTHING);
  const int64_t once_job =
      CreateEverySecondJob(0, "fire-once-now", jobwheel::v1::MISFIRE_STRATEGY_FIRE_ONCE_NOW);
  ASSERT_GT(skip_job, 0);
  ASSERT_GT(once_job, 0);

  // A few seconds of firing under A, and A holding claimed fires ahead for both jobs.
  const absl::Time created = RealClock::Get().Now();
  ASSERT_TRUE(Eventually(
      [&] {
        return ExecutedSince(skip_job, created) >= 3 && ExecutedSince(once_job, created) >= 3;
      },
      absl::Seconds(30)))
      << "the jobs never fired under scheduler A";
  auto pending_ahead = [&](int64_t job) {
    return Count(absl::StrCat("SELECT count(*) FROM fires WHERE status = ", kPending,
                              " AND job_id = ", job, " AND scheduled_at > now() + interval '5s'"));
  };
  ASSERT_TRUE(
      Eventually([&] { return pending_ahead(skip_job) >= 3 && pending_ahead(once_job) >= 3; },
                 absl::Seconds(10)))
      << "scheduler A never claimed ahead";

  // The outage: kill -9 the leader, nobody stands by.
  stack_->scheduler_process(0).proc->Signal(SIGKILL);
  const absl::Time killed = RealClock::Get().Now();
  ASSERT_TRUE(stack_->scheduler_process(0).proc->Wait(absl::Seconds(5)).ok());
  const int64_t left_skip =
      Count(absl::StrCat("SELECT count(*) FROM fires WHERE status = 1 AND job_id = ", skip_job));
  const int64_t left_once =
      Count(absl::StrCat("SELECT count(*) FROM fires WHERE status = 1 AND job_id = ", once_job));
  EXPECT_GE(left_skip, 5) << "A left too few claimed fires to be judged late";
  EXPECT_GE(left_once, 5) << "A left too few claimed fires to be judged late";
  // This wait is the scenario (30 s without a scheduler), not synchronization.
  RealClock::Get().SleepFor(kOutage);

  // The takeover: scheduler B.
  ASSERT_TRUE(stack_->StartScheduler(1).ok()) << stack_->Logs();
  ASSERT_TRUE(stack_->WaitLeader(1, absl::Seconds(10)).ok());
  jobwheel::v1::GetLeaderResponse leader;
  {
    auto leadership = jobwheel::v1::LeadershipService::NewStub(SchedulerChannel(1));
    grpc::Status s = leadership->GetLeader(Ctx().get(), {}, &leader);
    ASSERT_TRUE(s.ok()) << s.error_message();
  }
  const absl::Time took_over = FromProto(leader.since());
  std::cout << "killed A at " << absl::FormatTime(killed) << " (" << left_skip << " + " << left_once
            << " PENDING fires left), B leads since " << absl::FormatTime(took_over) << ": outage "
            << Ms(took_over - killed) << std::endl;
  EXPECT_GE(took_over - killed, kOutage);

  // B fires every second again: three seconds after the takeover executed for each job.
  const absl::Time resumed = absl::FromUnixSeconds(absl::ToUnixSeconds(took_over) + 1);
  ASSERT_TRUE(Eventually(
      [&] {
        return ExecutedSince(skip_job, resumed) >= 3 && ExecutedSince(once_job, resumed) >= 3;
      },
      absl::Seconds(30)))
      << "the jobs never fired again under scheduler B";

  // Stop firing: next_fire_at, frozen now, is the first second not claimed (its end of window);
  // the fires already claimed still go out.
  std::map<int64_t, int64_t> end_s;
  {
    pqxx::work tx(*db_);
    for (const pqxx::row& r : tx.exec(absl::StrCat(
             "UPDATE jobs SET enabled = false WHERE id IN (", skip_job, ", ", once_job,
             ") RETURNING id, (EXTRACT(EPOCH FROM next_fire_at) * 1000000)::BIGINT"))) {
      end_s[r[0].as<int64_t>()] = r[1].as<int64_t>() / 1000000;
    }
    tx.commit();
  }
  ASSERT_EQ(end_s.size(), 2u);
  ASSERT_TRUE(Eventually([&] { return Count("SELECT count(*) FROM fires WHERE status = 1") == 0; },
                         absl::Seconds(30)))
      << Count("SELECT count(*) FROM fires WHERE status = 1") << " fires still PENDING";
  ASSERT_TRUE(
      Eventually([&] { return Count("SELECT count(*) FROM runs WHERE status IN (1, 2)") == 0; },
                 absl::Seconds(30)))
      << Count("SELECT count(*) FROM runs WHERE status IN (1, 2)") << " runs still open";

  // Each run id executed once.
  {
    std::map<int64_t, int> per_run;
    for (const testing::Execution& e : stack_->Executions(0)) {
      if (e.start) ++per_run[e.run_id];
    }
    for (const auto& [run, n] : per_run) EXPECT_EQ(n, 1) << "run " << run << " executed " << n;
  }

  // The outage's seconds: A handed off nothing due 500 ms or more after its death, and B judges
  // late what is more than the threshold older than its takeover.
  const int64_t outage_from = absl::ToUnixSeconds(
      absl::Ceil(killed + absl::Milliseconds(500) - absl::UnixEpoch(), absl::Seconds(1)) +
      absl::UnixEpoch());
  const int64_t outage_to = absl::ToUnixSeconds(took_over - kThreshold);  // Inclusive.
  ASSERT_GE(outage_to - outage_from, 20);
  std::cout << "outage seconds " << Sec(outage_from) << " .. " << Sec(outage_to) << std::endl;

  for (const int64_t job : {skip_job, once_job}) {
    SCOPED_TRACE(job == skip_job ? "DO_NOTHING job" : "FIRE_ONCE_NOW job");
    const std::vector<FireRow> fires = Fires(job);
    ASSERT_FALSE(fires.empty());
    const std::map<int64_t, int> starts = StartsPerFire(job);
    const int64_t first_s = fires.front().scheduled_s;
    const int64_t last_s = end_s[job] - 1;
    ASSERT_GT(last_s, absl::ToUnixSeconds(took_over));

    // Which rows stand for each second; executions per row.
    std::map<int64_t, std::vector<const FireRow*>> by_second;
    std::map<int64_t, int> executions_of_second;
    int64_t misfire_handled = 0;  // Seconds the misfire strategy handled (skipped or fired once).
    int misfire_executions = 0;
    std::vector<std::string> problems;
    for (const FireRow& f : fires) {
      ASSERT_GE(f.seconds, 1) << f.reason;
      for (int64_t s = f.scheduled_s; s < f.scheduled_s + f.seconds; ++s) {
        by_second[s].push_back(&f);
      }
      auto it = starts.find(f.id);
      const int n = it == starts.end() ? 0 : it->second;
      if (f.status == kSkipped) {
        EXPECT_EQ(n, 0) << "skipped fire " << f.id << " executed";
        EXPECT_TRUE(absl::StartsWith(f.reason, "late: ") || absl::StartsWith(f.reason, "misfire: "))
            << f.reason;
        misfire_handled += f.seconds;
        continue;
      }
      EXPECT_EQ(f.status, kDispatched) << "fire " << f.id << " " << f.reason;
      EXPECT_EQ(n, 1) << "fire " << f.id << " at " << Sec(f.scheduled_s) << " executed " << n
                      << "x";
      executions_of_second[f.scheduled_s] += n;
      if (f.trigger == kMisfireTrigger) {
        misfire_handled += f.seconds;
        misfire_executions += n;
        std::cout << "misfire fire " << f.id << " at " << Sec(f.scheduled_s) << " executed " << n
                  << "x: " << f.reason << std::endl;
      } else {
        EXPECT_EQ(f.trigger, kCronTrigger);
        if (f.scheduled_s >= outage_from && f.scheduled_s <= outage_to && n > 0) {
          problems.push_back(absl::StrCat("executed in the outage: ", Sec(f.scheduled_s)));
        }
      }
    }
    // Every second from the first fire to the end of the window: exactly one row stands for it.
    for (int64_t s = first_s; s <= last_s; ++s) {
      const size_t rows = by_second.count(s) ? by_second[s].size() : 0;
      if (rows != 1) problems.push_back(absl::StrCat(Sec(s), " stood for by ", rows, " rows"));
      if (executions_of_second[s] > 1) {
        problems.push_back(absl::StrCat(Sec(s), " executed ", executions_of_second[s], "x"));
      }
      // Before the kill (A handed it off) and from the takeover on, a second is a CRON fire
      // executed once.
      if ((s < absl::ToUnixSeconds(killed) || s >= absl::ToUnixSeconds(took_over)) && rows == 1 &&
          (by_second[s][0]->trigger != kCronTrigger || executions_of_second[s] != 1)) {
        problems.push_back(absl::StrCat(Sec(s), " not fired on time: ", by_second[s][0]->reason));
      }
      // Inside the outage, a second is handled by the misfire strategy.
      if (s >= outage_from && s <= outage_to && rows == 1 && by_second[s][0]->status != kSkipped &&
          by_second[s][0]->trigger != kMisfireTrigger) {
        problems.push_back(absl::StrCat(Sec(s), " in the outage not handled as a misfire"));
      }
    }
    EXPECT_LE(by_second.rbegin()->first, last_s) << "a fire after the end of the window";
    EXPECT_TRUE(problems.empty()) << absl::StrJoin(problems, "\n");
    int64_t skipped_rows = 0, late_rows = 0, misfire_rows = 0;
    for (const FireRow& f : fires) {
      if (f.status == kSkipped) ++skipped_rows;
      if (absl::StartsWith(f.reason, "late: ")) ++late_rows;
      if (absl::StartsWith(f.reason, "misfire: ")) ++misfire_rows;
    }
    std::cout << (job == skip_job ? "DO_NOTHING" : "FIRE_ONCE_NOW") << ": seconds " << Sec(first_s)
              << " .. " << Sec(last_s) << ", " << fires.size() << " rows (" << skipped_rows
              << " SKIPPED, " << late_rows << " 'late:', " << misfire_rows << " 'misfire:'), "
              << misfire_handled << " seconds handled as misfires, " << misfire_executions
              << " misfire executions" << std::endl;
    // The outage's seconds all went to the misfire strategy (and a few more within the
    // threshold may have).
    EXPECT_GE(misfire_handled, outage_to - outage_from + 1);
    if (job == skip_job) {
      EXPECT_EQ(misfire_executions, 0);
      EXPECT_TRUE(Eventually([&] { return Misfires(1, "do_nothing") == misfire_handled; },
                             absl::Seconds(5)))
          << "do_nothing misfires on B: " << Misfires(1, "do_nothing") << ", expected "
          << misfire_handled;
    } else {
      EXPECT_EQ(misfire_executions, 1) << "FIRE_ONCE_NOW must fire once for the outage";
      EXPECT_TRUE(Eventually([&] { return Misfires(1, "fire_once_now") == misfire_handled; },
                             absl::Seconds(5)))
          << "fire_once_now misfires on B: " << Misfires(1, "fire_once_now") << ", expected "
          << misfire_handled;
    }
  }
}

}  // namespace
}  // namespace jobwheel
