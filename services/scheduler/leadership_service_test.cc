// LeadershipService against a real PostgreSQL with two electors: both replicas name the same
// holder from memory, a standby keeps answering while the database is slow to answer it
// (no query per call), after the leader steps down the standby names itself, and a leader
// whose database session stops answering stops claiming leadership.
#include "services/scheduler/leadership_service.h"

#include <signal.h>

#include <memory>

#include "absl/cleanup/cleanup.h"
#include "absl/time/clock.h"
#include "common/grpc/grpc_server.h"
#include "common/testing/pg_test_db.h"
#include "common/testing/process.h"
#include "common/time/clock.h"
#include "gtest/gtest.h"
#include "pqxx/pqxx"

namespace jobwheel::scheduler {
namespace {

using ::jobwheel::testing::Eventually;

class Replica {
 public:
  Replica(const std::string& dsn, const std::string& id,
          absl::Duration unconfirmed_after = absl::Seconds(2)) {
    LeaderElector::Options o;
    o.unconfirmed_after = unconfirmed_after;
    o.dsn = dsn;
    o.replica_id = id;
    o.retry_interval = absl::Milliseconds(100);
    o.check_interval = absl::Milliseconds(50);
    elector_ = std::make_unique<LeaderElector>(o, LeaderElector::Callbacks{}, RealClock::Get());
    service_ = std::make_unique<LeadershipService>(*elector_);
    int port = 0;
    auto server = StartGrpcServer("127.0.0.1:0", {service_.get()}, {}, &port);
    EXPECT_TRUE(server.ok()) << server.status();
    server_ = std::move(server).value();
    stub_ = jobwheel::v1::LeadershipService::NewStub(grpc::CreateChannel(
        "127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials()));
  }
  ~Replica() {
    server_->Shutdown();
    elector_->Shutdown();
  }

  LeaderElector& elector() { return *elector_; }

  grpc::Status Get(jobwheel::v1::GetLeaderResponse* out) {
    grpc::ClientContext ctx;  // No token: GetLeader is open.
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    return stub_->GetLeader(&ctx, {}, out);
  }

 private:
  std::unique_ptr<LeaderElector> elector_;
  std::unique_ptr<LeadershipService> service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<jobwheel::v1::LeadershipService::Stub> stub_;
};

class LeadershipServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dsn = testing::CreateMigratedTestDatabase();
    ASSERT_TRUE(dsn.ok()) << dsn.status();
    dsn_ = *dsn;
  }
  std::string dsn_;
};

TEST_F(LeadershipServiceTest, UnavailableBeforeTheFirstTry) {
  Replica a(dsn_, "a");  // Not started.
  jobwheel::v1::GetLeaderResponse r;
  EXPECT_EQ(a.Get(&r).error_code(), grpc::StatusCode::UNAVAILABLE);
}

// Start() returns after the first try of the lock, so a replica that serves right after it
// already names the leader: no window of UNAVAILABLE while health says SERVING.
TEST_F(LeadershipServiceTest, KnowsTheLeaderAsSoonAsStartReturns) {
  Replica a(dsn_, "a");
  a.elector().Start();
  jobwheel::v1::GetLeaderResponse ra;
  ASSERT_TRUE(a.Get(&ra).ok());
  EXPECT_EQ(ra.holder_id(), "a");
  EXPECT_TRUE(ra.is_leader());
  Replica b(dsn_, "b");
  b.elector().Start();
  jobwheel::v1::GetLeaderResponse rb;
  ASSERT_TRUE(b.Get(&rb).ok());
  EXPECT_EQ(rb.holder_id(), "a");
  EXPECT_FALSE(rb.is_leader());
}

TEST_F(LeadershipServiceTest, BothReplicasNameTheHolderAndTheStandbyTakesOver) {
  Replica a(dsn_, "a");
  a.elector().Start();
  ASSERT_TRUE(Eventually([&] { return a.elector().is_leader(); }));
  Replica b(dsn_, "b");
  b.elector().Start();

  jobwheel::v1::GetLeaderResponse ra, rb;
  ASSERT_TRUE(Eventually([&] { return b.Get(&rb).ok() && rb.holder_id() == "a"; }))
      << rb.DebugString();
  ASSERT_TRUE(a.Get(&ra).ok());
  EXPECT_EQ(ra.holder_id(), "a");
  EXPECT_TRUE(ra.is_leader());
  EXPECT_EQ(ra.replica_id(), "a");
  EXPECT_FALSE(rb.is_leader());
  EXPECT_EQ(rb.replica_id(), "b");
  EXPECT_EQ(ra.epoch(), rb.epoch());
  EXPECT_EQ(ra.since().seconds(), rb.since().seconds());
  EXPECT_GT(ra.since().seconds(), 0);

  // A call costs no query: with every other session of the database blocked behind a lock on
  // the leadership table, the standby still answers at once (its snapshot is what its last
  // try read).
  pqxx::connection blocker(dsn_);
  pqxx::work tx(blocker);
  tx.exec("LOCK TABLE leadership IN ACCESS EXCLUSIVE MODE");
  for (int i = 0; i < 50; ++i) {
    jobwheel::v1::GetLeaderResponse r;
    ASSERT_TRUE(b.Get(&r).ok());
    EXPECT_EQ(r.holder_id(), "a");
  }
  tx.abort();

  const int64_t first_epoch = ra.epoch();
  a.elector().Shutdown();
  ASSERT_TRUE(Eventually([&] { return b.Get(&rb).ok() && rb.is_leader(); }));
  EXPECT_EQ(rb.holder_id(), "b");
  EXPECT_GT(rb.epoch(), first_epoch);
  EXPECT_EQ(a.Get(&ra).error_code(), grpc::StatusCode::UNAVAILABLE);
}

// A leader cut off from PostgreSQL without its socket failing (a partition, a frozen primary):
// its lock session's backend is stopped, so its checks hang. GetLeader stops saying it leads
// once the session has not answered for unconfirmed_after, and says so again once it answers.
TEST_F(LeadershipServiceTest, ALeaderWhoseSessionStopsAnsweringStopsClaimingLeadership) {
  Replica a(dsn_, "a", absl::Milliseconds(500));
  a.elector().Start();
  ASSERT_TRUE(Eventually([&] { return a.elector().is_leader(); }));
  int backend = 0;
  {
    pqxx::connection conn(dsn_);
    pqxx::nontransaction tx(conn);
    // The only advisory lock held in this database: the schedule lock, on the elector's session.
    pqxx::result r = tx.exec(
        "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted AND database = "
        "(SELECT oid FROM pg_database WHERE datname = current_database())");
    ASSERT_EQ(r.size(), 1u);
    backend = r[0][0].as<int>();
  }
  ASSERT_EQ(::kill(backend, SIGSTOP), 0)
      << "cannot stop backend " << backend << ": errno " << errno;
  absl::Cleanup resume = [backend] { ::kill(backend, SIGCONT); };
  jobwheel::v1::GetLeaderResponse r;
  grpc::Status s;
  ASSERT_TRUE(Eventually(
      [&] {
        s = a.Get(&r);
        return s.error_code() == grpc::StatusCode::UNAVAILABLE;
      },
      absl::Seconds(5)))
      << "still claims leadership: " << r.DebugString();
  EXPECT_NE(s.error_message().find("leadership unconfirmed"), std::string::npos)
      << s.error_message();
  ::kill(backend, SIGCONT);
  EXPECT_TRUE(Eventually([&] { return a.Get(&r).ok() && r.is_leader(); }));
}

}  // namespace
}  // namespace jobwheel::scheduler
