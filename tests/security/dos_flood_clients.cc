#include "tests/security/dos_flood_clients.h"

#include <chrono>

#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "jobwheel/v1/job_admin.grpc.pb.h"
#include "jobwheel/v1/leadership.grpc.pb.h"

namespace jobwheel::security_testing {
namespace {

const v1::GetLeaderRequest& EmptyGetLeader() {
  static const auto* request = new v1::GetLeaderRequest();
  return *request;
}

}  // namespace

struct FloodClients::Client {
  Kind kind;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<v1::LeadershipService::Stub> leadership;
  std::unique_ptr<v1::JobAdminService::Stub> jobs;
  absl::BitGen rng;  // Used by this client's chain only (one call at a time).
  // The call in flight, and the one before (not destroyed inside its own callback).
  std::unique_ptr<grpc::ClientContext> ctx;
  std::unique_ptr<grpc::ClientContext> previous_ctx;
  v1::GetLeaderResponse leader_response;
  v1::ListJobsRequest list_request;
  v1::ListJobsResponse list_response;
};

FloodClients::FloodClients(std::string target, int get_leader, int junk_token)
    : target_(std::move(target)) {
  for (int i = 0; i < get_leader + junk_token; ++i) {
    auto c = std::make_unique<Client>();
    c->kind = i < get_leader ? Kind::kGetLeader : Kind::kJunkToken;
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);  // A connection of its own.
    c->channel = grpc::CreateCustomChannel(target_, grpc::InsecureChannelCredentials(), args);
    c->leadership = v1::LeadershipService::NewStub(c->channel);
    c->jobs = v1::JobAdminService::NewStub(c->channel);
    clients_.push_back(std::move(c));
  }
}

FloodClients::~FloodClients() { Stop(); }

void FloodClients::Start() {
  {
    absl::MutexLock lock(&mu_);
    running_ = static_cast<int>(clients_.size());
  }
  for (auto& c : clients_) Issue(c.get());
}

void FloodClients::Stop() {
  stopping_ = true;
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(
      +[](int* running) { return *running == 0; }, &running_));
}

FloodClients::Counts FloodClients::counts(Kind kind) const {
  absl::MutexLock lock(&mu_);
  return kind == Kind::kGetLeader ? leader_ : junk_;
}

void FloodClients::Issue(Client* c) {
  c->previous_ctx = std::move(c->ctx);
  c->ctx = std::make_unique<grpc::ClientContext>();
  c->ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  auto done = [this, c](grpc::Status s) { Done(c, s); };
  if (c->kind == Kind::kGetLeader) {
    c->leadership->async()->GetLeader(c->ctx.get(), &EmptyGetLeader(), &c->leader_response, done);
    return;
  }
  std::string secret = "jw_";
  for (int i = 0; i < 32; ++i) {
    absl::StrAppend(&secret, absl::Hex(absl::Uniform<uint32_t>(c->rng, 0, 256), absl::kZeroPad2));
  }
  c->ctx->AddMetadata("authorization", "Bearer " + secret);
  c->list_request.set_page_size(10);
  c->jobs->async()->ListJobs(c->ctx.get(), &c->list_request, &c->list_response, done);
}

void FloodClients::Done(Client* c, const grpc::Status& status) {
  {
    absl::MutexLock lock(&mu_);
    Counts& counts = c->kind == Kind::kGetLeader ? leader_ : junk_;
    if (status.ok()) {
      ++counts.ok;
    } else if (status.error_code() == grpc::StatusCode::UNAUTHENTICATED) {
      ++counts.unauthenticated;
    } else {
      ++counts.other;
    }
  }
  if (stopping_) {
    absl::MutexLock lock(&mu_);
    --running_;
    return;
  }
  Issue(c);
}

}  // namespace jobwheel::security_testing
