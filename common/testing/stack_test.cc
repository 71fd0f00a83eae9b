#include "common/testing/stack_test.h"

#include <algorithm>
#include <iostream>

#include "common/testing/client_context.h"
#include "common/testing/process.h"
#include "pqxx/pqxx"

namespace jobwheel::testing {
namespace {

absl::Status ToAbsl(const grpc::Status& s, absl::string_view what) {
  if (s.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(s.error_code()),
                      absl::StrCat(what, ": ", s.error_message()));
}

}  // namespace

jobwheel::v1::Job NewJob(const std::string& name, const std::string& handler,
                         const std::string& param) {
  jobwheel::v1::Job job;
  job.set_app("demo");
  job.set_name(name);
  job.set_handler(handler);
  job.set_param(param);
  job.mutable_schedule()->mutable_none();
  job.set_routing_strategy(jobwheel::v1::ROUTING_STRATEGY_FIRST);
  job.set_enabled(true);
  return job;
}

void StackTest::SetUp() {
  ASSERT_NO_FATAL_FAILURE(StartStack(Stack::Options{}));
  admin_ = jobwheel::v1::JobAdminService::NewStub(stack_->Channel(stack_->scheduler()));
  absl::Status s = stack_->WaitLeader(0, absl::Seconds(15));
  ASSERT_TRUE(s.ok()) << s;
  for (const Stack::ExecutorSpec& spec : ExecutorSpecs()) {
    auto index = stack_->AddExecutor(spec);
    ASSERT_TRUE(index.ok()) << index.status();
  }
}

void StackTest::StartStack(const Stack::Options& options) {
  stack_ = std::make_unique<Stack>(options);
  const absl::Status s = stack_->StartServices();
  ASSERT_TRUE(s.ok()) << s << "\n" << stack_->Logs();
  db_ = std::make_unique<pqxx::connection>(stack_->dsn());
}

std::unique_ptr<grpc::ClientContext> StackTest::Ctx() const {
  return Ctx(stack_->admin_token(), absl::Seconds(5));
}

std::unique_ptr<grpc::ClientContext> StackTest::Ctx(const std::string& token,
                                                    absl::Duration deadline) {
  return ::jobwheel::testing::Ctx(token, deadline);
}

void StackTest::TearDown() {
  if (stack_ == nullptr) return;
  stack_->Stop();
  if (HasFailure()) std::cerr << stack_->Logs();
}

absl::StatusOr<jobwheel::v1::Job> StackTest::CreateJob(const jobwheel::v1::Job& job) {
  jobwheel::v1::CreateJobRequest req;
  *req.mutable_job() = job;
  jobwheel::v1::CreateJobResponse resp;
  grpc::Status s = admin_->CreateJob(Ctx(stack_->admin_token()).get(), req, &resp);
  if (!s.ok()) return ToAbsl(s, "CreateJob");
  return resp.job();
}

absl::StatusOr<jobwheel::v1::Job> StackTest::GetJob(int64_t id) {
  jobwheel::v1::GetJobRequest req;
  req.set_id(id);
  jobwheel::v1::GetJobResponse resp;
  grpc::Status s = admin_->GetJob(Ctx(stack_->admin_token()).get(), req, &resp);
  if (!s.ok()) return ToAbsl(s, "GetJob");
  return resp.job();
}

absl::StatusOr<int64_t> StackTest::TriggerJob(int64_t job_id) {
  jobwheel::v1::TriggerJobRequest req;
  req.set_id(job_id);
  jobwheel::v1::TriggerJobResponse resp;
  grpc::Status s = admin_->TriggerJob(Ctx(stack_->admin_token()).get(), req, &resp);
  if (!s.ok()) return ToAbsl(s, "TriggerJob");
  return resp.fire_id();
}

absl::StatusOr<jobwheel::v1::Run> StackTest::GetRun(int64_t id) {
  jobwheel::v1::GetRunRequest req;
  req.set_id(id);
  jobwheel::v1::GetRunResponse resp;
  grpc::Status s = admin_->GetRun(Ctx(stack_->admin_token()).get(), req, &resp);
  if (!s.ok()) return ToAbsl(s, "GetRun");
  return resp.run();
}

std::vector<jobwheel::v1::Run> StackTest::Runs(int64_t job_id) {
  std::vector<jobwheel::v1::Run> runs;
  jobwheel::v1::ListRunsRequest req;
  req.set_job_id(job_id);
  req.set_page_size(500);
  do {
    jobwheel::v1::ListRunsResponse resp;
    if (!admin_->ListRuns(Ctx(stack_->admin_token()).get(), req, &resp).ok()) return {};
    runs.insert(runs.end(), resp.runs().begin(), resp.runs().end());
    req.set_page_token(resp.next_page_token());
  } while (!req.page_token().empty());
  std::sort(runs.begin(), runs.end(),
            [](const jobwheel::v1::Run& a, const jobwheel::v1::Run& b) { return a.id() < b.id(); });
  return runs;
}

std::vector<std::string> StackTest::RunLog(int64_t run_id) {
  jobwheel::v1::GetRunLogRequest req;
  req.set_id(run_id);
  jobwheel::v1::GetRunLogResponse resp;
  if (!admin_->GetRunLog(Ctx(stack_->admin_token()).get(), req, &resp).ok()) return {};
  return {resp.lines().begin(), resp.lines().end()};
}

int64_t StackTest::QueryInt(const std::string& sql) {
  try {
    pqxx::connection conn(stack_->dsn());
    pqxx::nontransaction tx(conn);
    pqxx::result r = tx.exec(sql);
    if (r.empty() || r[0][0].is_null()) return -1;
    return r[0][0].as<int64_t>();
  } catch (const std::exception& e) {
    std::cerr << "QueryInt(" << sql << "): " << e.what() << "\n";
    return -1;
  }
}

absl::StatusOr<jobwheel::v1::Run> StackTest::AwaitRun(
    int64_t job_id, const std::function<bool(const jobwheel::v1::Run&)>& pred,
    absl::Duration timeout) {
  jobwheel::v1::Run found;
  std::vector<jobwheel::v1::Run> last;
  const bool ok = testing::Eventually(
      [&] {
        last = Runs(job_id);
        for (const auto& run : last) {
          if (pred(run)) {
            found = run;
            return true;
          }
        }
        return false;
      },
      timeout);
  if (ok) return found;
  std::string seen;
  for (const auto& run : last) {
    absl::StrAppend(&seen, "\n  run ", run.id(), " attempt ", run.attempt(), " ",
                    jobwheel::v1::RunStatus_Name(run.status()), " ", run.trigger_message(), " | ",
                    run.result_message());
  }
  return absl::DeadlineExceededError(
      absl::StrCat("job ", job_id, ": no matching run; runs:", seen.empty() ? " none" : seen));
}

}  // namespace jobwheel::testing
