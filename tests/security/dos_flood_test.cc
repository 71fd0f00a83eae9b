// Denial of service against the scheduler with real processes: while 200 unauthenticated
// clients (100 flooding LeadershipService/GetLeader, 100 sending junk `jw_…` tokens to
// JobAdminService) hammer it, each on its own connection, an admin's ListJobs keeps
// answering: every call succeeds. No timing target here (the bench's `flood` line has the
// figures); the latencies are printed for information.
#include <algorithm>
#include <cstdio>
#include <vector>

#include "absl/time/clock.h"
#include "common/testing/stack.h"
#include "common/time/clock.h"
#include "gtest/gtest.h"
#include "jobwheel/v1/job_admin.grpc.pb.h"
#include "jobwheel/v1/leadership.grpc.pb.h"
#include "tests/security/dos_flood_clients.h"

namespace jobwheel::security_testing {

using testing::Ctx;
using testing::Stack;
namespace {

TEST(DosFloodTest, AnAdminKeepsBeingAnsweredWhileUnauthenticatedClientsFlood) {
  Stack stack(Stack::Options{});
  const absl::Status started = stack.StartServices();
  ASSERT_TRUE(started.ok()) << started << "\n" << stack.Logs();
  auto jobs = v1::JobAdminService::NewStub(stack.Channel(stack.scheduler()));
  // Something to list.
  for (int i = 0; i < 5; ++i) {
    v1::CreateJobRequest req;
    v1::Job& job = *req.mutable_job();
    job.set_app("demo");
    job.set_name("flood-" + std::to_string(i));
    job.set_handler("echo");
    job.mutable_schedule()->mutable_none();
    v1::CreateJobResponse resp;
    grpc::Status s = jobs->CreateJob(Ctx(stack.admin_token()).get(), req, &resp);
    ASSERT_TRUE(s.ok()) << s.error_message();
  }

  FloodClients flood(stack.scheduler(), /*get_leader=*/100, /*junk_token=*/100);
  flood.Start();
  // The flood is on once both kinds have been answered (a junk token is refused as
  // UNAUTHENTICATED, or otherwise once the server limits failed authentications per peer).
  const auto refused = [&flood] {
    const FloodClients::Counts c = flood.counts(FloodClients::Kind::kJunkToken);
    return c.unauthenticated + c.other;
  };
  ASSERT_TRUE(testing::Eventually(
      [&] { return flood.counts(FloodClients::Kind::kGetLeader).ok > 200 && refused() > 200; },
      absl::Seconds(60)));

  std::vector<double> latencies_ms;
  int failed = 0;
  const absl::Time until = RealClock::Get().Now() + absl::Seconds(5);
  while (latencies_ms.size() < 50 || RealClock::Get().Now() < until) {
    v1::ListJobsRequest req;
    req.set_page_size(10);
    v1::ListJobsResponse resp;
    const absl::Time start = RealClock::Get().Now();
    grpc::Status s = jobs->ListJobs(Ctx(stack.admin_token()).get(), req, &resp);
    latencies_ms.push_back(absl::ToDoubleMilliseconds(RealClock::Get().Now() - start));
    if (!s.ok() || resp.jobs_size() != 5) {
      ++failed;
      ADD_FAILURE() << "admin ListJobs during the flood: " << s.error_code() << " "
                    << s.error_message() << " (" << resp.jobs_size() << " jobs)";
      if (failed > 5) break;
    }
  }
  const FloodClients::Counts leader_before = flood.counts(FloodClients::Kind::kGetLeader);
  const int64_t refused_before = refused();
  flood.Stop();
  const FloodClients::Counts leader = flood.counts(FloodClients::Kind::kGetLeader);
  const FloodClients::Counts junk = flood.counts(FloodClients::Kind::kJunkToken);
  // The flood went on all along, and no junk token was ever let in.
  EXPECT_GT(leader.ok, leader_before.ok / 2);
  EXPECT_EQ(junk.ok, 0);
  EXPECT_GT(refused(), refused_before / 2);

  std::sort(latencies_ms.begin(), latencies_ms.end());
  const auto at = [&](double q) {
    return latencies_ms[std::min(latencies_ms.size() - 1,
                                 static_cast<size_t>(q * latencies_ms.size()))];
  };
  std::printf(
      "flood (test, not a benchmark): clients=%d admin_calls=%zu admin_p50_ms=%.1f "
      "admin_p99_ms=%.1f admin_max_ms=%.1f get_leader ok=%lld other=%lld junk_token "
      "unauthenticated=%lld other_refusals=%lld\n",
      flood.clients(), latencies_ms.size(), at(0.5), at(0.99), latencies_ms.back(),
      static_cast<long long>(leader.ok), static_cast<long long>(leader.other),
      static_cast<long long>(junk.unauthenticated), static_cast<long long>(junk.other));

  // And it still serves once the flood is over.
  auto leadership = v1::LeadershipService::NewStub(stack.Channel(stack.scheduler()));
  v1::GetLeaderResponse leader_resp;
  EXPECT_TRUE(leadership->GetLeader(Ctx("").get(), {}, &leader_resp).ok());
  if (HasFailure()) std::cerr << stack.Logs();
}

}  // namespace
}  // namespace jobwheel::security_testing
