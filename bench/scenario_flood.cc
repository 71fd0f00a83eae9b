// flood: --flood_clients unauthenticated clients (half calling GetLeader without a token,
// half calling ListJobs with a fresh junk `jw_…` token each time, each on its own
// connection) flood the leading scheduler while a steady load of --flood_jobs every-second
// jobs runs for --flood_duration and an admin calls ListJobs back to back. Emits the admin's
// ListJobs latency and the fires' lateness under the flood. Not in attach mode (it would
// flood someone else's scheduler).
#include <atomic>
#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "bench/load.h"
#include "bench/scenario.h"
#include "common/time/clock.h"
#include "grpcpp/grpcpp.h"
#include "jobwheel/v1/job_admin.grpc.pb.h"
#include "jobwheel/v1/leadership.grpc.pb.h"
#include "tests/security/dos_flood_clients.h"

namespace jobwheel::bench {
namespace {

std::string Addr(int port) { return absl::StrCat("127.0.0.1:", port); }

std::chrono::system_clock::time_point In(absl::Duration d) {
  return std::chrono::system_clock::now() + absl::ToChronoMilliseconds(d);
}

// The scheduler replica that says it leads; -1 if none does.
int Leader(Stack& stack) {
  for (int i = 0; i < 2; ++i) {
    auto stub = v1::LeadershipService::NewStub(
        grpc::CreateChannel(Addr(stack.scheduler(i).port), grpc::InsecureChannelCredentials()));
    grpc::ClientContext ctx;
    ctx.set_deadline(In(absl::Seconds(2)));
    v1::GetLeaderResponse r;
    if (stub->GetLeader(&ctx, {}, &r).ok() && r.is_leader()) return i;
  }
  return -1;
}

}  // namespace

absl::Status RunFlood(Context& ctx) {
  if (ctx.stack.attached()) {
    return absl::FailedPreconditionError("flood: not run against an attached stack");
  }
  std::ifstream in(ctx.options.token_dir + "/admin");
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string admin_token(absl::StripAsciiWhitespace(ss.str()));
  if (admin_token.empty()) return absl::FailedPreconditionError("flood: no admin token");
  const int leader = Leader(ctx.stack);
  if (leader < 0) return absl::UnavailableError("flood: no scheduler says it leads");
  const std::string target = Addr(ctx.stack.scheduler(leader).port);

  const int clients = ctx.options.flood_clients;
  security_testing::FloodClients flood(target, clients / 2, clients - clients / 2);
  std::atomic<bool> stop{false};
  std::vector<double> admin_ms;
  int64_t admin_failed = 0;
  std::thread admin([&] {
    auto jobs = v1::JobAdminService::NewStub(
        grpc::CreateChannel(target, grpc::InsecureChannelCredentials()));
    while (!stop) {
      grpc::ClientContext c;
      c.set_deadline(In(absl::Seconds(10)));
      c.AddMetadata("authorization", "Bearer " + admin_token);
      v1::ListJobsRequest req;
      req.set_app(ctx.stack.app());
      req.set_page_size(20);
      v1::ListJobsResponse resp;
      const absl::Time start = RealClock::Get().Now();
      const grpc::Status s = jobs->ListJobs(&c, req, &resp);
      if (s.ok()) {
        admin_ms.push_back(absl::ToDoubleMilliseconds(RealClock::Get().Now() - start));
      } else {
        ++admin_failed;
      }
    }
  });
  flood.Start();

  LoadSpec spec;
  spec.tag = "flood";
  spec.jobs = ctx.options.flood_jobs;
  spec.warmup = ctx.options.warmup;
  spec.window = ctx.options.flood_duration;
  Report load;  // The load's own figures; the flood line carries the ones that matter here.
  absl::StatusOr<LoadOutcome> o = RunLoad(ctx, spec, load);
  stop = true;
  admin.join();
  flood.Stop();
  if (!o.ok()) return o.status();

  using Kind = security_testing::FloodClients::Kind;
  const auto leader_counts = flood.counts(Kind::kGetLeader);
  const auto junk_counts = flood.counts(Kind::kJunkToken);
  const Percentiles admin_p = ComputePercentiles(admin_ms);
  Report r;
  r.Add("clients", static_cast<int64_t>(clients));
  r.Add("admin_p99_ms", admin_p.p99, 1);
  r.Add("fire_p99_ms", o->lateness_ms.p99, 1);
  r.Add("admin_p50_ms", admin_p.p50, 1);
  r.Add("admin_max_ms", admin_p.max, 1);
  r.Add("admin_calls", static_cast<int64_t>(admin_p.n));
  r.Add("admin_failed", admin_failed);
  r.Add("fire_p50_ms", o->lateness_ms.p50, 1);
  r.Add("jobs", static_cast<int64_t>(spec.jobs));
  r.Add("achieved_per_s", o->achieved_per_s, 1);
  r.Add("offered_per_s", o->offered_per_s, 1);
  r.Add("get_leader_ok", leader_counts.ok);
  r.Add("get_leader_other", leader_counts.other);
  // Refused as UNAUTHENTICATED, or otherwise (e.g. rate-limited per peer).
  r.Add("junk_unauthenticated", junk_counts.unauthenticated);
  r.Add("junk_accepted", junk_counts.ok);
  r.Add("junk_other", junk_counts.other);
  ctx.results.Emit("flood", r);
  if (junk_counts.ok > 0) {
    return absl::InternalError("flood: a junk token was accepted");
  }
  return absl::OkStatus();
}

}  // namespace jobwheel::bench
