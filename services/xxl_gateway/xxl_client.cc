#include "services/xxl_gateway/xxl_client.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "httplib.h"

namespace jobwheel::xxl {
namespace {

// "scheme://host:port" and the path after it, of a base URL made by ParseExecutorUrl.
std::pair<std::string, std::string> SplitBase(const std::string& base) {
  const size_t scheme_end = base.find("://");
  const size_t path_start =
      scheme_end == std::string::npos ? std::string::npos : base.find('/', scheme_end + 3);
  if (path_start == std::string::npos) return {base, ""};
  return {base.substr(0, path_start), base.substr(path_start)};
}

}  // namespace

HttplibXxlClient::HttplibXxlClient(Options options, const Clock& clock)
    : options_(options), clock_(clock) {}

HttplibXxlClient::~HttplibXxlClient() = default;

std::unique_ptr<httplib::Client> HttplibXxlClient::Take(const std::string& origin) {
  std::vector<Idle> stale;  // Closed outside mu_.
  std::unique_ptr<httplib::Client> client;
  {
    absl::MutexLock lock(&mu_);
    auto it = idle_.find(origin);
    if (it != idle_.end()) {
      const absl::Time oldest = clock_.Now() - options_.max_idle;
      std::vector<Idle>& kept = it->second;
      while (!kept.empty() && client == nullptr) {
        Idle last = std::move(kept.back());
        kept.pop_back();
        if (last.since >= oldest) {
          client = std::move(last.client);
        } else {
          stale.push_back(std::move(last));
        }
      }
      if (kept.empty()) idle_.erase(it);
    }
  }
  if (client != nullptr) return client;
  client = std::make_unique<httplib::Client>(origin);
  if (!client->is_valid()) return nullptr;
  client->set_follow_location(false);
  client->set_keep_alive(true);
  // A request's header and body go out at once: without it Nagle holds the second write until
  // the executor ACKs the first, a delayed ACK of up to 40 ms on every /run.
  client->set_tcp_nodelay(true);
  return client;
}

void HttplibXxlClient::Give(const std::string& origin, std::unique_ptr<httplib::Client> client) {
  absl::MutexLock lock(&mu_);
  std::vector<Idle>& kept = idle_[origin];
  if (static_cast<int>(kept.size()) >= options_.max_idle_per_origin) return;
  kept.push_back(Idle{std::move(client), clock_.Now()});
}

absl::StatusOr<std::string> HttplibXxlClient::Post(const std::string& base, absl::string_view path,
                                                   const std::string& body,
                                                   const std::string& token,
                                                   absl::Duration timeout) {
  auto [origin, prefix] = SplitBase(base);
  std::unique_ptr<httplib::Client> client = Take(origin);
  if (client == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("executor URL ", base, ": not usable"));
  }
  const int64_t micros = absl::ToInt64Microseconds(timeout);
  const time_t s = static_cast<time_t>(micros / 1000000);
  const time_t us = static_cast<time_t>(micros % 1000000);
  client->set_connection_timeout(s, us);
  client->set_read_timeout(s, us);
  client->set_write_timeout(s, us);
  httplib::Headers headers;
  if (!token.empty()) headers.emplace("XXL-JOB-ACCESS-TOKEN", token);
  const std::string target = absl::StrCat(prefix, path);
  auto result = client->Post(target.c_str(), headers, body, "application/json;charset=UTF-8");
  if (!result) {
    const httplib::Error e = result.error();
    if (e == httplib::Error::Connection) {
      return absl::UnavailableError(absl::StrCat("XXL executor ", base, path, ": cannot connect"));
    }
    return absl::DeadlineExceededError(
        absl::StrCat("XXL executor ", base, path, ": no answer (", httplib::to_string(e), ")"));
  }
  // Kept for the next call unless the executor said it closes this connection.
  if (result->get_header_value("Connection") != "close") Give(origin, std::move(client));
  if (result->status != 200) {
    return absl::InternalError(
        absl::StrCat("XXL executor ", base, path, ": HTTP status ", result->status));
  }
  if (result->body.size() > options_.max_body_bytes) {
    return absl::InternalError(absl::StrCat("XXL executor ", base, path, ": answer over ",
                                            options_.max_body_bytes, " bytes"));
  }
  return std::move(result->body);
}

}  // namespace jobwheel::xxl
