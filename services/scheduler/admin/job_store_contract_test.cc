// The JobStore contract, run through JobAdmin against the fake (InMemoryJobStore, which the
// admin's unit tests use) and the real store (PgJobStore on a fresh database): the same cases,
// so the fake cannot drift from PostgreSQL. Both run on the real clock (PostgreSQL compares
// fire times with its now()).

#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/testing/pg_store_test.h"
#include "common/testing/store_contract.h"
#include "common/time/clock.h"
#include "gmock/gmock.h"
#include "google/protobuf/field_mask.pb.h"
#include "gtest/gtest.h"
#include "services/scheduler/admin/fake_executor_client.h"
#include "services/scheduler/admin/in_memory_job_store.h"
#include "services/scheduler/admin/job_admin.h"
#include "services/scheduler/admin/pg_job_store.h"

namespace jobwheel::scheduler::admin {
namespace {

using jobwheel::v1::Job;
using ::testing::ElementsAre;

class InMemoryEnv {
 public:
  static constexpr char kName[] = "InMemory";
  bool ok() const { return true; }
  JobStore& store() { return store_; }

 private:
  InMemoryJobStore store_{RealClock::Get()};
};

using PgEnv = testing::PgStoreEnv<PgJobStore>;

Job EveryTenSeconds(const std::string& name, const std::string& app = "demo") {
  Job job;
  job.set_app(app);
  job.set_name(name);
  job.set_handler("demo.tick");
  job.mutable_schedule()->mutable_cron()->set_expression("*/10 * * * * ?");
  job.set_enabled(true);
  return job;
}

template <typename Env>
class JobStoreContractTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(env_.ok());
    admin_ = std::make_unique<JobAdmin>(env_.store(), executors_, RealClock::Get());
  }

  Job MustCreate(const Job& job) {
    auto created = admin_->CreateJob(job);
    EXPECT_TRUE(created.ok()) << created.status();
    return created.ok() ? *created : Job();
  }

  std::vector<std::string> Names(const jobwheel::v1::ListJobsRequest& req) {
    std::vector<std::string> out;
    auto page = admin_->ListJobs(req);
    EXPECT_TRUE(page.ok()) << page.status();
    if (page.ok()) {
      for (const Job& j : page->jobs()) out.push_back(j.name());
    }
    return out;
  }

  Env env_;
  FakeExecutorClient executors_;
  std::unique_ptr<JobAdmin> admin_;
};

using Envs = ::testing::Types<InMemoryEnv, PgEnv>;
TYPED_TEST_SUITE(JobStoreContractTest, Envs, ::jobwheel::testing::StoreEnvNames);

TYPED_TEST(JobStoreContractTest, CreateGetDelete) {
  Job in = EveryTenSeconds("tick");
  in.set_param("p=1");
  in.set_description("every ten seconds");
  in.set_routing_strategy(jobwheel::v1::ROUTING_STRATEGY_ROUND);
  const Job created = this->MustCreate(in);
  EXPECT_GT(created.id(), 0);
  EXPECT_TRUE(created.has_next_fire_time());
  auto got = this->admin_->GetJob(created.id());
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->app(), "demo");
  EXPECT_EQ(got->name(), "tick");
  EXPECT_EQ(got->handler(), "demo.tick");
  EXPECT_EQ(got->param(), "p=1");
  EXPECT_EQ(got->description(), "every ten seconds");
  EXPECT_EQ(got->routing_strategy(), jobwheel::v1::ROUTING_STRATEGY_ROUND);
  EXPECT_EQ(got->schedule().cron().expression(), "*/10 * * * * ?");
  EXPECT_TRUE(got->enabled());
  EXPECT_EQ(got->next_fire_time().seconds(), created.next_fire_time().seconds());

  ASSERT_TRUE(this->admin_->DeleteJob(created.id()).ok());
  EXPECT_EQ(this->admin_->GetJob(created.id()).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(this->admin_->DeleteJob(created.id()).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(this->admin_->GetJob(created.id() + 1000).status().code(), absl::StatusCode::kNotFound);
}

TYPED_TEST(JobStoreContractTest, PauseAndResumeMoveTheNextFireTime) {
  const Job job = this->MustCreate(EveryTenSeconds("pausable"));
  auto paused = this->admin_->PauseJob(job.id());
  ASSERT_TRUE(paused.ok()) << paused.status();
  EXPECT_FALSE(paused->enabled());
  EXPECT_FALSE(paused->has_next_fire_time());
  auto resumed = this->admin_->ResumeJob(job.id());
  ASSERT_TRUE(resumed.ok()) << resumed.status();
  EXPECT_TRUE(resumed->enabled());
  EXPECT_TRUE(resumed->has_next_fire_time());
}

TYPED_TEST(JobStoreContractTest, ListPagesByIdAndFiltersEscapeWildcards) {
  for (const char* name : {"a_b", "axb", "100%", "1000", "Mixed Case"}) {
    this->MustCreate(EveryTenSeconds(name));
  }
  Job other = EveryTenSeconds("other app", "other");
  other.set_enabled(false);
  this->MustCreate(other);

  jobwheel::v1::ListJobsRequest req;
  req.set_page_size(4);
  auto first = this->admin_->ListJobs(req);
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_EQ(first->jobs_size(), 4);
  ASSERT_FALSE(first->next_page_token().empty());
  req.set_page_token(first->next_page_token());
  auto second = this->admin_->ListJobs(req);
  ASSERT_TRUE(second.ok()) << second.status();
  ASSERT_EQ(second->jobs_size(), 2);
  EXPECT_GT(second->jobs(0).id(), first->jobs(3).id());
  EXPECT_TRUE(second->next_page_token().empty());

  jobwheel::v1::ListJobsRequest f;
  f.set_name_contains("_");
  EXPECT_THAT(this->Names(f), ElementsAre("a_b"));
  f.set_name_contains("%");
  EXPECT_THAT(this->Names(f), ElementsAre("100%"));
  f.set_name_contains("mixed c");
  EXPECT_THAT(this->Names(f), ElementsAre("Mixed Case"));
  f.clear_name_contains();
  f.set_app("other");
  EXPECT_THAT(this->Names(f), ElementsAre("other app"));
  f.clear_app();
  f.set_enabled(false);
  EXPECT_THAT(this->Names(f), ElementsAre("other app"));
  f.set_enabled(true);
  EXPECT_EQ(this->Names(f).size(), 5u);
}

TYPED_TEST(JobStoreContractTest, AnUpdateClosingACycleIsRefusedAndWritesNothing) {
  const Job a = this->MustCreate(EveryTenSeconds("a"));
  Job b_in = EveryTenSeconds("b");
  b_in.add_child_job_ids(a.id());
  const Job b = this->MustCreate(b_in);
  Job patch;
  patch.set_id(a.id());
  patch.add_child_job_ids(b.id());
  patch.set_param("must not be written");
  google::protobuf::FieldMask mask;
  mask.add_paths("child_job_ids");
  mask.add_paths("param");
  auto s = this->admin_->UpdateJob(patch, mask);
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.status().message(), absl::StrCat("job.child_job_ids: cycle ", a.id(),
                                               " \xE2\x86\x92 ", b.id(), " \xE2\x86\x92 ", a.id()));
  EXPECT_EQ(this->admin_->GetJob(a.id())->param(), "");
  EXPECT_TRUE(this->admin_->GetJob(a.id())->child_job_ids().empty());
}

}  // namespace
}  // namespace jobwheel::scheduler::admin
