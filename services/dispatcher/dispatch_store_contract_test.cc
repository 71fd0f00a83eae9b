// The DispatchStore contract for what the dispatcher's unit tests lean on, run against the fake
// (testing::RecordingStore) and the real store (PgDispatchStore on a fresh database): trigger
// answers, result dispositions (recorded, duplicate, late, unknown, bad key, forbidden) and
// reroutes, the same cases on both, so the fake cannot drift from PostgreSQL.

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "common/testing/pg_store_test.h"
#include "common/testing/store_contract.h"
#include "common/time/proto_time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "services/dispatcher/dispatch_test_util.h"
#include "services/dispatcher/pg_dispatch_store.h"
#include "services/dispatcher/recording_store.h"

namespace jobwheel::dispatcher {
namespace {

using ::testing::ElementsAre;
using ::testing::UnorderedElementsAre;

// Each environment: the store and a fire of job `job()` it may dispatch.
class RecordingEnv {
 public:
  static constexpr char kName[] = "Recording";
  RecordingEnv() : job_(testing::MakeJob(7, "demo", "echo", v1::ROUTING_STRATEGY_FIRST)) {}
  bool ok() const { return true; }
  DispatchStore& store() { return store_; }
  v1::Fire NewFire(absl::Time now) { return testing::MakeFire(next_fire_++, job_, now); }

 private:
  testing::RecordingStore store_;
  v1::Job job_;
  int64_t next_fire_ = 1;
};

class PgEnv : public jobwheel::testing::PgStoreEnv<PgDispatchStore> {
 public:
  PgEnv() : PgStoreEnv(2, PgPool::PlanMode::kIndexLookups) {
    if (!ok()) return;
    job_ =
        testing::MakeJob(testing::InsertJob(db_->dsn(), "demo", "echo", v1::ROUTING_STRATEGY_FIRST),
                         "demo", "echo", v1::ROUTING_STRATEGY_FIRST);
  }
  v1::Fire NewFire(absl::Time now) {
    return testing::MakeFire(testing::InsertFire(db_->dsn(), job_.id()), job_, now);
  }

 private:
  v1::Job job_;
};

template <typename Env>
class DispatchStoreContractTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(env_.ok()); }
  DispatchStore& store() { return env_.store(); }

  // One PENDING run on a fresh fire of app demo; its result key is kept for Result().
  int64_t PendingRun() {
    auto r = store().DispatchFires({env_.NewFire(now_)}, now_, [](const v1::Fire&) {
      FirePlan p;
      p.runs.push_back(PlannedRun{"h:1", 0, 1, v1::RUN_STATUS_PENDING, "route FIRST"});
      return p;
    });
    EXPECT_TRUE(r.ok()) << r.status();
    if (!r.ok() || r->empty() || (*r)[0].created.empty()) return 0;
    const CreatedRun& run = (*r)[0].created[0];
    EXPECT_EQ((*r)[0].run_ids, std::vector<int64_t>{run.run_id});
    EXPECT_FALSE(run.planned.result_key.empty());
    keys_[run.run_id] = run.planned.result_key;
    return run.run_id;
  }

  v1::RunResult Result(int64_t run_id, v1::RunStatus status, const std::string& msg) {
    v1::RunResult r;
    r.set_run_id(run_id);
    r.set_status(status);
    r.set_message(msg);
    r.set_executor_address("h:1");
    *r.mutable_end_time() = ToProto(now_ + absl::Seconds(1));
    auto key = keys_.find(run_id);
    if (key != keys_.end()) r.set_result_key(key->second);
    return r;
  }

  std::vector<ResultDisposition> Record(const std::vector<v1::RunResult>& results,
                                        const AppScope& scope = std::nullopt) {
    auto rec = store().RecordResults(results, now_, scope, {});
    EXPECT_TRUE(rec.ok()) << rec.status();
    std::vector<ResultDisposition> out;
    if (rec.ok()) {
      for (const ResultRecord& r : *rec) out.push_back(r.disposition);
    }
    return out;
  }

  Env env_;
  const absl::Time now_ = absl::FromUnixSeconds(1700000000);
  std::map<int64_t, std::string> keys_;
};

using Envs = ::testing::Types<RecordingEnv, PgEnv>;
TYPED_TEST_SUITE(DispatchStoreContractTest, Envs, ::jobwheel::testing::StoreEnvNames);

TYPED_TEST(DispatchStoreContractTest, TriggerAnswersEndOnlyPendingRunsAndReportThemOnce) {
  const int64_t started = this->PendingRun();
  const int64_t discarded = this->PendingRun();
  const int64_t finished_first = this->PendingRun();
  ASSERT_THAT(this->Record({this->Result(finished_first, v1::RUN_STATUS_SUCCEEDED, "ok")}),
              ElementsAre(ResultDisposition::kRecorded));
  auto done = this->store().RecordTriggerOutcomes(
      {TriggerOutcome{started, v1::RUN_STATUS_RUNNING, "; executor: STARTED", this->now_},
       TriggerOutcome{discarded, v1::RUN_STATUS_DISCARDED, "; executor: DISCARDED", this->now_},
       TriggerOutcome{finished_first, v1::RUN_STATUS_RUNNING, "; executor: STARTED", this->now_}});
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_THAT(*done, ElementsAre(discarded));
  // A second answer for a run that ended is not a second end.
  auto again = this->store().RecordTriggerOutcomes(
      {TriggerOutcome{discarded, v1::RUN_STATUS_FAILED, "; again", this->now_}});
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(again->empty());
  // The discarded run's status stands: a result of another status is late.
  EXPECT_THAT(this->Record({this->Result(discarded, v1::RUN_STATUS_SUCCEEDED, "late")}),
              ElementsAre(ResultDisposition::kLate));
}

TYPED_TEST(DispatchStoreContractTest, ResultsRecordedOnceDuplicatesLateAndUnknown) {
  const int64_t a = this->PendingRun();
  const int64_t b = this->PendingRun();
  ASSERT_TRUE(this->store()
                  .RecordTriggerOutcomes({TriggerOutcome{b, v1::RUN_STATUS_RUNNING,
                                                         "; executor: STARTED", this->now_}})
                  .ok());
  EXPECT_THAT(this->Record({this->Result(a, v1::RUN_STATUS_SUCCEEDED, "done"),
                            this->Result(b, v1::RUN_STATUS_KILLED, "killed"),
                            this->Result(424242, v1::RUN_STATUS_FAILED, "?")}),
              ElementsAre(ResultDisposition::kRecorded, ResultDisposition::kRecorded,
                          ResultDisposition::kUnknown));
  EXPECT_THAT(this->Record({this->Result(a, v1::RUN_STATUS_SUCCEEDED, "done"),
                            this->Result(b, v1::RUN_STATUS_SUCCEEDED, "late")}),
              ElementsAre(ResultDisposition::kDuplicate, ResultDisposition::kLate));
  // A late result is kept once: the next one is a duplicate.
  EXPECT_THAT(this->Record({this->Result(b, v1::RUN_STATUS_FAILED, "later")}),
              ElementsAre(ResultDisposition::kDuplicate));
}

TYPED_TEST(DispatchStoreContractTest, ResultsWithoutTheRunsKeyAreRefusedAndLeaveTheRun) {
  const int64_t a = this->PendingRun();
  v1::RunResult forged = this->Result(a, v1::RUN_STATUS_FAILED, "forged");
  forged.set_result_key("not-the-key");
  EXPECT_THAT(this->Record({forged}), ElementsAre(ResultDisposition::kBadKey));
  forged.clear_result_key();
  EXPECT_THAT(this->Record({forged}), ElementsAre(ResultDisposition::kBadKey));
  // Untouched: the right key's result is still the first.
  EXPECT_THAT(this->Record({this->Result(a, v1::RUN_STATUS_SUCCEEDED, "ok")}),
              ElementsAre(ResultDisposition::kRecorded));
}

TYPED_TEST(DispatchStoreContractTest, ResultsOutsideTheReportersAppsAreForbidden) {
  const int64_t a = this->PendingRun();
  EXPECT_THAT(this->Record({this->Result(a, v1::RUN_STATUS_SUCCEEDED, "spoofed"),
                            this->Result(424242, v1::RUN_STATUS_FAILED, "?")},
                           std::vector<std::string>{"other", "x\"y"}),
              ElementsAre(ResultDisposition::kForbidden, ResultDisposition::kUnknown));
  EXPECT_THAT(this->Record({this->Result(a, v1::RUN_STATUS_SUCCEEDED, "ok")},
                           std::vector<std::string>{"other", "demo"}),
              ElementsAre(ResultDisposition::kRecorded));
}

TYPED_TEST(DispatchStoreContractTest, RerouteMovesOnlyPendingRuns) {
  const int64_t pending = this->PendingRun();
  const int64_t running = this->PendingRun();
  const int64_t done = this->PendingRun();
  ASSERT_TRUE(this->store()
                  .RecordTriggerOutcomes({TriggerOutcome{running, v1::RUN_STATUS_RUNNING,
                                                         "; executor: STARTED", this->now_}})
                  .ok());
  ASSERT_THAT(this->Record({this->Result(done, v1::RUN_STATUS_SUCCEEDED, "ok")}),
              ElementsAre(ResultDisposition::kRecorded));
  auto moved = this->store().RerouteRuns({Reroute{pending, "h:9", "; executor h:1 left"},
                                          Reroute{running, "h:9", "; executor h:1 left"},
                                          Reroute{done, "h:9", "; executor h:1 left"},
                                          Reroute{424242, "h:9", "; executor h:1 left"}});
  ASSERT_TRUE(moved.ok()) << moved.status();
  EXPECT_THAT(*moved, UnorderedElementsAre(pending));
}

}  // namespace
}  // namespace jobwheel::dispatcher
