// PgAlarmOutbox and QueueAlarms against a real PostgreSQL: one row per key, claiming due rows
// with a lease (SKIP LOCKED), marking sent, failed and postponed rows, and the leader fence.
#include "services/scheduler/alarm_outbox_pg.h"

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/pg/migrations.h"
#include "common/testing/pg_test_db.h"
#include "common/time/clock.h"
#include "common/time/proto_time.h"
#include "gtest/gtest.h"

namespace jobwheel::scheduler {
namespace {

class PgAlarmOutboxTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dsn = testing::CreateMigratedTestDatabase();
    ASSERT_TRUE(dsn.ok()) << dsn.status();
    conn_ = std::make_unique<pqxx::connection>(*dsn);
    elector_ = std::make_unique<LeaderElector>(
        LeaderElector::Options{*dsn, "a", absl::Milliseconds(20), absl::Milliseconds(50)},
        LeaderElector::Callbacks{}, RealClock::Get());
    elector_->Start();
    const absl::Time deadline = RealClock::Get().Now() + absl::Seconds(10);
    while (!elector_->is_leader() && RealClock::Get().Now() < deadline)
      absl::SleepFor(absl::Milliseconds(5));
    ASSERT_TRUE(elector_->is_leader());
    outbox_ = std::make_unique<PgAlarmOutbox>(*elector_);
  }
  void TearDown() override { elector_->Shutdown(); }

  AlarmEvent Event(int64_t run) {
    AlarmEvent e;
    e.kind = AlarmKind::kRunFailed;
    e.key = absl::StrCat("run_failed/", run);
    e.job_id = 1;
    e.run_id = run;
    e.message = "it's \"quoted\", {braced} and \\ escaped";
    return e;
  }
  int Queue(const std::vector<AlarmEvent>& events) {
    pqxx::work tx(*conn_);
    const int n = QueueAlarms(tx, events);
    tx.commit();
    return n;
  }
  int64_t Int(const std::string& sql) {
    pqxx::work tx(*conn_);
    return tx.exec1(sql)[0].as<int64_t>();
  }
  absl::Time DbNow() {
    pqxx::work tx(*conn_);
    return FromMicros(
        tx.exec1("SELECT (EXTRACT(EPOCH FROM now()) * 1000000)::BIGINT")[0].as<int64_t>());
  }

  std::unique_ptr<pqxx::connection> conn_;
  std::unique_ptr<LeaderElector> elector_;
  std::unique_ptr<PgAlarmOutbox> outbox_;
};

TEST_F(PgAlarmOutboxTest, OneRowPerKeyWithItsPayload) {
  EXPECT_EQ(Queue({Event(1), Event(2), Event(1)}), 2);
  EXPECT_EQ(Queue({Event(2), Event(3)}), 1);
  EXPECT_EQ(Int("SELECT count(*) FROM alarm_outbox"), 3);
  pqxx::work tx(*conn_);
  pqxx::row r = tx.exec1(
      "SELECT kind, job_id, run_id, payload, attempts, sent_at IS NULL FROM alarm_outbox "
      "WHERE idempotency_key = 'run_failed/1'");
  EXPECT_EQ(r[0].as<std::string>(), "run_failed");
  EXPECT_EQ(r[1].as<int64_t>(), 1);
  EXPECT_EQ(r[2].as<int64_t>(), 1);
  EXPECT_EQ(r[3].as<std::string>(), AlarmJson(Event(1)));
  EXPECT_EQ(r[4].as<int>(), 0);
  EXPECT_TRUE(r[5].as<bool>());
  AlarmEvent job_alarm = Event(0);
  job_alarm.kind = AlarmKind::kScheduleError;
  job_alarm.key = "schedule_error/1/5";
  tx.abort();
  EXPECT_EQ(Queue({job_alarm}), 1);
  EXPECT_EQ(Int("SELECT count(*) FROM alarm_outbox WHERE run_id IS NULL"), 1);
}

TEST_F(PgAlarmOutboxTest, ClaimLeasesDueRowsAndMarksThem) {
  Queue({Event(1), Event(2), Event(3)});
  const absl::Time now = DbNow() + absl::Seconds(1);
  auto claimed = outbox_->ClaimDue(now, absl::Minutes(2), 2);
  ASSERT_TRUE(claimed.ok()) << claimed.status();
  ASSERT_EQ(claimed->size(), 2u);
  EXPECT_EQ((*claimed)[0].key, "run_failed/1");
  EXPECT_EQ((*claimed)[1].key, "run_failed/2");
  EXPECT_EQ((*claimed)[0].payload, AlarmJson(Event(1)));
  // Leased: a second claim gets only the third.
  auto again = outbox_->ClaimDue(now, absl::Minutes(2), 10);
  ASSERT_TRUE(again.ok());
  ASSERT_EQ(again->size(), 1u);
  EXPECT_EQ((*again)[0].key, "run_failed/3");
  // Sent, failed, postponed.
  ASSERT_TRUE(outbox_->MarkSent((*claimed)[0].id, now).ok());
  ASSERT_TRUE(
      outbox_->MarkFailed((*claimed)[1].id, "connection refused", now + absl::Seconds(30)).ok());
  ASSERT_TRUE(outbox_->Postpone({(*again)[0].id}, now + absl::Seconds(30)).ok());
  EXPECT_EQ(Int("SELECT count(*) FROM alarm_outbox WHERE sent_at IS NOT NULL"), 1);
  EXPECT_EQ(Int("SELECT attempts FROM alarm_outbox WHERE idempotency_key = 'run_failed/2'"), 1);
  EXPECT_EQ(Int("SELECT attempts FROM alarm_outbox WHERE idempotency_key = 'run_failed/3'"), 0);
  EXPECT_EQ(Int("SELECT count(*) FROM alarm_outbox WHERE last_error = 'connection refused'"), 1);
  // Nothing due before the retry time; both unsent rows after it; the sent one never again.
  auto early = outbox_->ClaimDue(now + absl::Seconds(29), absl::Minutes(2), 10);
  ASSERT_TRUE(early.ok());
  EXPECT_TRUE(early->empty());
  auto later = outbox_->ClaimDue(now + absl::Seconds(30), absl::Minutes(2), 10);
  ASSERT_TRUE(later.ok());
  ASSERT_EQ(later->size(), 2u);
  EXPECT_EQ((*later)[0].attempts, 1);
  // A second MarkSent keeps the first time; MarkFailed on a sent row changes nothing.
  ASSERT_TRUE(outbox_->MarkSent((*claimed)[0].id, now + absl::Hours(1)).ok());
  ASSERT_TRUE(outbox_->MarkFailed((*claimed)[0].id, "late", now).ok());
  EXPECT_EQ(Int(absl::StrCat("SELECT attempts FROM alarm_outbox WHERE id = ", (*claimed)[0].id)),
            0);
  EXPECT_EQ(Int(absl::StrCat("SELECT (EXTRACT(EPOCH FROM sent_at) * 1000000)::BIGINT FROM "
                             "alarm_outbox WHERE id = ",
                             (*claimed)[0].id)),
            absl::ToUnixMicros(now));
}

TEST_F(PgAlarmOutboxTest, ClaimSkipsRowsAnotherTransactionHolds) {
  Queue({Event(1), Event(2)});
  const absl::Time now = DbNow() + absl::Seconds(1);
  pqxx::work holder(*conn_);
  holder.exec("SELECT id FROM alarm_outbox WHERE idempotency_key = 'run_failed/1' FOR UPDATE");
  auto claimed = outbox_->ClaimDue(now, absl::Minutes(2), 10);
  ASSERT_TRUE(claimed.ok()) << claimed.status();
  ASSERT_EQ(claimed->size(), 1u);
  EXPECT_EQ((*claimed)[0].key, "run_failed/2");
}

TEST_F(PgAlarmOutboxTest, OnlyTheLeaderClaims) {
  Queue({Event(1)});
  elector_->Shutdown();
  EXPECT_FALSE(outbox_->ClaimDue(DbNow() + absl::Seconds(1), absl::Minutes(2), 10).ok());
  EXPECT_EQ(Int("SELECT count(*) FROM alarm_outbox WHERE next_attempt > now() + "
                "interval '1 minute'"),
            0);
}

}  // namespace
}  // namespace jobwheel::scheduler
