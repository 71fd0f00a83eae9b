// libFuzzer target for request validation (job_validation.h, TokenAdmin::Validate and bearer
// token parsing). Every input is tried as:
//   - a binary jobwheel.v1.Job, a JSON Job, and a binary UpdateJobRequest (job + update mask);
//   - a binary CreateTokenRequest, an `authorization` header, a shard param and a page token;
//   - a child-job graph over jobs 1..8 (two bytes per edge) with a cycle check.
// Besides "never crash" (ASan/UBSan), it checks: every refusal is INVALID_ARGUMENT naming a
// field; NormalizeJob is idempotent and its output respects the documented limits; the cycle
// check agrees with a plain reachability search. Built and run by scripts/fuzz-validation.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "common/auth/in_memory_token_store.h"
#include "common/auth/token_authenticator.h"
#include "common/time/clock.h"
#include "google/protobuf/util/json_util.h"
#include "google/protobuf/util/message_differencer.h"
#include "jobwheel/v1/job_admin.pb.h"
#include "jobwheel/v1/token_admin.pb.h"
#include "jobwheel/v1/types.pb.h"
#include "services/scheduler/admin/job_validation.h"
#include "services/scheduler/admin/token_admin.h"

namespace {

using jobwheel::scheduler::admin::ApplyUpdateMask;
using jobwheel::scheduler::admin::CheckChildGraph;
using jobwheel::scheduler::admin::ChildGraph;
using jobwheel::scheduler::admin::NormalizeJob;

const absl::Time kCreated = absl::FromUnixSeconds(1700000000);

[[noreturn]] void Fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "invariant broken: %s: %s\n", what, detail.c_str());
  std::abort();
}

// A refusal must be INVALID_ARGUMENT with "<field>: <why>".
void CheckRefusal(const absl::Status& s, const char* what) {
  if (s.ok()) return;
  if (s.code() != absl::StatusCode::kInvalidArgument) Fail(what, s.ToString());
  if (!absl::StrContains(s.message(), ": ")) Fail(what, "message names no field: " + s.ToString());
}

void CheckNormalized(const jobwheel::v1::Job& job, const char* what) {
  absl::StatusOr<jobwheel::v1::Job> n = NormalizeJob(job, kCreated);
  CheckRefusal(n.status(), what);
  if (!n.ok()) return;
  using namespace jobwheel::scheduler::admin;  // NOLINT: the limits.
  if (n->param().size() > static_cast<size_t>(kMaxParamBytes) ||
      n->script_source().size() > static_cast<size_t>(kMaxScriptBytes) ||
      n->name().size() > static_cast<size_t>(kMaxNameLength) ||
      n->app().size() > static_cast<size_t>(kMaxAppLength) ||
      n->child_job_ids_size() > kMaxChildJobs || n->alarm_contacts_size() > kMaxAlarmContacts ||
      n->fail_retry_count() < 0 || n->fail_retry_count() > kMaxFailRetryCount) {
    Fail(what, "normalized job exceeds a limit: " + n->ShortDebugString());
  }
  if (!jobwheel::v1::GlueType_IsValid(n->glue_type()) ||
      n->glue_type() == jobwheel::v1::GLUE_TYPE_UNSPECIFIED ||
      !jobwheel::v1::RoutingStrategy_IsValid(n->routing_strategy()) ||
      !jobwheel::v1::BlockStrategy_IsValid(n->block_strategy()) ||
      !jobwheel::v1::MisfireStrategy_IsValid(n->misfire_strategy())) {
    Fail(what, "normalized job has an unknown enum: " + n->ShortDebugString());
  }
  absl::StatusOr<jobwheel::v1::Job> again = NormalizeJob(*n, kCreated);
  if (!again.ok())
    Fail(what, "normalized job refused on second pass: " + again.status().ToString());
  if (!google::protobuf::util::MessageDifferencer::Equals(*n, *again)) {
    Fail(what, "NormalizeJob is not idempotent: " + n->ShortDebugString() + " vs " +
                   again->ShortDebugString());
  }
}

// Whether `self` reaches itself through `edges` (adjacency over 1..8) plus its own children.
bool HasCycleThrough(int64_t self, const std::vector<int64_t>& own,
                     const std::vector<std::vector<int64_t>>& edges) {
  std::set<int64_t> seen;
  std::vector<int64_t> stack(own.begin(), own.end());
  while (!stack.empty()) {
    const int64_t n = stack.back();
    stack.pop_back();
    if (n == self) return true;
    if (!seen.insert(n).second) continue;
    for (int64_t c : edges[n]) stack.push_back(c);
  }
  return false;
}

void FuzzChildGraph(const uint8_t* data, size_t size) {
  if (size < 1) return;
  const int64_t self = 1 + data[0] % 8;
  std::vector<std::vector<int64_t>> edges(9);
  jobwheel::v1::Job job;
  for (size_t i = 1; i + 1 < size && i < 64; i += 2) {
    const int64_t from = 1 + data[i] % 8;
    const int64_t to = 1 + data[i + 1] % 8;
    if (from == self) {
      job.add_child_job_ids(to);
    } else {
      edges[from].push_back(to);
    }
  }
  ChildGraph graph;
  for (int64_t id = 1; id <= 8; ++id) {
    graph.existing.insert(id);
    if (id != self && !edges[id].empty()) graph.children[id] = edges[id];
  }
  const absl::Status s = CheckChildGraph(self, job, graph);
  CheckRefusal(s, "CheckChildGraph");
  const std::vector<int64_t> own(job.child_job_ids().begin(), job.child_job_ids().end());
  const bool cycle = HasCycleThrough(self, own, edges);
  if (cycle == s.ok()) {
    Fail("CheckChildGraph",
         std::string(cycle ? "missed a cycle" : "invented a cycle") + ": " + s.ToString());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view text(reinterpret_cast<const char*>(data), size);

  jobwheel::v1::Job job;
  if (job.ParseFromArray(data, static_cast<int>(size))) CheckNormalized(job, "binary Job");

  jobwheel::v1::Job json_job;
  if (google::protobuf::util::JsonStringToMessage(std::string(text), &json_job).ok()) {
    CheckNormalized(json_job, "JSON Job");
  }

  jobwheel::v1::UpdateJobRequest update;
  if (update.ParseFromArray(data, static_cast<int>(size))) {
    jobwheel::v1::Job current;
    current.set_id(7);
    current.set_app("demo");
    current.set_name("current");
    current.set_handler("echo");
    current.mutable_schedule()->mutable_none();
    absl::StatusOr<jobwheel::v1::Job> merged =
        ApplyUpdateMask(current, update.job(), update.update_mask());
    CheckRefusal(merged.status(), "ApplyUpdateMask");
    if (merged.ok()) CheckNormalized(*merged, "merged Job");
  }

  jobwheel::v1::CreateTokenRequest token_req;
  if (token_req.ParseFromArray(data, static_cast<int>(size))) {
    CheckRefusal(jobwheel::scheduler::admin::TokenAdmin::Validate(token_req, kCreated),
                 "CreateTokenRequest");
  }

  CheckRefusal(jobwheel::scheduler::admin::ParseShardParam(text).status(), "ParseShardParam");
  CheckRefusal(jobwheel::scheduler::admin::DecodePageToken(text).status(), "DecodePageToken");

  // Bearer parsing: never crashes, never authenticates junk.
  static jobwheel::FakeClock* clock = new jobwheel::FakeClock();
  static jobwheel::InMemoryTokenStore* store = new jobwheel::InMemoryTokenStore();
  static jobwheel::TokenAuthenticator* auth = [] {
    jobwheel::TokenAuthenticator::Options o;
    o.admin_token = "fuzz-admin-token-0123456789";
    return new jobwheel::TokenAuthenticator(o, store, *clock);
  }();
  absl::StatusOr<jobwheel::Principal> p = auth->Authenticate(std::string(text));
  if (p.ok() && text != "Bearer fuzz-admin-token-0123456789") {
    Fail("Authenticate", "accepted " + std::string(text));
  }
  if (!p.ok() && p.status().code() != absl::StatusCode::kUnauthenticated) {
    Fail("Authenticate", p.status().ToString());
  }

  FuzzChildGraph(data, size);
  return 0;
}
