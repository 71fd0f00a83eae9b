#include "services/registry/registry.h"

#include <memory>
#include <string>
#include <vector>

#include "common/time/clock.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"
#include "services/registry/in_memory_executor_store.h"
#include "services/registry/registry_metrics.h"

namespace jobwheel::registry {
namespace {

class FakeSink : public SessionSink {
 public:
  void SendInstruction(v1::InstructionKind kind, const std::string& reason) override {
    instructions.push_back(kind);
  }
  void Close(const absl::Status& status) override { closes.push_back(status); }

  std::vector<v1::InstructionKind> instructions;
  std::vector<absl::Status> closes;
};

// Executor processes (ExecutorRegistration.instance_id).
constexpr char kInstanceX[] = "0000000000000000000000000000000x";
constexpr char kInstanceY[] = "0000000000000000000000000000000y";

v1::ExecutorRegistration Reg(const std::string& app, const std::string& address,
                             const std::string& instance_id = kInstanceX) {
  v1::ExecutorRegistration reg;
  reg.set_app(app);
  reg.set_address(address);
  reg.set_instance_id(instance_id);
  reg.add_handlers("echo");
  reg.set_capacity(4);
  (*reg.mutable_labels())["zone"] = "a";
  return reg;
}

v1::ExecutorBeat BeatMsg(int64_t seq) {
  v1::ExecutorBeat b;
  b.set_seq(seq);
  b.set_running(1);
  b.set_queued(2);
  return b;
}

RegistryOptions Options(const std::string& replica) {
  RegistryOptions o;
  o.replica_id = replica;
  o.beat_interval = absl::Seconds(1);
  o.beat_deadline = absl::Seconds(3);
  o.lease = absl::Seconds(10);
  return o;
}

class RegistryTest : public ::testing::Test {
 protected:
  FakeClock clock_;
  InMemoryExecutorStore store_{clock_};
  prometheus::Registry prom_;
  RegistryMetrics metrics_{prom_};
  // A second replica's metrics, apart from the first's.
  prometheus::Registry other_prom_;
  RegistryMetrics other_metrics_{other_prom_};
  Registry registry_{Options("r1"), store_, clock_, metrics_};
  // Admins create apps; registrations do not.
  const bool apps_ = [this] {
    store_.SetApp(AppConfig{"demo", v1::ADDRESS_TYPE_AUTO, {}});
    store_.SetApp(AppConfig{"other", v1::ADDRESS_TYPE_AUTO, {}});
    return true;
  }();

  bool Online(const std::string& app, const std::string& address) {
    auto row = store_.GetRow({app, address});
    return row.has_value() && row->online;
  }
};

TEST_F(RegistryTest, OptionsValidate) {
  RegistryOptions o = Options("r1");
  EXPECT_TRUE(o.Validate().ok());
  o.beat_deadline = absl::Seconds(1);
  EXPECT_EQ(o.Validate().code(), absl::StatusCode::kInvalidArgument);
  o = Options("");
  EXPECT_EQ(o.Validate().code(), absl::StatusCode::kInvalidArgument);
  o = Options("r1");
  EXPECT_EQ(o.EffectiveRenewInterval(), absl::Seconds(1));
  o.lease = absl::Seconds(2);
  EXPECT_EQ(o.EffectiveRenewInterval(), absl::Seconds(2) / 3);
  o = Options("r1");
  o.register_deadline = absl::ZeroDuration();
  EXPECT_EQ(o.Validate().code(), absl::StatusCode::kInvalidArgument);
  o = Options("r1");
  o.recheck_interval = absl::ZeroDuration();
  EXPECT_EQ(o.Validate().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(RegistryTest, RegisterWritesRowAndReplies) {
  FakeSink sink;
  const int64_t s = registry_.OpenSession(&sink);
  EXPECT_EQ(metrics_.sessions_open.Value(), 1);
  auto reply = registry_.Register(s, Reg("demo", "10.0.0.1:7200"));
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(reply->replica_id(), "r1");
  EXPECT_EQ(reply->beat_interval().seconds(), 1);
  EXPECT_EQ(reply->beat_deadline().seconds(), 3);
  auto row = store_.GetRow({"demo", "10.0.0.1:7200"});
  ASSERT_TRUE(row.has_value());
  EXPECT_TRUE(row->online);
  EXPECT_EQ(row->replica_id, "r1");
  EXPECT_EQ(row->executor.handlers(0), "echo");
  EXPECT_EQ(row->lease_until, clock_.Now() + absl::Seconds(10));
  EXPECT_EQ(metrics_.registrations_accepted.Value(), 1);
}

TEST_F(RegistryTest, InvalidRegistrationIsRejectedNamingTheField) {
  FakeSink sink;
  const int64_t s = registry_.OpenSession(&sink);
  auto reply = registry_.Register(s, Reg("", "10.0.0.1:7200"));
  EXPECT_EQ(reply.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(reply.status().message().find("register.app"), absl::string_view::npos);
  reply = registry_.Register(s, Reg("demo", "no-port"));
  EXPECT_NE(reply.status().message().find("register.address"), absl::string_view::npos);
  reply = registry_.Register(s, Reg("demo", "h:1", ""));
  EXPECT_EQ(reply.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(reply.status().message().find("register.instance_id"), absl::string_view::npos);
  EXPECT_EQ(metrics_.registrations_rejected.Value(), 3);
  EXPECT_FALSE(store_.GetRow({"demo", "h:1"}).has_value());
  EXPECT_FALSE(store_.GetRow({"demo", "no-port"}).has_value());
}

TEST_F(RegistryTest, BeatBeforeRegisterFails) {
  FakeSink sink;
  const int64_t s = registry_.OpenSession(&sink);
  EXPECT_EQ(registry_.Beat(s, BeatMsg(1)).status().code(), absl::StatusCode::kFailedPrecondition);
}

TEST_F(RegistryTest, MissedBeatDeadlineTakesOfflineAndClosesStream) {
  FakeSink sink;
  const int64_t s = registry_.OpenSession(&sink);
  ASSERT_TRUE(registry_.Register(s, Reg("demo", "h:1")).ok());
  clock_.Advance(absl::Seconds(2));
  ASSERT_EQ(*registry_.Beat(s, BeatMsg(7)), 7);
  clock_.Advance(absl::Seconds(3));  // Exactly the deadline since the last beat: still fine.
  registry_.Tick();
  EXPECT_TRUE(Online("demo", "h:1"));
  EXPECT_TRUE(sink.closes.empty());
  clock_.Advance(absl::Milliseconds(100));
  registry_.Tick();
  EXPECT_FALSE(Online("demo", "h:1"));
  ASSERT_EQ(sink.closes.size(), 1u);
  EXPECT_EQ(sink.closes[0].code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(metrics_.offline_deadline.Value(), 1);
  // The stream then ends: nothing more is written.
  registry_.CloseSession(s);
  EXPECT_EQ(metrics_.offline_stream_closed.Value(), 0);
  EXPECT_EQ(metrics_.sessions_open.Value(), 0);
}

TEST_F(RegistryTest, RegularBeatsKeepOnlineAndLeasesAreRenewedInBatches) {
  FakeSink sink_a, sink_b;
  const int64_t a = registry_.OpenSession(&sink_a);
  const int64_t b = registry_.OpenSession(&sink_b);
  ASSERT_TRUE(registry_.Register(a, Reg("demo", "h:1")).ok());
  ASSERT_TRUE(registry_.Register(b, Reg("demo", "h:2")).ok());
  for (int i = 1; i <= 30; ++i) {
    clock_.Advance(absl::Seconds(1));
    ASSERT_TRUE(registry_.Beat(a, BeatMsg(i)).ok());
    ASSERT_TRUE(registry_.Beat(b, BeatMsg(i)).ok());
    registry_.Tick();
  }
  EXPECT_TRUE(Online("demo", "h:1"));
  EXPECT_TRUE(Online("demo", "h:2"));
  // One renewal per interval for both sessions, not one write per beat.
  EXPECT_EQ(store_.renew_calls(), 30);
  auto row = store_.GetRow({"demo", "h:1"});
  EXPECT_GE(row->lease_until, clock_.Now() + absl::Seconds(9));
  EXPECT_EQ(row->executor.running(), 1);
  EXPECT_EQ(row->executor.queued(), 2);
  EXPECT_EQ(metrics_.beats.Value(), 60);
}

TEST_F(RegistryTest, GoodbyeTakesOfflineBeforeReturning) {
  FakeSink sink;
  const int64_t s = registry_.OpenSession(&sink);
  ASSERT_TRUE(registry_.Register(s, Reg("demo", "h:1")).ok());
  ASSERT_TRUE(registry_.Goodbye(s, "shutdown").ok());
  EXPECT_FALSE(Online("demo", "h:1"));
  EXPECT_EQ(metrics_.offline_goodbye.Value(), 1);
  registry_.CloseSession(s);
  EXPECT_EQ(metrics_.offline_stream_closed.Value(), 0);
}

TEST_F(RegistryTest, GoodbyeFailureLeavesCloseSessionToRetry) {
  FakeSink sink;
  const int64_t s = registry_.OpenSession(&sink);
  ASSERT_TRUE(registry_.Register(s, Reg("demo", "h:1")).ok());
  store_.SetFailing(true);
  EXPECT_FALSE(registry_.Goodbye(s, "shutdown").ok());
  store_.SetFailing(false);
  registry_.CloseSession(s);
  EXPECT_FALSE(Online("demo", "h:1"));
}

TEST_F(RegistryTest, StreamCloseTakesOffline) {
  FakeSink sink;
  const int64_t s = registry_.OpenSession(&sink);
  ASSERT_TRUE(registry_.Register(s, Reg("demo", "h:1")).ok());
  registry_.CloseSession(s);
  EXPECT_FALSE(Online("demo", "h:1"));
  EXPECT_EQ(metrics_.offline_stream_closed.Value(), 1);
}

TEST_F(RegistryTest, StaleSessionCannotOverwriteNewerOneOnAnotherReplica) {
  Registry other(Options("r2"), store_, clock_, other_metrics_);
  FakeSink old_sink, new_sink;
  const int64_t old_session = registry_.OpenSession(&old_sink);
  ASSERT_TRUE(registry_.Register(old_session, Reg("demo", "h:1")).ok());
  // The executor reconnects to r2 before r1 noticed the old stream is gone.
  const int64_t new_session = other.OpenSession(&new_sink);
  ASSERT_TRUE(other.Register(new_session, Reg("demo", "h:1")).ok());
  // r1's renewal finds the row taken and closes its stale stream without
  // touching the row.
  clock_.Advance(absl::Seconds(1));
  registry_.Tick();
  ASSERT_EQ(old_sink.closes.size(), 1u);
  EXPECT_EQ(old_sink.closes[0].code(), absl::StatusCode::kAborted);
  registry_.CloseSession(old_session);
  auto row = store_.GetRow({"demo", "h:1"});
  EXPECT_TRUE(row->online);
  EXPECT_EQ(row->replica_id, "r2");
}

TEST_F(RegistryTest, SecondLocalStreamCannotTakeOverAnOnlineAddress) {
  FakeSink old_sink, new_sink;
  const int64_t old_session = registry_.OpenSession(&old_sink);
  ASSERT_TRUE(registry_.Register(old_session, Reg("demo", "h:1")).ok());
  const int64_t new_session = registry_.OpenSession(&new_sink);
  auto refused = registry_.Register(new_session, Reg("demo", "h:1", kInstanceY));
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_NE(refused.status().message().find(
                "register.address: executor demo/h:1 is online with another instance"),
            std::string::npos)
      << refused.status();
  EXPECT_TRUE(old_sink.closes.empty());
  EXPECT_EQ(metrics_.registrations_rejected.Value(), 1);
  EXPECT_EQ(store_.GetRow({"demo", "h:1"})->instance_id, kInstanceX);
  // The same stream may register again (REREGISTER); another app may not take the address
  // while it is online, whatever the instance.
  EXPECT_TRUE(registry_.Register(old_session, Reg("demo", "h:1")).ok());
  auto other_app = registry_.Register(new_session, Reg("other", "h:1", kInstanceY));
  EXPECT_EQ(other_app.status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(other_app.status().message(),
            "register.address: h:1 is online for another app (demo); an address serves one app "
            "at a time");
  EXPECT_FALSE(store_.GetRow({"other", "h:1"}).has_value());
}

TEST_F(RegistryTest, AnAddressOnlineForAnotherAppIsRefusedThroughTheStoreToo) {
  // Held through another replica (only the store knows): refused all the same.
  v1::Executor held;
  held.set_app("demo");
  held.set_address("h:1");
  ASSERT_TRUE(store_.Register(held, "r2", "s-r2", absl::Seconds(10), "x").ok());
  FakeSink sink;
  const int64_t session = registry_.OpenSession(&sink);
  auto refused = registry_.Register(session, Reg("other", "h:1", kInstanceY));
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kAlreadyExists) << refused.status();
  EXPECT_EQ(refused.status().message(),
            "register.address: h:1 is online for another app (demo); an address serves one app "
            "at a time");
}

TEST_F(RegistryTest, AnAppMustExistBeforeItsExecutorsRegister) {
  FakeSink sink;
  const int64_t session = registry_.OpenSession(&sink);
  auto refused = registry_.Register(session, Reg("nobody-made-me", "h:1"));
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition) << refused.status();
  EXPECT_EQ(refused.status().message(),
            "register.app: app nobody-made-me does not exist; an admin creates it "
            "(AppAdminService/CreateApp)");
  EXPECT_FALSE(store_.GetRow({"nobody-made-me", "h:1"}).has_value());
}

TEST_F(RegistryTest, RegistrationsPerTokenAndPerPeerAreCapped) {
  RegistryOptions o = Options("r1");
  o.max_registrations_per_token = 2;
  o.max_registrations_per_peer = 3;
  Registry capped(o, store_, clock_, metrics_);
  std::vector<std::unique_ptr<FakeSink>> sinks;
  auto reg = [&](const std::string& address, const std::string& token, const std::string& peer) {
    sinks.push_back(std::make_unique<FakeSink>());
    const int64_t s = capped.OpenSession(sinks.back().get());
    return capped.Register(s, Reg("demo", address), nullptr, RegistrationOrigin{token, peer});
  };
  EXPECT_TRUE(reg("h:1", "t1", "10.0.0.1").ok());
  EXPECT_TRUE(reg("h:2", "t1", "10.0.0.1").ok());
  auto third = reg("h:3", "t1", "10.0.0.1");
  EXPECT_EQ(third.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(third.status().message().find("executor token already holds 2 registrations"),
            std::string::npos)
      << third.status();
  EXPECT_TRUE(reg("h:3", "t2", "10.0.0.1").ok());
  auto fourth = reg("h:4", "t3", "10.0.0.1");
  EXPECT_EQ(fourth.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(fourth.status().message().find("peer already holds 3 registrations"), std::string::npos)
      << fourth.status();
  EXPECT_FALSE(store_.GetRow({"demo", "h:4"}).has_value());
  // Another peer is not counted against this one.
  EXPECT_TRUE(reg("h:4", "t3", "10.0.0.2").ok());
  capped.Shutdown();
}

TEST_F(RegistryTest, SameInstanceReconnectingOnTheSameReplicaSupersedesItsHalfOpenStream) {
  FakeSink old_sink, new_sink;
  const int64_t old_session = registry_.OpenSession(&old_sink);
  ASSERT_TRUE(registry_.Register(old_session, Reg("demo", "h:1")).ok());
  const int64_t new_session = registry_.OpenSession(&new_sink);
  ASSERT_TRUE(registry_.Register(new_session, Reg("demo", "h:1")).ok());
  ASSERT_EQ(old_sink.closes.size(), 1u);
  EXPECT_EQ(old_sink.closes[0].code(), absl::StatusCode::kAborted);
  EXPECT_TRUE(new_sink.closes.empty());
  // The old stream's end leaves the new session's row alone.
  registry_.CloseSession(old_session);
  EXPECT_TRUE(Online("demo", "h:1"));
  clock_.Advance(absl::Seconds(1));
  ASSERT_TRUE(registry_.Beat(new_session, BeatMsg(1)).ok());
  registry_.Tick();
  EXPECT_TRUE(new_sink.closes.empty());
  EXPECT_TRUE(new_sink.instructions.empty());
  registry_.CloseSession(new_session);
  EXPECT_FALSE(Online("demo", "h:1"));
}

TEST_F(RegistryTest, AnotherInstanceCannotTakeOverThroughAnotherReplica) {
  Registry other(Options("r2"), store_, clock_, metrics_);
  FakeSink x_sink, y_sink, x2_sink;
  const int64_t x = registry_.OpenSession(&x_sink);
  ASSERT_TRUE(registry_.Register(x, Reg("demo", "h:1", kInstanceX)).ok());
  // Same app token, other process, other replica: refused, the row untouched.
  const int64_t y = other.OpenSession(&y_sink);
  auto refused = other.Register(y, Reg("demo", "h:1", kInstanceY));
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_NE(refused.status().message().find(
                "register.address: executor demo/h:1 is online with another instance"),
            std::string::npos)
      << refused.status();
  EXPECT_EQ(metrics_.registrations_rejected.Value(), 1);
  auto row = store_.GetRow({"demo", "h:1"});
  ASSERT_TRUE(row.has_value());
  EXPECT_TRUE(row->online);
  EXPECT_EQ(row->replica_id, "r1");
  EXPECT_EQ(row->instance_id, kInstanceX);
  // The refused stream may try again; r1's session is still the owner.
  clock_.Advance(absl::Seconds(1));
  ASSERT_TRUE(registry_.Beat(x, BeatMsg(1)).ok());
  registry_.Tick();
  other.Tick();
  EXPECT_TRUE(x_sink.closes.empty());

  // X itself reconnecting through r2 is no takeover.
  const int64_t x2 = other.OpenSession(&x2_sink);
  ASSERT_TRUE(other.Register(x2, Reg("demo", "h:1", kInstanceX)).ok());
  EXPECT_EQ(store_.GetRow({"demo", "h:1"})->replica_id, "r2");
  clock_.Advance(absl::Seconds(1));
  registry_.Tick();  // r1 finds its session superseded.
  ASSERT_EQ(x_sink.closes.size(), 1u);
  EXPECT_EQ(x_sink.closes[0].code(), absl::StatusCode::kAborted);
  registry_.CloseSession(x);
  EXPECT_TRUE(Online("demo", "h:1"));
  EXPECT_FALSE(other.Register(y, Reg("demo", "h:1", kInstanceY)).ok());

  // X's stream ends: the address is free for Y, through either replica.
  other.CloseSession(x2);
  EXPECT_FALSE(Online("demo", "h:1"));
  FakeSink y2_sink;
  const int64_t y2 = registry_.OpenSession(&y2_sink);
  ASSERT_TRUE(registry_.Register(y2, Reg("demo", "h:1", kInstanceY)).ok());
  EXPECT_EQ(store_.GetRow({"demo", "h:1"})->instance_id, kInstanceY);
}

TEST_F(RegistryTest, AnotherInstanceMayRegisterOnceADeadReplicasLeaseRanOut) {
  Registry other(Options("r2"), store_, clock_, other_metrics_);
  FakeSink x_sink, y_sink;
  const int64_t x = registry_.OpenSession(&x_sink);
  ASSERT_TRUE(registry_.Register(x, Reg("demo", "h:1", kInstanceX)).ok());
  // r1 dies with X's row online: nobody renews it.
  const int64_t y = other.OpenSession(&y_sink);
  clock_.Advance(absl::Seconds(10));
  EXPECT_EQ(other.Register(y, Reg("demo", "h:1", kInstanceY)).status().code(),
            absl::StatusCode::kAlreadyExists);
  clock_.Advance(absl::Milliseconds(1));  // The lease has run out, not yet expired by anyone.
  ASSERT_TRUE(Online("demo", "h:1"));
  ASSERT_TRUE(other.Register(y, Reg("demo", "h:1", kInstanceY)).ok());
  auto row = store_.GetRow({"demo", "h:1"});
  EXPECT_EQ(row->replica_id, "r2");
  EXPECT_EQ(row->instance_id, kInstanceY);
}

TEST_F(RegistryTest, RestartedExecutorRegistersAtOnceAfterItsStreamClosed) {
  FakeSink old_sink, new_sink;
  const int64_t old_session = registry_.OpenSession(&old_sink);
  ASSERT_TRUE(registry_.Register(old_session, Reg("demo", "h:1")).ok());
  registry_.CloseSession(old_session);  // The process died: its stream ended.
  const int64_t new_session = registry_.OpenSession(&new_sink);
  EXPECT_TRUE(registry_.Register(new_session, Reg("demo", "h:1", kInstanceY)).ok());
  EXPECT_TRUE(Online("demo", "h:1"));
}

TEST_F(RegistryTest, SilentOldStreamFreesTheAddressAtItsBeatDeadline) {
  FakeSink old_sink, new_sink;
  const int64_t old_session = registry_.OpenSession(&old_sink);
  ASSERT_TRUE(registry_.Register(old_session, Reg("demo", "h:1")).ok());
  // A restarted process while the old one's stream is half-open.
  const int64_t new_session = registry_.OpenSession(&new_sink);
  ASSERT_FALSE(registry_.Register(new_session, Reg("demo", "h:1", kInstanceY)).ok());
  clock_.Advance(absl::Seconds(4));
  registry_.Tick();
  ASSERT_EQ(old_sink.closes.size(), 1u);
  EXPECT_EQ(old_sink.closes[0].code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_TRUE(registry_.Register(new_session, Reg("demo", "h:1", kInstanceY)).ok());
  registry_.CloseSession(old_session);
  EXPECT_TRUE(Online("demo", "h:1"));
}

TEST_F(RegistryTest, UnregisteredStreamIsClosedAfterTheRegisterDeadline) {
  FakeSink idle, registered;
  const int64_t s = registry_.OpenSession(&idle);
  const int64_t r = registry_.OpenSession(&registered);
  clock_.Advance(absl::Seconds(4));
  registry_.Tick();
  EXPECT_TRUE(idle.closes.empty());
  ASSERT_TRUE(registry_.Register(r, Reg("demo", "h:1")).ok());
  registry_.Beat(r, BeatMsg(1)).IgnoreError();
  clock_.Advance(absl::Milliseconds(1500));
  registry_.Tick();
  ASSERT_EQ(idle.closes.size(), 1u);
  EXPECT_EQ(idle.closes[0].code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_NE(idle.closes[0].message().find("no valid register within 5s"), std::string::npos);
  EXPECT_TRUE(registered.closes.empty());
  registry_.Tick();
  EXPECT_EQ(idle.closes.size(), 1u);  // Told once.
  registry_.CloseSession(s);
  EXPECT_EQ(registry_.open_sessions(), 1);
}

class FakeCredential : public SessionCredential {
 public:
  absl::Status Check() override {
    ++checks;
    return status;
  }
  absl::Status status;
  int checks = 0;
};

TEST_F(RegistryTest, RevokedCredentialClosesItsStreamWithinTheRecheckInterval) {
  FakeSink sink, other_sink;
  auto credential = std::make_shared<FakeCredential>();
  auto flaky = std::make_shared<FakeCredential>();
  const int64_t s = registry_.OpenSession(&sink);
  const int64_t o = registry_.OpenSession(&other_sink);
  ASSERT_TRUE(registry_.Register(s, Reg("demo", "h:1"), credential).ok());
  ASSERT_TRUE(registry_.Register(o, Reg("demo", "h:2"), flaky).ok());
  clock_.Advance(absl::Milliseconds(2100));
  registry_.Beat(s, BeatMsg(1)).IgnoreError();
  registry_.Beat(o, BeatMsg(1)).IgnoreError();
  registry_.Tick();
  EXPECT_EQ(credential->checks, 1);
  EXPECT_TRUE(sink.closes.empty());
  credential->status = absl::UnauthenticatedError("token revoked");
  flaky->status = absl::UnavailableError("database down");  // Not a reason to drop executors.
  clock_.Advance(absl::Milliseconds(2100));
  registry_.Beat(s, BeatMsg(2)).IgnoreError();
  registry_.Beat(o, BeatMsg(2)).IgnoreError();
  registry_.Tick();
  ASSERT_EQ(sink.closes.size(), 1u);
  EXPECT_EQ(sink.closes[0].code(), absl::StatusCode::kUnauthenticated);
  EXPECT_TRUE(other_sink.closes.empty());
  registry_.CloseSession(s);  // What the stream's end does.
  EXPECT_FALSE(Online("demo", "h:1"));
  EXPECT_TRUE(Online("demo", "h:2"));
}

TEST_F(RegistryTest, DeadReplicaLeasesExpireOnAnotherReplica) {
  Registry other(Options("r2"), store_, clock_, metrics_);
  FakeSink sink;
  const int64_t s = registry_.OpenSession(&sink);
  ASSERT_TRUE(registry_.Register(s, Reg("demo", "h:1")).ok());
  // r1 dies: it neither ticks nor renews. r2 keeps expiring.
  for (int i = 0; i < 10; ++i) {
    clock_.Advance(absl::Seconds(1));
    other.Tick();
    EXPECT_TRUE(Online("demo", "h:1")) << "after " << i + 1 << "s";
  }
  clock_.Advance(absl::Seconds(1));
  other.Tick();
  EXPECT_FALSE(Online("demo", "h:1"));
  EXPECT_EQ(metrics_.offline_lease_expired.Value(), 1);
}

// After a database outage longer than a lease every lease in the table looks expired; the
// first replica back must not expire the others' executors before they had a lease to renew.
TEST_F(RegistryTest, NoLeaseExpiryForALeaseAfterADatabaseOutage) {
  Registry other(Options("r2"), store_, clock_, metrics_);
  FakeSink sink;
  const int64_t s = registry_.OpenSession(&sink);
  ASSERT_TRUE(registry_.Register(s, Reg("demo", "h:1")).ok());
  store_.SetFailing(true);
  int seq = 0;
  for (int i = 0; i < 15; ++i) {  // Longer than the 10 s lease; the executor keeps beating.
    clock_.Advance(absl::Seconds(1));
    ASSERT_TRUE(registry_.Beat(s, BeatMsg(++seq)).ok());
    other.Tick();
    registry_.Tick();
  }
  store_.SetFailing(false);
  // Database back: r2 ticks first and must leave r1's executor alone; r1 renews.
  clock_.Advance(absl::Seconds(1));
  other.Tick();
  EXPECT_TRUE(Online("demo", "h:1"));
  registry_.Tick();
  for (int i = 0; i < 12; ++i) {
    clock_.Advance(absl::Seconds(1));
    ASSERT_TRUE(registry_.Beat(s, BeatMsg(++seq)).ok());
    registry_.Tick();
    other.Tick();
  }
  EXPECT_TRUE(Online("demo", "h:1"));
  EXPECT_EQ(metrics_.offline_lease_expired.Value(), 0);
}

TEST_F(RegistryTest, LostRowAsksExecutorToRegisterAgain) {
  FakeSink sink;
  const int64_t s = registry_.OpenSession(&sink);
  ASSERT_TRUE(registry_.Register(s, Reg("demo", "h:1")).ok());
  store_.DropAllRows();  // E.g. a failover to a replica that missed the write.
  clock_.Advance(absl::Seconds(1));
  ASSERT_TRUE(registry_.Beat(s, BeatMsg(1)).ok());
  registry_.Tick();
  ASSERT_EQ(sink.instructions.size(), 1u);
  EXPECT_EQ(sink.instructions[0], v1::INSTRUCTION_KIND_REREGISTER);
  EXPECT_TRUE(sink.closes.empty());
  // Beats are still acknowledged until it registers again.
  EXPECT_TRUE(registry_.Beat(s, BeatMsg(2)).ok());
  ASSERT_TRUE(registry_.Register(s, Reg("demo", "h:1")).ok());
  EXPECT_TRUE(Online("demo", "h:1"));
}

TEST_F(RegistryTest, ReRegisteringUnderAnotherAddressTakesTheOldOneOffline) {
  FakeSink sink;
  const int64_t s = registry_.OpenSession(&sink);
  ASSERT_TRUE(registry_.Register(s, Reg("demo", "h:1")).ok());
  ASSERT_TRUE(registry_.Register(s, Reg("demo", "h:2")).ok());
  EXPECT_FALSE(Online("demo", "h:1"));
  EXPECT_TRUE(Online("demo", "h:2"));
}

TEST_F(RegistryTest, StoreFailureOnRegisterIsUnavailableAndRetryable) {
  FakeSink sink;
  const int64_t s = registry_.OpenSession(&sink);
  store_.SetFailing(true);
  EXPECT_EQ(registry_.Register(s, Reg("demo", "h:1")).status().code(),
            absl::StatusCode::kUnavailable);
  store_.SetFailing(false);
  EXPECT_TRUE(registry_.Register(s, Reg("demo", "h:1")).ok());
}

TEST_F(RegistryTest, DrainInstructsEverySessionAndRefusesNewRegistrations) {
  FakeSink a, b;
  const int64_t sa = registry_.OpenSession(&a);
  registry_.OpenSession(&b);
  ASSERT_TRUE(registry_.Register(sa, Reg("demo", "h:1")).ok());
  registry_.Drain("bye");
  ASSERT_EQ(a.instructions.size(), 1u);
  EXPECT_EQ(a.instructions[0], v1::INSTRUCTION_KIND_DRAIN);
  ASSERT_EQ(b.instructions.size(), 1u);
  FakeSink c;
  const int64_t sc = registry_.OpenSession(&c);
  EXPECT_EQ(registry_.Register(sc, Reg("demo", "h:3")).status().code(),
            absl::StatusCode::kUnavailable);
  // Still online until it leaves or TakeAllOffline runs.
  EXPECT_TRUE(Online("demo", "h:1"));
  registry_.TakeAllOffline();
  EXPECT_FALSE(Online("demo", "h:1"));
  ASSERT_EQ(a.closes.size(), 1u);
  EXPECT_EQ(a.closes[0].code(), absl::StatusCode::kUnavailable);
}

TEST_F(RegistryTest, SessionsEndingWhileDrainingStayOnlineUntilTakeAllOffline) {
  Registry other(Options("r2"), store_, clock_, other_metrics_);
  FakeSink moved_sink, gone_sink, new_sink;
  const int64_t moved = registry_.OpenSession(&moved_sink);
  const int64_t gone = registry_.OpenSession(&gone_sink);
  ASSERT_TRUE(registry_.Register(moved, Reg("demo", "h:1")).ok());
  ASSERT_TRUE(registry_.Register(gone, Reg("demo", "h:2")).ok());
  registry_.Drain("bye");
  // h:1 moves to r2 and closes its old stream; h:2 just disconnects.
  const int64_t fresh = other.OpenSession(&new_sink);
  ASSERT_TRUE(other.Register(fresh, Reg("demo", "h:1")).ok());
  registry_.CloseSession(moved);
  registry_.CloseSession(gone);
  EXPECT_TRUE(Online("demo", "h:1"));
  EXPECT_TRUE(Online("demo", "h:2"));  // No REMOVE flash while executors move.
  registry_.TakeAllOffline();
  EXPECT_TRUE(Online("demo", "h:1"));
  EXPECT_EQ(store_.GetRow({"demo", "h:1"})->replica_id, "r2");
  EXPECT_FALSE(Online("demo", "h:2"));
}

TEST_F(RegistryTest, StartTicksEveryTickIntervalOnTheClock) {
  FakeSink sink;
  const int64_t s = registry_.OpenSession(&sink);
  ASSERT_TRUE(registry_.Register(s, Reg("demo", "h:1")).ok());
  registry_.Start();
  clock_.AwaitWaiters(1);  // The loop waits for its first tick.
  EXPECT_TRUE(Online("demo", "h:1"));
  // Past the beat deadline: the loop wakes, ticks (taking h:1 offline) and waits again.
  clock_.Advance(absl::Seconds(3) + absl::Milliseconds(50));
  clock_.AwaitWaiters(1);
  EXPECT_EQ(metrics_.offline_deadline.Value(), 1);
  EXPECT_FALSE(Online("demo", "h:1"));
  registry_.Shutdown();
  ASSERT_EQ(sink.closes.size(), 1u);
  EXPECT_EQ(sink.closes[0].code(), absl::StatusCode::kDeadlineExceeded);
  registry_.CloseSession(s);
}

}  // namespace
}  // namespace jobwheel::registry
