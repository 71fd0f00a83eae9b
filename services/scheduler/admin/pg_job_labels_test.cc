// Job labels and run retention through JobAdmin on PgJobStore (real PostgreSQL): labels are
// stored and read back, ListJobs filters by label selectors, bad labels and retentions are
// refused naming the field and write nothing.
#include <memory>
#include <string>
#include <vector>

#include "common/pg/pg_pool.h"
#include "common/testing/pg_test_db.h"
#include "common/time/clock.h"
#include "common/time/proto_time.h"
#include "gtest/gtest.h"
#include "pqxx/pqxx"
#include "services/scheduler/admin/fake_executor_client.h"
#include "services/scheduler/admin/job_admin.h"
#include "services/scheduler/admin/pg_job_store.h"

namespace jobwheel::scheduler::admin {
namespace {

using jobwheel::v1::Job;

class PgJobLabelsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dsn = testing::CreateMigratedTestDatabase();
    ASSERT_TRUE(dsn.ok()) << dsn.status();
    pool_ = std::make_unique<PgPool>(*dsn, 2);
    store_ = std::make_unique<PgJobStore>(*pool_);
    admin_ = std::make_unique<JobAdmin>(*store_, executors_, RealClock::Get());
    conn_ = std::make_unique<pqxx::connection>(*dsn);
  }

  static Job Labelled(const std::string& name, const std::string& team, const std::string& tier) {
    Job job;
    job.set_app("demo");
    job.set_name(name);
    job.set_handler("echo");
    job.mutable_schedule()->mutable_none();
    if (!team.empty()) (*job.mutable_labels())["team"] = team;
    if (!tier.empty()) (*job.mutable_labels())["tier"] = tier;
    return job;
  }

  std::vector<std::string> Names(const std::string& selector) {
    jobwheel::v1::ListJobsRequest req;
    req.set_label_selector(selector);
    auto resp = admin_->ListJobs(req);
    EXPECT_TRUE(resp.ok()) << resp.status();
    std::vector<std::string> out;
    if (resp.ok()) {
      for (const Job& j : resp->jobs()) out.push_back(j.name());
    }
    return out;
  }

  int64_t Jobs() {
    pqxx::nontransaction tx(*conn_);
    return tx.exec("SELECT count(*) FROM jobs")[0][0].as<int64_t>();
  }

  FakeExecutorClient executors_;
  std::unique_ptr<PgPool> pool_;
  std::unique_ptr<PgJobStore> store_;
  std::unique_ptr<JobAdmin> admin_;
  std::unique_ptr<pqxx::connection> conn_;
};

TEST_F(PgJobLabelsTest, LabelsAreStoredAndFilterListJobs) {
  auto a = admin_->CreateJob(Labelled("a", "payments", "batch"));
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(admin_->CreateJob(Labelled("b", "payments", "online")).ok());
  ASSERT_TRUE(admin_->CreateJob(Labelled("c", "search", "")).ok());
  ASSERT_TRUE(admin_->CreateJob(Labelled("d", "", "")).ok());
  auto got = admin_->GetJob(a->id());
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->labels().size(), 2u);
  EXPECT_EQ(got->labels().at("team"), "payments");
  EXPECT_EQ(got->labels().at("tier"), "batch");

  EXPECT_EQ(Names("team=payments"), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(Names("team=payments,tier!=batch"), (std::vector<std::string>{"b"}));
  // != also matches jobs without the label.
  EXPECT_EQ(Names("tier!=batch"), (std::vector<std::string>{"b", "c", "d"}));
  EXPECT_EQ(Names(" team = search "), (std::vector<std::string>{"c"}));
  EXPECT_TRUE(Names("team=payments,team=search").empty());
  EXPECT_EQ(Names(""), (std::vector<std::string>{"a", "b", "c", "d"}));

  // An update that changes the labels moves the job between filters.
  Job patch;
  patch.set_id(a->id());
  (*patch.mutable_labels())["team"] = "search";
  google::protobuf::FieldMask mask;
  mask.add_paths("labels");
  ASSERT_TRUE(admin_->UpdateJob(patch, mask).ok());
  EXPECT_EQ(Names("team=search"), (std::vector<std::string>{"a", "c"}));
}

TEST_F(PgJobLabelsTest, BadLabelsSelectorsAndRetentionsNameTheFieldAndWriteNothing) {
  Job bad = Labelled("x", "payments", "");
  (*bad.mutable_labels())["Bad Key"] = "v";
  auto r = admin_->CreateJob(bad);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("job.labels[\"Bad Key\"]"), std::string::npos) << r.status();
  Job bad_value = Labelled("x", "pay ments", "");
  r = admin_->CreateJob(bad_value);
  EXPECT_NE(r.status().message().find("job.labels[\"team\"]"), std::string::npos) << r.status();
  Job bad_age = Labelled("x", "", "");
  *bad_age.mutable_run_retention()->mutable_max_age() = ToProtoDuration(absl::Seconds(5));
  r = admin_->CreateJob(bad_age);
  EXPECT_NE(r.status().message().find("job.run_retention.max_age"), std::string::npos)
      << r.status();
  Job bad_keep = Labelled("x", "", "");
  bad_keep.mutable_run_retention()->set_keep_last(-1);
  r = admin_->CreateJob(bad_keep);
  EXPECT_NE(r.status().message().find("job.run_retention.keep_last"), std::string::npos)
      << r.status();
  EXPECT_EQ(Jobs(), 0);

  jobwheel::v1::ListJobsRequest req;
  for (const char* selector : {"team", "=x", "team==x", "te am=x", "team=a b"}) {
    req.set_label_selector(selector);
    auto list = admin_->ListJobs(req);
    EXPECT_EQ(list.status().code(), absl::StatusCode::kInvalidArgument) << selector;
    EXPECT_NE(list.status().message().find("label_selector"), std::string::npos) << selector;
  }
}

TEST_F(PgJobLabelsTest, RunRetentionIsStoredAndReadBack) {
  Job job = Labelled("r", "", "");
  *job.mutable_run_retention()->mutable_max_age() = ToProtoDuration(absl::Hours(2));
  job.mutable_run_retention()->set_keep_last(5);
  auto created = admin_->CreateJob(job);
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_EQ(FromProto(created->run_retention().max_age()), absl::Hours(2));
  EXPECT_EQ(created->run_retention().keep_last(), 5);
  pqxx::nontransaction tx(*conn_);
  pqxx::row row = tx.exec1("SELECT run_max_age_ms, run_keep_last FROM jobs");
  EXPECT_EQ(row[0].as<int64_t>(), 2 * 3600 * 1000);
  EXPECT_EQ(row[1].as<int>(), 5);
}

}  // namespace
}  // namespace jobwheel::scheduler::admin
