// End to end: a FIX_RATE job fires on time. Its fires are scheduled exactly start_time +
// k * interval (start_time off the whole second on purpose), each is executed once on the
// executor, and each handler starts no earlier than its scheduled time and within 1 s after it
// (a correctness bound — the run belongs to that time — not a speed target).
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "common/testing/executions.h"
#include "common/testing/process.h"
#include "common/time/clock.h"
#include "common/time/proto_time.h"
#include "gtest/gtest.h"
#include "tests/e2e/stack_test.h"

namespace jobwheel::e2e {
namespace {

using ::jobwheel::testing::Eventually;
using ::jobwheel::testing::Execution;
using ::jobwheel::testing::Starts;
using testing::Ctx;

class FixRateTest : public StackTest {};

TEST_F(FixRateTest, FiresEveryIntervalFromItsStartTime) {
  constexpr int kRuns = 4;
  constexpr int64_t kInterval = 1;
  const absl::Time start = absl::FromUnixSeconds(absl::ToUnixSeconds(RealClock::Get().Now()) + 2) +
                           absl::Milliseconds(437);
  jobwheel::v1::Job job = NewJob("every-second", "echo", "tick");
  job.mutable_schedule()->mutable_fix_rate()->set_interval_seconds(kInterval);
  *job.mutable_schedule()->mutable_fix_rate()->mutable_start_time() = ToProto(start);
  auto created = CreateJob(job);
  ASSERT_TRUE(created.ok()) << created.status();
  const int64_t job_id = created->id();
  EXPECT_EQ(FromProto(created->next_fire_time()), start);

  std::vector<jobwheel::v1::Run> runs;
  ASSERT_TRUE(Eventually(
      [&] {
        runs = Runs(job_id);
        int done = 0;
        for (const auto& r : runs) done += r.status() == jobwheel::v1::RUN_STATUS_SUCCEEDED;
        return done >= kRuns;
      },
      absl::Seconds(30)))
      << runs.size() << " runs";
  // Stop firing; what is already claimed still runs.
  jobwheel::v1::PauseJobRequest pause;
  pause.set_id(job_id);
  jobwheel::v1::PauseJobResponse paused;
  grpc::Status s = admin_->PauseJob(Ctx(stack_->admin_token()).get(), pause, &paused);
  ASSERT_TRUE(s.ok()) << s.error_message();
  ASSERT_TRUE(Eventually(
      [&] {
        return QueryInt(absl::StrCat("SELECT count(*) FROM runs WHERE job_id = ", job_id,
                                     " AND status < 3")) == 0 &&
               QueryInt(absl::StrCat("SELECT count(*) FROM fires WHERE job_id = ", job_id,
                                     " AND status = 1")) == 0;
      },
      absl::Seconds(20)));
  runs = Runs(job_id);
  ASSERT_GE(runs.size(), static_cast<size_t>(kRuns));

  const std::vector<Execution> executions = stack_->Executions(0);
  for (size_t k = 0; k < runs.size(); ++k) {
    const jobwheel::v1::Run& r = runs[k];
    SCOPED_TRACE(absl::StrCat("run ", r.id(), " (#", k, ")"));
    const absl::Time scheduled = FromProto(r.scheduled_time());
    EXPECT_EQ(r.trigger_type(), jobwheel::v1::TRIGGER_TYPE_FIX_RATE);
    EXPECT_EQ(r.status(), jobwheel::v1::RUN_STATUS_SUCCEEDED);
    // Exactly interval apart, counted from start_time.
    EXPECT_EQ(scheduled, start + absl::Seconds(kInterval * static_cast<int64_t>(k)))
        << absl::FormatTime(scheduled);
    // Started on time: not before it was due, and well within a second after.
    const absl::Duration late = FromProto(r.start_time()) - scheduled;
    EXPECT_GE(late, absl::ZeroDuration()) << absl::FormatDuration(late);
    EXPECT_LE(late, absl::Seconds(1)) << absl::FormatDuration(late);
    // Executed exactly once, as this run.
    int executed = 0;
    for (const Execution& e : Starts(executions, job_id)) executed += e.run_id == r.id();
    EXPECT_EQ(executed, 1);
  }
  EXPECT_EQ(Starts(executions, job_id).size(), runs.size());
  EXPECT_EQ(QueryInt(absl::StrCat("SELECT count(*) FROM fires WHERE job_id = ", job_id)),
            static_cast<int64_t>(runs.size()));
}

}  // namespace
}  // namespace jobwheel::e2e
