#include "sdk/testing/fake_dispatcher.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/auth/bearer.h"
#include "common/grpc/grpc_server.h"

namespace jobwheel::sdk::testing {

FakeDispatcher::FakeDispatcher(std::string token) : token_(std::move(token)) {}

FakeDispatcher::~FakeDispatcher() { Stop(); }

absl::StatusOr<std::string> FakeDispatcher::Start(const std::string& address) {
  int port = 0;
  auto server = StartGrpcServer(address, {this}, {}, &port);
  if (!server.ok()) return server.status();
  server_ = std::move(*server);
  return absl::StrCat("127.0.0.1:", port);
}

void FakeDispatcher::Stop() {
  if (server_ != nullptr) {
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(500));
    server_.reset();
  }
}

grpc::Status FakeDispatcher::ReportResults(grpc::ServerContext* ctx,
                                           const jobwheel::v1::ReportResultsRequest* request,
                                           jobwheel::v1::ReportResultsResponse* response) {
  TokenPolicy policy;
  policy.insecure_dev = token_.empty();
  policy.tokens = {token_};
  if (!CheckBearer(ctx->client_metadata(), policy).ok()) {
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "invalid token");
  }
  absl::MutexLock lock(&mu_);
  ++calls_;
  if (down_) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "dispatcher down");
  for (const auto& r : request->results()) {
    ++received_;
    auto key = keys_.find(r.run_id());
    if (key != keys_.end() && key->second != r.result_key()) {
      ++refused_;
      response->add_refused_run_ids(r.run_id());
      continue;
    }
    results_[r.run_id()] = r;
    response->add_acked_run_ids(r.run_id());
  }
  return grpc::Status::OK;
}

void FakeDispatcher::SetDown(bool down) {
  absl::MutexLock lock(&mu_);
  down_ = down;
}

void FakeDispatcher::RequireKey(int64_t run_id, std::string key) {
  absl::MutexLock lock(&mu_);
  keys_[run_id] = std::move(key);
}

int FakeDispatcher::refused() const {
  absl::MutexLock lock(&mu_);
  return refused_;
}

std::map<int64_t, jobwheel::v1::RunResult> FakeDispatcher::results() const {
  absl::MutexLock lock(&mu_);
  return results_;
}

bool FakeDispatcher::Has(int64_t run_id) const {
  absl::MutexLock lock(&mu_);
  return results_.count(run_id) > 0;
}

jobwheel::v1::RunResult FakeDispatcher::Get(int64_t run_id) const {
  absl::MutexLock lock(&mu_);
  auto it = results_.find(run_id);
  return it == results_.end() ? jobwheel::v1::RunResult() : it->second;
}

int FakeDispatcher::calls() const {
  absl::MutexLock lock(&mu_);
  return calls_;
}

int FakeDispatcher::results_received() const {
  absl::MutexLock lock(&mu_);
  return received_;
}

}  // namespace jobwheel::sdk::testing
