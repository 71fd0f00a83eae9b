// An online executor's address cannot be taken over through another registry replica, with the
// real binaries: two registry processes share one PostgreSQL. While executor process X (its
// instance_id) holds an address online through replica 1, another process Y presenting the same
// app's executor token is refused the address through replica 2 (and through replica 1); X
// itself reconnecting through replica 2 is accepted; once X's stream has ended and its row is
// offline, Y may register. Two processes racing for a free address through the two replicas
// never both win.

#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/random/random.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "common/auth/bearer.h"
#include "common/testing/process.h"
#include "common/testing/stack.h"
#include "common/time/clock.h"
#include "gtest/gtest.h"
#include "jobwheel/v1/registry.grpc.pb.h"
#include "jobwheel/v1/token_admin.pb.h"
#include "pqxx/pqxx"

namespace jobwheel::security_testing {

using testing::Addr;
using testing::Ctx;
using testing::Stack;
namespace {

using testing::Eventually;

constexpr absl::Duration kWait = absl::Seconds(15);

std::string NewInstanceId() {
  absl::BitGen gen;
  return absl::StrFormat("%016x%016x", absl::Uniform<uint64_t>(gen), absl::Uniform<uint64_t>(gen));
}

// One heartbeat stream of an executor process: sends `register` and waits for the answer; once
// registered, beats every 300 ms until Close (or until the registry ends the stream).
class HeartbeatStream {
 public:
  HeartbeatStream(std::shared_ptr<grpc::Channel> channel, const std::string& token,
                  const v1::ExecutorRegistration& reg)
      : stub_(v1::RegistryService::NewStub(channel)) {
    AddBearer(ctx_, token);
    stream_ = stub_->Heartbeat(&ctx_);
    v1::HeartbeatRequest req;
    *req.mutable_register_() = reg;
    v1::HeartbeatResponse resp;
    if (!stream_->Write(req) || !stream_->Read(&resp) || !resp.has_registered()) {
      status_ = stream_->Finish();
      finished_ = true;
      return;
    }
    replica_ = resp.registered().replica_id();
    reader_ = std::thread([this] { Read(); });
    beater_ = std::thread([this] { Beat(); });
  }

  ~HeartbeatStream() { Close(); }

  bool registered() const { return !replica_.empty(); }
  // The replica that answered `registered`.
  const std::string& replica() const { return replica_; }

  // Waits until the registry has ended the stream; false after `timeout`.
  bool AwaitEnded(absl::Duration timeout) {
    absl::MutexLock lock(&mu_);
    return RealClock::Get().AwaitWithDeadline(&mu_, absl::Condition(&ended_),
                                              RealClock::Get().Now() + timeout);
  }

  // Ends the stream from this side (the process went away) unless the registry already did;
  // returns its final status.
  grpc::Status Close() {
    if (finished_) return status_;
    bool ended;
    {
      absl::MutexLock lock(&mu_);
      stop_ = true;
      ended = ended_;
    }
    // A stream the registry already ended keeps the registry's status.
    if (!ended) ctx_.TryCancel();
    if (beater_.joinable()) beater_.join();
    if (reader_.joinable()) reader_.join();
    status_ = stream_->Finish();
    finished_ = true;
    return status_;
  }

  // The status the stream ended with (registration refused, or Close()).
  const grpc::Status& status() const { return status_; }

 private:
  void Read() {
    v1::HeartbeatResponse resp;
    while (stream_->Read(&resp)) {
    }
    absl::MutexLock lock(&mu_);
    ended_ = true;
  }

  void Beat() {
    int64_t seq = 0;
    while (true) {
      {
        absl::MutexLock lock(&mu_);
        auto done = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stop_ || ended_; };
        if (RealClock::Get().AwaitWithDeadline(&mu_, absl::Condition(&done),
                                               RealClock::Get().Now() + absl::Milliseconds(300))) {
          return;
        }
      }
      v1::HeartbeatRequest beat;
      beat.mutable_beat()->set_seq(++seq);
      if (!stream_->Write(beat)) return;
    }
  }

  std::unique_ptr<v1::RegistryService::Stub> stub_;
  grpc::ClientContext ctx_;
  std::unique_ptr<grpc::ClientReaderWriter<v1::HeartbeatRequest, v1::HeartbeatResponse>> stream_;
  std::string replica_;
  grpc::Status status_;
  bool finished_ = false;
  std::thread reader_, beater_;
  absl::Mutex mu_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  bool ended_ ABSL_GUARDED_BY(mu_) = false;
};

class CrossReplicaTakeoverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Two registry replicas on the same database, keys and admin token; replica 2 has its own
    // --replica_id.
    Stack::Options options;
    options.registry.replicas = 2;
    options.registry.replica_ids = {"", "replica-2"};
    stack_ = std::make_unique<Stack>(options);
    absl::Status s = stack_->StartServices();
    ASSERT_TRUE(s.ok()) << s << "\n" << stack_->Logs();
    auto token = stack_->CreateToken("exec-demo", v1::ROLE_EXECUTOR, {"demo"});
    ASSERT_TRUE(token.ok()) << token.status();
    token_ = *token;
  }

  void TearDown() override {
    if (HasFailure()) std::cerr << stack_->Logs();
  }

  std::string replica1() const { return stack_->registry(0); }
  std::string replica2() const { return stack_->registry(1); }

  v1::ExecutorRegistration Reg(const std::string& address, const std::string& instance_id) {
    v1::ExecutorRegistration reg;
    reg.set_app("demo");
    reg.set_address(address);
    reg.add_handlers("echo");
    reg.set_capacity(1);
    reg.set_instance_id(instance_id);
    return reg;
  }

  std::unique_ptr<HeartbeatStream> Open(const std::string& replica, const std::string& address,
                                        const std::string& instance_id) {
    return std::make_unique<HeartbeatStream>(stack_->Channel(replica), token_,
                                             Reg(address, instance_id));
  }

  // "<registry_replica>" per address that ListExecutors on `replica` shows for app demo.
  std::map<std::string, std::string> Listed(const std::string& replica) {
    auto stub = v1::RegistryService::NewStub(stack_->Channel(replica));
    v1::ListExecutorsRequest req;
    req.set_app("demo");
    v1::ListExecutorsResponse resp;
    grpc::Status s = stub->ListExecutors(Ctx(stack_->admin_token()).get(), req, &resp);
    EXPECT_TRUE(s.ok()) << s.error_message();
    std::map<std::string, std::string> out;
    for (const v1::Executor& e : resp.executors()) out[e.address()] = e.registry_replica();
    return out;
  }

  // Whether both replicas list `address` (through `replica_id`), or (empty) neither does.
  bool BothList(const std::string& address, const std::string& replica_id) {
    for (const std::string& r : {replica1(), replica2()}) {
      std::map<std::string, std::string> listed = Listed(r);
      auto it = listed.find(address);
      if (replica_id.empty() ? it != listed.end()
                             : it == listed.end() || it->second != replica_id) {
        return false;
      }
    }
    return true;
  }

  // "replica|instance|online" of the executors row ("" when there is none).
  std::string Row(const std::string& address) {
    pqxx::connection conn(stack_->dsn());
    pqxx::nontransaction tx(conn);
    pqxx::result r = tx.exec_params(
        "SELECT replica_id || '|' || COALESCE(instance_id, '') || '|' || "
        "CASE WHEN online THEN 'online' ELSE 'offline' END "
        "FROM executors WHERE app = 'demo' AND address = $1",
        address);
    return r.empty() ? std::string() : r[0][0].as<std::string>();
  }

  static void ExpectRefused(const HeartbeatStream& stream) {
    EXPECT_FALSE(stream.registered()) << "registered through " << stream.replica();
    EXPECT_EQ(stream.status().error_code(), grpc::StatusCode::ALREADY_EXISTS)
        << stream.status().error_message();
    EXPECT_TRUE(absl::StartsWith(stream.status().error_message(), "register.address: "))
        << stream.status().error_message();
    EXPECT_TRUE(absl::StrContains(stream.status().error_message(), "another instance"))
        << stream.status().error_message();
  }

  std::unique_ptr<Stack> stack_;
  std::string token_;
};

TEST_F(CrossReplicaTakeoverTest, AnotherInstanceIsRefusedThroughEitherReplicaUntilTheRowIsOffline) {
  const std::string address = Addr(testing::PickFreePort());
  const std::string x = NewInstanceId();
  const std::string y = NewInstanceId();

  // X registers through replica 1 and keeps its stream open.
  auto x1 = Open(replica1(), address, x);
  ASSERT_TRUE(x1->registered()) << x1->status().error_message();
  const std::string replica1_id = x1->replica();
  ASSERT_NE(replica1_id, "replica-2");
  ASSERT_TRUE(Eventually([&] { return BothList(address, replica1_id); }, kWait));

  // Y, with the same app's token, through replica 2: refused, nothing replaced.
  auto y2 = Open(replica2(), address, y);
  ExpectRefused(*y2);
  // ... and through replica 1.
  auto y1 = Open(replica1(), address, y);
  ExpectRefused(*y1);
  EXPECT_EQ(Row(address), absl::StrCat(replica1_id, "|", x, "|online"));
  EXPECT_TRUE(BothList(address, replica1_id));

  // X reconnecting through replica 2 (its old stream still open) is no takeover.
  auto x2 = Open(replica2(), address, x);
  ASSERT_TRUE(x2->registered()) << x2->status().error_message();
  EXPECT_EQ(x2->replica(), "replica-2");
  EXPECT_EQ(Row(address), absl::StrCat("replica-2|", x, "|online"));
  ASSERT_TRUE(Eventually([&] { return BothList(address, "replica-2"); }, kWait));
  // Replica 1 finds its session superseded at its next lease renewal and ends that stream;
  // the row stays X's, online.
  ASSERT_TRUE(x1->AwaitEnded(kWait));
  EXPECT_EQ(x1->Close().error_code(), grpc::StatusCode::ABORTED);
  EXPECT_EQ(Row(address), absl::StrCat("replica-2|", x, "|online"));

  // Y still cannot have it, through either replica.
  ExpectRefused(*Open(replica2(), address, y));
  ExpectRefused(*Open(replica1(), address, y));
  EXPECT_EQ(Row(address), absl::StrCat("replica-2|", x, "|online"));

  // X's process goes away: its stream ends and its row goes offline.
  x2->Close();
  ASSERT_TRUE(
      Eventually([&] { return Row(address) == absl::StrCat("replica-2|", x, "|offline"); }, kWait))
      << Row(address);
  ASSERT_TRUE(Eventually([&] { return BothList(address, ""); }, kWait));

  // Now Y may register (here through replica 1).
  auto y_ok = Open(replica1(), address, y);
  ASSERT_TRUE(y_ok->registered()) << y_ok->status().error_message();
  EXPECT_EQ(Row(address), absl::StrCat(replica1_id, "|", y, "|online"));
  EXPECT_TRUE(Eventually([&] { return BothList(address, replica1_id); }, kWait));
  // And X, restarted as another process or not, is now the one refused.
  ExpectRefused(*Open(replica2(), address, x));
}

TEST_F(CrossReplicaTakeoverTest, TwoInstancesRacingThroughTwoReplicasNeverBothWin) {
  for (int round = 0; round < 5; ++round) {
    const std::string address = Addr(testing::PickFreePort());
    const std::string ids[2] = {NewInstanceId(), NewInstanceId()};
    std::unique_ptr<HeartbeatStream> streams[2];
    absl::Mutex mu;
    bool go = false;
    std::vector<std::thread> racers;
    for (int i = 0; i < 2; ++i) {
      racers.emplace_back([&, i] {
        {
          absl::MutexLock lock(&mu);
          mu.Await(absl::Condition(&go));
        }
        streams[i] = Open(i == 0 ? replica1() : replica2(), address, ids[i]);
      });
    }
    {
      absl::MutexLock lock(&mu);
      go = true;
    }
    for (std::thread& t : racers) t.join();
    const int winners = streams[0]->registered() + streams[1]->registered();
    ASSERT_EQ(winners, 1) << "round " << round << ": " << streams[0]->status().error_message()
                          << " / " << streams[1]->status().error_message();
    const int winner = streams[0]->registered() ? 0 : 1;
    ExpectRefused(*streams[1 - winner]);
    EXPECT_EQ(Row(address), absl::StrCat(streams[winner]->replica(), "|", ids[winner], "|online"));
    streams[winner]->Close();
  }
}

}  // namespace
}  // namespace jobwheel::security_testing
