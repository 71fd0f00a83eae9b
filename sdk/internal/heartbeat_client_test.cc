#include "sdk/internal/heartbeat_client.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/grpc/grpc_server.h"
#include "common/testing/process.h"
#include "common/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"
#include "sdk/internal/executor_metrics.h"
#include "sdk/testing/fake_registry.h"

namespace jobwheel::sdk {
namespace {

using ::jobwheel::sdk::testing::FakeRegistry;
using ::jobwheel::testing::Eventually;
using ::testing::ElementsAre;
using ::testing::MatchesRegex;

constexpr absl::Duration kWait = absl::Seconds(15);
constexpr char kToken[] = "exec-token";

class HeartbeatClientTest : public ::testing::Test {
 protected:
  HeartbeatClientTest() : metrics_(registry_) {}

  std::unique_ptr<HeartbeatClient> Make(std::vector<std::string> targets,
                                        const std::string& token = kToken,
                                        Clock& clock = RealClock::Get(),
                                        const std::string& instance_id = "") {
    HeartbeatOptions options;
    options.targets = std::move(targets);
    options.executor_token = token;
    options.initial_backoff = absl::Milliseconds(20);
    options.max_backoff = absl::Milliseconds(100);
    options.goodbye_timeout = absl::Seconds(3);
    options.registration.set_app("demo");
    options.registration.set_address("127.0.0.1:7200");
    options.registration.add_handlers("echo");
    options.registration.set_sdk_version("0.1.0");
    options.registration.set_allow_scripts(true);
    options.registration.set_instance_id(instance_id);
    return std::make_unique<HeartbeatClient>(
        options,
        [](const std::string& target)
            -> std::unique_ptr<jobwheel::v1::RegistryService::StubInterface> {
          auto channel = MakeChannel(target);
          if (!channel.ok()) return nullptr;
          return jobwheel::v1::RegistryService::NewStub(*channel);
        },
        [](jobwheel::v1::ExecutorBeat* beat) {
          beat->add_running_job_ids(3);
          beat->set_running(1);
          beat->set_queued(2);
        },
        metrics_, clock);
  }

  prometheus::Registry registry_;
  ExecutorMetrics metrics_;
};

TEST_F(HeartbeatClientTest, RegistersBeatsAndSaysGoodbye) {
  FakeRegistry fake(kToken, absl::Milliseconds(30));
  auto address = fake.Start();
  ASSERT_TRUE(address.ok());
  auto client = Make({*address});
  client->Start();
  ASSERT_TRUE(Eventually([&] { return fake.beats().size() >= 3; }, kWait));
  ASSERT_EQ(fake.registrations().size(), 1u);
  const auto reg = fake.registrations()[0];
  EXPECT_EQ(reg.app(), "demo");
  EXPECT_EQ(reg.address(), "127.0.0.1:7200");
  EXPECT_THAT(reg.handlers(), ElementsAre("echo"));
  EXPECT_TRUE(reg.allow_scripts());
  const auto beats = fake.beats();
  EXPECT_THAT(beats[0].running_job_ids(), ElementsAre(3));
  EXPECT_EQ(beats[0].running(), 1);
  EXPECT_EQ(beats[0].queued(), 2);
  EXPECT_LT(beats[0].seq(), beats[1].seq());
  EXPECT_TRUE(client->registered());
  EXPECT_EQ(metrics_.heartbeat_connected.Value(), 1);

  client->Shutdown("bye now");
  EXPECT_THAT(fake.goodbyes(), ElementsAre("bye now"));
  EXPECT_EQ(fake.open_streams(), 0);
  EXPECT_FALSE(client->registered());
  EXPECT_EQ(metrics_.heartbeat_connected.Value(), 0);
}

TEST_F(HeartbeatClientTest, MovesToTheNextAddressOnFailure) {
  FakeRegistry refusing(kToken);
  refusing.SetRefuse(true);
  auto refusing_address = refusing.Start();
  ASSERT_TRUE(refusing_address.ok());
  FakeRegistry good(kToken);
  auto good_address = good.Start();
  ASSERT_TRUE(good_address.ok());
  const std::string dead = absl::StrCat("127.0.0.1:", jobwheel::testing::PickFreePort());
  auto client = Make({dead, *refusing_address, *good_address});
  client->Start();
  ASSERT_TRUE(Eventually([&] { return client->registered(); }, kWait));
  EXPECT_EQ(client->current_target(), *good_address);
  EXPECT_GE(refusing.streams_total(), 1);
  client->Shutdown("done");
}

TEST_F(HeartbeatClientTest, ReregistersWhenAsked) {
  FakeRegistry fake(kToken, absl::Milliseconds(30));
  auto address = fake.Start();
  ASSERT_TRUE(address.ok());
  auto client = Make({*address});
  client->Start();
  ASSERT_TRUE(Eventually([&] { return fake.registrations().size() == 1; }, kWait));
  fake.SendInstruction(jobwheel::v1::INSTRUCTION_KIND_REREGISTER, "lost state");
  ASSERT_TRUE(Eventually([&] { return fake.registrations().size() == 2; }, kWait));
  EXPECT_EQ(fake.streams_total(), 1);  // Same stream.
  EXPECT_EQ(client->registrations(), 2);
  client->Shutdown("done");
}

TEST_F(HeartbeatClientTest, DrainMovesToAnotherReplica) {
  FakeRegistry a(kToken, absl::Milliseconds(30));
  FakeRegistry b(kToken, absl::Milliseconds(30));
  auto address_a = a.Start();
  auto address_b = b.Start();
  ASSERT_TRUE(address_a.ok() && address_b.ok());
  auto client = Make({*address_a, *address_b});
  client->Start();
  ASSERT_TRUE(Eventually([&] { return a.registrations().size() == 1; }, kWait));
  a.SendInstruction(jobwheel::v1::INSTRUCTION_KIND_DRAIN, "replica stopping");
  ASSERT_TRUE(Eventually([&] { return b.registrations().size() == 1; }, kWait));
  ASSERT_TRUE(Eventually([&] { return a.open_streams() == 0; }, kWait));
  EXPECT_TRUE(a.goodbyes().empty());  // Draining is not leaving.
  client->Shutdown("done");
  EXPECT_EQ(b.goodbyes().size(), 1u);
}

TEST_F(HeartbeatClientTest, ReconnectsWhenTheRegistryComesBack) {
  auto first = std::make_unique<FakeRegistry>(kToken, absl::Milliseconds(30));
  auto address = first->Start();
  ASSERT_TRUE(address.ok());
  auto client = Make({*address});
  client->Start();
  ASSERT_TRUE(Eventually([&] { return client->registered(); }, kWait));
  first.reset();  // Registry restarts.
  ASSERT_TRUE(Eventually([&] { return !client->registered(); }, kWait));
  FakeRegistry second(kToken, absl::Milliseconds(30));
  ASSERT_TRUE(second.Start(*address).ok());
  ASSERT_TRUE(Eventually([&] { return second.registrations().size() == 1; }, kWait));
  EXPECT_TRUE(Eventually([&] { return client->registered(); }, kWait));
  client->Shutdown("done");
}

TEST_F(HeartbeatClientTest, WrongTokenNeverRegistersAndShutdownIsPrompt) {
  FakeRegistry fake(kToken);
  auto address = fake.Start();
  ASSERT_TRUE(address.ok());
  auto client = Make({*address}, "wrong");
  client->Start();
  ASSERT_TRUE(Eventually([&] { return fake.unauthenticated() >= 2; }, kWait));
  EXPECT_TRUE(fake.registrations().empty());
  const absl::Time start = RealClock::Get().Now();
  client->Shutdown("done");
  EXPECT_LT(RealClock::Get().Now() - start, absl::Seconds(3));
}

TEST_F(HeartbeatClientTest, EveryRegistrationOfTheProcessCarriesTheSameInstanceId) {
  FakeRegistry a(kToken, absl::Milliseconds(30));
  FakeRegistry b(kToken, absl::Milliseconds(30));
  auto address_a = a.Start();
  auto address_b = b.Start();
  ASSERT_TRUE(address_a.ok() && address_b.ok());
  auto client = Make({*address_a, *address_b});
  EXPECT_THAT(client->instance_id(), MatchesRegex("[0-9a-f]{32}"));
  client->Start();
  ASSERT_TRUE(Eventually([&] { return a.registrations().size() == 1; }, kWait));
  a.SendInstruction(jobwheel::v1::INSTRUCTION_KIND_REREGISTER, "lost state");
  ASSERT_TRUE(Eventually([&] { return a.registrations().size() == 2; }, kWait));
  a.SendInstruction(jobwheel::v1::INSTRUCTION_KIND_DRAIN, "replica stopping");
  ASSERT_TRUE(Eventually([&] { return b.registrations().size() == 1; }, kWait));
  client->Shutdown("done");
  // The same id on the same stream, and on a new stream to another replica.
  EXPECT_EQ(a.registrations()[0].instance_id(), client->instance_id());
  EXPECT_EQ(a.registrations()[1].instance_id(), client->instance_id());
  EXPECT_EQ(b.registrations()[0].instance_id(), client->instance_id());

  // Another process (client) picks another id; one given in the options is kept.
  EXPECT_NE(Make({*address_a})->instance_id(), client->instance_id());
  EXPECT_EQ(
      Make({*address_a}, kToken, RealClock::Get(), "given-instance-0123456789")->instance_id(),
      "given-instance-0123456789");
}

TEST_F(HeartbeatClientTest, BeatsFollowTheInjectedClock) {
  SimulatedClock clock;
  FakeRegistry fake(kToken, absl::Seconds(10));
  auto address = fake.Start();
  ASSERT_TRUE(address.ok());
  auto client = Make({*address}, kToken, clock);
  client->Start();
  ASSERT_TRUE(Eventually([&] { return client->registered(); }, kWait));
  clock.AwaitWaiters(1);  // Waiting for its first beat, 10 s away on the clock.
  EXPECT_TRUE(fake.beats().empty());
  clock.Advance(absl::Seconds(9));
  clock.AwaitWaiters(1);
  EXPECT_TRUE(fake.beats().empty());
  clock.Advance(absl::Seconds(1));
  ASSERT_TRUE(Eventually([&] { return fake.beats().size() == 1; }, kWait));
  clock.AwaitWaiters(1);
  clock.Advance(absl::Seconds(10));
  ASSERT_TRUE(Eventually([&] { return fake.beats().size() == 2; }, kWait));
  // Goodbye needs no time to pass: the registry closes the stream.
  client->Shutdown("bye");
  EXPECT_THAT(fake.goodbyes(), ElementsAre("bye"));
  EXPECT_EQ(fake.beats().size(), 2u);
}

}  // namespace
}  // namespace jobwheel::sdk
