#include "services/scheduler/admin/job_admin.h"

#include <string>

#include "common/time/clock.h"
#include "common/time/proto_time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "services/scheduler/admin/fake_executor_client.h"
#include "services/scheduler/admin/in_memory_job_store.h"

namespace jobwheel::scheduler::admin {
namespace {

using jobwheel::v1::Job;
using jobwheel::v1::Run;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

class JobAdminTest : public ::testing::Test {
 protected:
  JobAdminTest() : store_(clock_), admin_(store_, executors_, clock_) {}

  // Enabled, every 60 s from its creation second.
  static Job RateJob(const std::string& name = "every minute") {
    Job job;
    job.set_app("demo");
    job.set_name(name);
    job.set_handler("tick");
    job.mutable_schedule()->mutable_fix_rate()->set_interval_seconds(60);
    job.set_enabled(true);
    return job;
  }

  Job MustCreate(const Job& job) {
    auto created = admin_.CreateJob(job);
    EXPECT_TRUE(created.ok()) << created.status();
    return created.ok() ? *created : Job();
  }

  int64_t AddRun(int64_t job_id, jobwheel::v1::RunStatus status, const std::string& address) {
    jobwheel::v1::Run run;
    run.set_job_id(job_id);
    run.set_app("demo");
    run.set_status(status);
    run.set_executor_address(address);
    *run.mutable_trigger_time() = ToProto(clock_.Now());
    return store_.AddRun(run);
  }

  FakeClock clock_;
  InMemoryJobStore store_;
  FakeExecutorClient executors_;
  JobAdmin admin_;
};

TEST_F(JobAdminTest, CreateComputesNextFireAndRegistersApp) {
  const absl::Time now = clock_.Now();
  Job job = MustCreate(RateJob());
  EXPECT_EQ(job.id(), 1);
  EXPECT_EQ(FromProto(job.create_time()), now);
  EXPECT_EQ(FromProto(job.schedule().fix_rate().start_time()), now);
  ASSERT_TRUE(store_.next_fire_at(job.id()).has_value());
  EXPECT_EQ(*store_.next_fire_at(job.id()), now + absl::Seconds(60));
  EXPECT_EQ(FromProto(job.next_fire_time()), now + absl::Seconds(60));
  EXPECT_EQ(store_.apps().count("demo"), 1u);
}

TEST_F(JobAdminTest, DisabledOrUnscheduledJobsHaveNoNextFire) {
  Job disabled = RateJob();
  disabled.set_enabled(false);
  EXPECT_FALSE(store_.next_fire_at(MustCreate(disabled).id()).has_value());
  Job manual = RateJob();
  manual.mutable_schedule()->mutable_none();
  EXPECT_FALSE(store_.next_fire_at(MustCreate(manual).id()).has_value());
}

TEST_F(JobAdminTest, CreateRejectsBadInputWithoutWriting) {
  Job job = RateJob();
  job.set_app("");
  auto s = admin_.CreateJob(job);
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.status().message(), "job.app: must not be empty");
  job = RateJob();
  job.add_child_job_ids(42);
  s = admin_.CreateJob(job);
  EXPECT_EQ(s.status().message(), "job.child_job_ids[0]: job 42 does not exist");
  EXPECT_EQ(admin_.GetJob(1).status().code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(store_.apps().empty());
}

TEST_F(JobAdminTest, PauseAndResumeAreIdempotentAndSkipMissedFires) {
  Job job = MustCreate(RateJob());
  const absl::Time t0 = clock_.Now();
  // The leader recorded the next fire ahead of time.
  InMemoryJobStore::Fire pending;
  pending.job_id = job.id();
  pending.scheduled_at = t0 + absl::Seconds(60);
  pending.trigger_type = jobwheel::v1::TRIGGER_TYPE_FIX_RATE;
  store_.AddFire(pending);

  clock_.Advance(absl::Seconds(1));
  auto paused = admin_.PauseJob(job.id());
  ASSERT_TRUE(paused.ok()) << paused.status();
  EXPECT_FALSE(paused->enabled());
  EXPECT_FALSE(paused->has_next_fire_time());
  EXPECT_FALSE(store_.next_fire_at(job.id()).has_value());
  EXPECT_TRUE(store_.fires().empty()) << "a paused job must not keep a pending future fire";

  clock_.Advance(absl::Seconds(1));
  auto again = admin_.PauseJob(job.id());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->update_time().seconds(), paused->update_time().seconds());  // No write.

  clock_.Advance(absl::Minutes(10));
  auto resumed = admin_.ResumeJob(job.id());
  ASSERT_TRUE(resumed.ok());
  EXPECT_TRUE(resumed->enabled());
  // Next multiple of 60 s after now, counted from the creation second: 11 minutes in.
  EXPECT_EQ(*store_.next_fire_at(job.id()), t0 + absl::Minutes(11));
  auto resumed_again = admin_.ResumeJob(job.id());
  ASSERT_TRUE(resumed_again.ok());
  EXPECT_EQ(*store_.next_fire_at(job.id()), t0 + absl::Minutes(11));

  EXPECT_EQ(admin_.PauseJob(99).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(admin_.PauseJob(0).status().message(), "id: must be a positive id, got 0");
}

// A job behind its schedule (its next fire time past, not yet claimed: the leader shedding
// under load, or no leader) loses those due times when paused or edited; the write records them
// as one SKIPPED row naming how many, so the record of what did not run stays exact.
TEST_F(JobAdminTest, PauseOrEditOfABehindJobRecordsTheDueTimesItCutsOff) {
  Job every_second = RateJob("every second");
  every_second.mutable_schedule()->mutable_fix_rate()->set_interval_seconds(1);
  const Job job = MustCreate(every_second);
  const absl::Time t0 = clock_.Now();
  ASSERT_EQ(*store_.next_fire_at(job.id()), t0 + absl::Seconds(1));
  clock_.Advance(absl::Milliseconds(10500));  // Due: t0+1 s … t0+10 s, none claimed.
  ASSERT_TRUE(admin_.PauseJob(job.id()).ok());
  ASSERT_EQ(store_.fires().size(), 1u);
  const InMemoryJobStore::Fire cut = store_.fires()[0];
  EXPECT_EQ(cut.job_id, job.id());
  EXPECT_EQ(cut.scheduled_at, t0 + absl::Seconds(1));
  EXPECT_EQ(cut.status, jobwheel::v1::FIRE_STATUS_SKIPPED);
  EXPECT_EQ(cut.trigger_type, jobwheel::v1::TRIGGER_TYPE_FIX_RATE);
  EXPECT_THAT(cut.reason, StartsWith("misfire: 10 fire(s) from "));
  EXPECT_THAT(cut.reason, HasSubstr("skipped; the job was paused before they were claimed"));

  // Paused: nothing is due, so a resume cuts nothing off; an edit of the job once behind again
  // records its own range.
  clock_.Advance(absl::Seconds(5));
  ASSERT_TRUE(admin_.ResumeJob(job.id()).ok());
  EXPECT_EQ(store_.fires().size(), 1u);
  clock_.Advance(absl::Seconds(3));  // Due: t0+16 s … t0+18 s (resumed at t0+15.5 s).
  Job patch;
  patch.set_id(job.id());
  patch.set_description("edited while behind");
  google::protobuf::FieldMask mask;
  mask.add_paths("description");
  ASSERT_TRUE(admin_.UpdateJob(patch, mask).ok());
  ASSERT_EQ(store_.fires().size(), 2u);
  const InMemoryJobStore::Fire edited = store_.fires()[1];
  EXPECT_EQ(edited.scheduled_at, t0 + absl::Seconds(16));
  EXPECT_THAT(edited.reason, StartsWith("misfire: 3 fire(s) from "));
  EXPECT_THAT(edited.reason, HasSubstr("the job was edited before they were claimed"));

  // On time (next fire in the future): nothing is cut off.
  ASSERT_TRUE(admin_.PauseJob(job.id()).ok());
  EXPECT_EQ(store_.fires().size(), 2u);
}

TEST_F(JobAdminTest, UpdateDropsFutureScheduledFiresOnly) {
  Job job = MustCreate(RateJob());
  const absl::Time t0 = clock_.Now();
  InMemoryJobStore::Fire past;  // Overdue and still pending: the leader is about to send it.
  past.job_id = job.id();
  past.scheduled_at = t0 - absl::Seconds(1);
  past.trigger_type = jobwheel::v1::TRIGGER_TYPE_FIX_RATE;
  const int64_t past_id = store_.AddFire(past);
  InMemoryJobStore::Fire future = past;
  future.scheduled_at = t0 + absl::Seconds(60);
  store_.AddFire(future);
  InMemoryJobStore::Fire manual = future;
  manual.trigger_type = jobwheel::v1::TRIGGER_TYPE_MANUAL;
  const int64_t manual_id = store_.AddFire(manual);

  Job patch;
  patch.set_id(job.id());
  patch.mutable_schedule()->mutable_fix_rate()->set_interval_seconds(300);
  google::protobuf::FieldMask mask;
  mask.add_paths("schedule");
  clock_.Advance(absl::Seconds(10));
  auto updated = admin_.UpdateJob(patch, mask);
  ASSERT_TRUE(updated.ok()) << updated.status();
  EXPECT_EQ(updated->schedule().fix_rate().interval_seconds(), 300);
  EXPECT_EQ(updated->name(), "every minute");  // Not in the mask.
  // A new fix_rate without start time anchors at the job's creation, not the update.
  EXPECT_EQ(FromProto(updated->schedule().fix_rate().start_time()), t0);
  EXPECT_EQ(*store_.next_fire_at(job.id()), t0 + absl::Seconds(300));
  std::vector<int64_t> left;
  for (const auto& f : store_.fires()) left.push_back(f.id);
  EXPECT_THAT(left, ElementsAre(past_id, manual_id));
}

TEST_F(JobAdminTest, UpdateValidatesIdMaskAndMergedJob) {
  Job job = MustCreate(RateJob());
  Job patch;
  google::protobuf::FieldMask mask;
  mask.add_paths("param");
  EXPECT_EQ(admin_.UpdateJob(patch, mask).status().message(),
            "job.id: must be a positive id, got 0");
  patch.set_id(77);
  EXPECT_EQ(admin_.UpdateJob(patch, mask).status().code(), absl::StatusCode::kNotFound);
  patch.set_id(job.id());
  mask.add_paths("enabled");
  mask.add_paths("x");
  EXPECT_EQ(admin_.UpdateJob(patch, mask).status().message(),
            "update_mask.paths[2]: unknown field \"x\"");
  mask.Clear();
  mask.add_paths("handler");  // Clearing the handler of a HANDLER job.
  EXPECT_EQ(admin_.UpdateJob(patch, mask).status().message(), "job.handler: must not be empty");
  // Empty mask: the patch replaces every writable field, so it must be a whole valid job.
  EXPECT_EQ(admin_.UpdateJob(patch, google::protobuf::FieldMask()).status().message(),
            "job.app: must not be empty");
  Job whole = RateJob("renamed");
  whole.set_id(job.id());
  auto replaced = admin_.UpdateJob(whole, google::protobuf::FieldMask());
  ASSERT_TRUE(replaced.ok()) << replaced.status();
  EXPECT_EQ(replaced->name(), "renamed");
  EXPECT_EQ(replaced->create_time().seconds(), job.create_time().seconds());
}

TEST_F(JobAdminTest, UpdateRejectsCycles) {
  Job a = MustCreate(RateJob("a"));
  Job b_in = RateJob("b");
  b_in.add_child_job_ids(a.id());
  Job b = MustCreate(b_in);
  Job c_in = RateJob("c");
  c_in.add_child_job_ids(b.id());
  Job c = MustCreate(c_in);
  Job patch;
  patch.set_id(a.id());
  patch.add_child_job_ids(c.id());
  google::protobuf::FieldMask mask;
  mask.add_paths("child_job_ids");
  auto s = admin_.UpdateJob(patch, mask);
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.status().message(),
            "job.child_job_ids: cycle 1 \xE2\x86\x92 3 \xE2\x86\x92 2 \xE2\x86\x92 1");
  EXPECT_EQ(admin_.GetJob(a.id())->child_job_ids_size(), 0);
}

TEST_F(JobAdminTest, ScriptVersionBumpsOnlyWhenSourceChanges) {
  Job in = RateJob();
  in.clear_handler();
  in.set_glue_type(jobwheel::v1::GLUE_TYPE_SCRIPT_SHELL);
  in.set_script_source("echo one");
  Job job = MustCreate(in);
  EXPECT_EQ(job.script_version(), 1);
  google::protobuf::FieldMask mask;
  mask.add_paths("param");
  Job patch;
  patch.set_id(job.id());
  patch.set_param("p");
  EXPECT_EQ(admin_.UpdateJob(patch, mask)->script_version(), 1);
  mask.Clear();
  mask.add_paths("script_source");
  patch.set_script_source("echo two");
  EXPECT_EQ(admin_.UpdateJob(patch, mask)->script_version(), 2);
  auto scripts = store_.scripts();
  ASSERT_EQ(scripts.size(), 2u);
  EXPECT_EQ((scripts[{job.id(), 1}]), "echo one");
  EXPECT_EQ((scripts[{job.id(), 2}]), "echo two");
}

TEST_F(JobAdminTest, DeleteRefusesParentsAndDropsPendingFires) {
  Job child = MustCreate(RateJob("child"));
  Job parent_in = RateJob("parent");
  parent_in.add_child_job_ids(child.id());
  Job parent = MustCreate(parent_in);
  auto refused = admin_.DeleteJob(child.id());
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(refused.message(),
            "job 1 is a child of job(s) 2; remove it from their "
            "child_job_ids first");
  ASSERT_TRUE(admin_
                  .TriggerJob([&] {
                    jobwheel::v1::TriggerJobRequest r;
                    r.set_id(parent.id());
                    return r;
                  }())
                  .ok());
  EXPECT_EQ(store_.fires().size(), 1u);
  EXPECT_TRUE(admin_.DeleteJob(parent.id()).ok());
  EXPECT_TRUE(store_.fires().empty());
  EXPECT_TRUE(admin_.DeleteJob(child.id()).ok());
  EXPECT_EQ(admin_.DeleteJob(child.id()).code(), absl::StatusCode::kNotFound);
}

TEST_F(JobAdminTest, TriggerValidatesAndWorksOnPausedJobs) {
  Job in = RateJob();
  in.set_enabled(false);
  Job job = MustCreate(in);
  jobwheel::v1::TriggerJobRequest req;
  req.set_id(job.id());
  req.set_shard_param("3/3");
  EXPECT_THAT(std::string(admin_.TriggerJob(req).status().message()), StartsWith("shard_param: "));
  req.set_shard_param("1/3");
  req.set_executor_address("169.254.169.254:80");
  auto refused = admin_.TriggerJob(req);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(refused.status().message(),
            "executor_address: 169.254.169.254:80 is not an online executor of app demo");
  store_.AddExecutor("demo", "10.0.0.5:7200", /*online=*/false);
  req.set_executor_address("10.0.0.5:7200");
  EXPECT_EQ(admin_.TriggerJob(req).status().code(), absl::StatusCode::kFailedPrecondition);
  store_.AddExecutor("other", "10.0.0.6:7200", /*online=*/true);
  req.set_executor_address("10.0.0.6:7200");  // Online, but for another app.
  EXPECT_EQ(admin_.TriggerJob(req).status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(store_.fires().empty());

  store_.AddExecutor("demo", "10.0.0.5:7200", /*online=*/true);
  req.set_executor_address("10.0.0.5:7200");
  req.set_param("override");
  auto fire_id = admin_.TriggerJob(req);
  ASSERT_TRUE(fire_id.ok()) << fire_id.status();
  ASSERT_EQ(store_.fires().size(), 1u);
  const auto fire = store_.fires()[0];
  EXPECT_EQ(fire.id, *fire_id);
  EXPECT_EQ(fire.trigger_type, jobwheel::v1::TRIGGER_TYPE_MANUAL);
  EXPECT_EQ(fire.scheduled_at, clock_.Now());
  EXPECT_EQ(fire.param, std::optional<std::string>("override"));
  EXPECT_EQ(fire.shard_index, 1);
  EXPECT_EQ(fire.shard_total, 3);
  EXPECT_EQ(fire.executor_address, "10.0.0.5:7200");

  req.set_id(500);
  EXPECT_EQ(admin_.TriggerJob(req).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(JobAdminTest, ListJobsPagesAndFilters) {
  for (const char* name : {"alpha", "beta 100%", "gamma", "Delta", "epsilon"}) {
    Job j = RateJob(name);
    if (std::string(name) == "gamma") j.set_enabled(false);
    MustCreate(j);
  }
  jobwheel::v1::ListJobsRequest req;
  req.set_page_size(2);
  std::vector<std::string> names;
  int pages = 0;
  do {
    auto page = admin_.ListJobs(req);
    ASSERT_TRUE(page.ok()) << page.status();
    for (const Job& j : page->jobs()) names.push_back(j.name());
    req.set_page_token(page->next_page_token());
    ++pages;
  } while (!req.page_token().empty());
  EXPECT_EQ(pages, 3);
  EXPECT_THAT(names, ElementsAre("alpha", "beta 100%", "gamma", "Delta", "epsilon"));

  jobwheel::v1::ListJobsRequest filtered;
  filtered.set_enabled(false);
  EXPECT_EQ(admin_.ListJobs(filtered)->jobs_size(), 1);
  filtered.clear_enabled();
  filtered.set_name_contains("DEL");
  EXPECT_EQ(admin_.ListJobs(filtered)->jobs(0).name(), "Delta");
  filtered.set_name_contains("");
  filtered.set_app("nope");
  EXPECT_EQ(admin_.ListJobs(filtered)->jobs_size(), 0);

  jobwheel::v1::ListJobsRequest bad;
  bad.set_page_size(501);
  EXPECT_EQ(admin_.ListJobs(bad).status().message(),
            "page_size: must be between 0 and 500, got 501");
  bad.set_page_size(0);
  bad.set_page_token("garbage");
  EXPECT_THAT(std::string(admin_.ListJobs(bad).status().message()), StartsWith("page_token: "));
}

TEST_F(JobAdminTest, ListRunsNewestFirstWithFilters) {
  AddRun(1, jobwheel::v1::RUN_STATUS_SUCCEEDED, "a:1");
  clock_.Advance(absl::Seconds(10));
  AddRun(2, jobwheel::v1::RUN_STATUS_FAILED, "a:1");
  clock_.Advance(absl::Seconds(10));
  AddRun(1, jobwheel::v1::RUN_STATUS_RUNNING, "a:1");
  jobwheel::v1::ListRunsRequest req;
  req.set_page_size(2);
  auto page = admin_.ListRuns(req);
  ASSERT_TRUE(page.ok());
  ASSERT_EQ(page->runs_size(), 2);
  EXPECT_EQ(page->runs(0).id(), 3);
  EXPECT_EQ(page->runs(1).id(), 2);
  req.set_page_token(page->next_page_token());
  page = admin_.ListRuns(req);
  ASSERT_EQ(page->runs_size(), 1);
  EXPECT_EQ(page->runs(0).id(), 1);
  EXPECT_TRUE(page->next_page_token().empty());

  jobwheel::v1::ListRunsRequest by_job;
  by_job.set_job_id(1);
  by_job.add_statuses(jobwheel::v1::RUN_STATUS_SUCCEEDED);
  page = admin_.ListRuns(by_job);
  ASSERT_EQ(page->runs_size(), 1);
  EXPECT_EQ(page->runs(0).id(), 1);

  jobwheel::v1::ListRunsRequest by_time;
  *by_time.mutable_start_time() = ToProto(clock_.Now() - absl::Seconds(15));
  EXPECT_EQ(admin_.ListRuns(by_time)->runs_size(), 2);
  *by_time.mutable_end_time() = ToProto(clock_.Now());
  EXPECT_EQ(admin_.ListRuns(by_time)->runs_size(), 1);

  jobwheel::v1::ListRunsRequest bad;
  bad.add_statuses(jobwheel::v1::RUN_STATUS_FAILED);
  bad.add_statuses(static_cast<jobwheel::v1::RunStatus>(42));
  EXPECT_EQ(admin_.ListRuns(bad).status().message(), "statuses[1]: unknown run status 42");
}

TEST_F(JobAdminTest, KillRunRefusesFinishedRuns) {
  const int64_t id = AddRun(1, jobwheel::v1::RUN_STATUS_SUCCEEDED, "a:1");
  auto s = admin_.KillRun(id);
  EXPECT_EQ(s.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.status().message(), absl::StrCat("run ", id, " is already SUCCEEDED"));
  EXPECT_EQ(admin_.KillRun(999).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(JobAdminTest, KillRunNeverCallsUnregisteredAddresses) {
  const int64_t id = AddRun(1, jobwheel::v1::RUN_STATUS_RUNNING, "evil.example:80");
  auto run = admin_.KillRun(id);
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_TRUE(executors_.calls().empty());
  EXPECT_EQ(run->status(), jobwheel::v1::RUN_STATUS_KILLED);
  EXPECT_EQ(run->result_message(),
            "killed by operator: executor unreachable: evil.example:80 is not a registered "
            "executor of app demo");
}

TEST_F(JobAdminTest, KillRunAsksOnlineExecutor) {
  store_.AddExecutor("demo", "10.0.0.5:7200", true);
  const int64_t id = AddRun(1, jobwheel::v1::RUN_STATUS_RUNNING, "10.0.0.5:7200");
  jobwheel::v1::KillResponse killed;
  killed.set_killed(true);
  executors_.SetKillResponse(killed);
  auto run = admin_.KillRun(id);
  ASSERT_TRUE(run.ok());
  EXPECT_THAT(executors_.calls(), ElementsAre("Kill 10.0.0.5:7200"));
  // KILLED arrives with the executor's result.
  EXPECT_EQ(run->status(), jobwheel::v1::RUN_STATUS_RUNNING);

  jobwheel::v1::KillResponse unknown;
  unknown.set_message("no such run");
  executors_.SetKillResponse(unknown);
  EXPECT_EQ(admin_.KillRun(id).status().code(), absl::StatusCode::kFailedPrecondition);

  executors_.SetKillResponse(absl::DeadlineExceededError("deadline exceeded"));
  run = admin_.KillRun(id);
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(run->status(), jobwheel::v1::RUN_STATUS_KILLED);
  EXPECT_EQ(run->result_message(),
            "killed by operator: executor unreachable: 10.0.0.5:7200: deadline exceeded");
}

TEST_F(JobAdminTest, KillRunOfflineExecutorMarksKilled) {
  store_.AddExecutor("demo", "10.0.0.5:7200", false);
  const int64_t id = AddRun(1, jobwheel::v1::RUN_STATUS_PENDING, "10.0.0.5:7200");
  auto run = admin_.KillRun(id);
  ASSERT_TRUE(run.ok());
  EXPECT_TRUE(executors_.calls().empty());
  EXPECT_EQ(run->status(), jobwheel::v1::RUN_STATUS_KILLED);
  EXPECT_THAT(run->result_message(), HasSubstr("10.0.0.5:7200 is offline"));
}

TEST_F(JobAdminTest, GetRunLogProxiesToOnlineExecutorOnly) {
  const int64_t id = AddRun(1, jobwheel::v1::RUN_STATUS_SUCCEEDED, "10.0.0.5:7200");
  auto offline = admin_.GetRunLog([&] {
    jobwheel::v1::GetRunLogRequest r;
    r.set_id(id);
    return r;
  }());
  EXPECT_EQ(offline.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(offline.status().message(), absl::StrCat("executor 10.0.0.5:7200 of run ", id,
                                                     " is offline; its log is not reachable"));
  EXPECT_TRUE(executors_.calls().empty());

  store_.AddExecutor("demo", "10.0.0.5:7200", true);
  jobwheel::v1::LogResponse log;
  log.add_lines("hello");
  log.add_lines("world");
  log.set_from_line(1);
  log.set_to_line(2);
  executors_.SetLogResponse(log);
  jobwheel::v1::GetRunLogRequest req;
  req.set_id(id);
  auto got = admin_.GetRunLog(req);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_THAT(got->lines(), ElementsAre("hello", "world"));
  EXPECT_EQ(got->to_line(), 2);
  EXPECT_TRUE(got->end());  // The run is over and the read came back short.
  EXPECT_EQ(executors_.last_log_request().from_line(), 1);
  EXPECT_EQ(executors_.last_log_request().run_id(), id);

  const int64_t running = AddRun(1, jobwheel::v1::RUN_STATUS_RUNNING, "10.0.0.5:7200");
  req.set_id(running);
  req.set_from_line(3);
  got = admin_.GetRunLog(req);
  ASSERT_TRUE(got.ok());
  EXPECT_FALSE(got->end());
  EXPECT_EQ(executors_.last_log_request().from_line(), 3);
}

TEST_F(JobAdminTest, PreviewFireTimes) {
  jobwheel::v1::PreviewFireTimesRequest req;
  EXPECT_EQ(admin_.PreviewFireTimes(req).status().message(), "schedule: must be set");
  req.mutable_schedule()->mutable_fix_rate()->set_interval_seconds(30);
  *req.mutable_schedule()->mutable_fix_rate()->mutable_start_time() = ToProto(clock_.Now());
  auto got = admin_.PreviewFireTimes(req);
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->fire_times_size(), 10);
  EXPECT_EQ(FromProto(got->fire_times(0)), clock_.Now() + absl::Seconds(30));
  EXPECT_EQ(FromProto(got->fire_times(9)), clock_.Now() + absl::Seconds(300));
  *req.mutable_after() = ToProto(clock_.Now() + absl::Hours(1));
  req.set_count(100);
  got = admin_.PreviewFireTimes(req);
  ASSERT_EQ(got->fire_times_size(), 100);
  EXPECT_EQ(FromProto(got->fire_times(0)), clock_.Now() + absl::Hours(1) + absl::Seconds(30));
  req.set_count(101);
  EXPECT_EQ(admin_.PreviewFireTimes(req).status().message(),
            "count: must be between 1 and 100, got 101");
  req.set_count(-1);
  EXPECT_EQ(admin_.PreviewFireTimes(req).status().code(), absl::StatusCode::kInvalidArgument);
  req.set_count(5);
  req.mutable_schedule()->mutable_cron()->set_expression("bogus");
  EXPECT_THAT(std::string(admin_.PreviewFireTimes(req).status().message()),
              StartsWith("schedule.cron: "));
}

}  // namespace
}  // namespace jobwheel::scheduler::admin
