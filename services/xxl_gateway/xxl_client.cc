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

absl::StatusOr<std::string> HttplibXxlClient::Post(const std::string& base, absl::string_view path,
                                                   const std::string& body,
                                                   const std::string& token,
                                                   absl::Duration timeout) {
  auto [origin, prefix] = SplitBase(base);
  httplib::Client client(origin);
  if (!client.is_valid()) {
    return absl::InvalidArgumentError(absl::StrCat("executor URL ", base, ": not usable"));
  }
  const int64_t micros = absl::ToInt64Microseconds(timeout);
  const time_t s = static_cast<time_t>(micros / 1000000);
  const time_t us = static_cast<time_t>(micros % 1000000);
  client.set_connection_timeout(s, us);
  client.set_read_timeout(s, us);
  client.set_write_timeout(s, us);
  client.set_follow_location(false);
  client.set_keep_alive(false);
  httplib::Headers headers;
  if (!token.empty()) headers.emplace("XXL-JOB-ACCESS-TOKEN", token);
  const std::string target = absl::StrCat(prefix, path);
  auto result = client.Post(target.c_str(), headers, body, "application/json;charset=UTF-8");
  if (!result) {
    const httplib::Error e = result.error();
    if (e == httplib::Error::Connection) {
      return absl::UnavailableError(absl::StrCat("XXL executor ", base, path, ": cannot connect"));
    }
    return absl::DeadlineExceededError(
        absl::StrCat("XXL executor ", base, path, ": no answer (", httplib::to_string(e), ")"));
  }
  if (result->status != 200) {
    return absl::InternalError(
        absl::StrCat("XXL executor ", base, path, ": HTTP status ", result->status));
  }
  if (result->body.size() > max_body_bytes_) {
    return absl::InternalError(
        absl::StrCat("XXL executor ", base, path, ": answer over ", max_body_bytes_, " bytes"));
  }
  return std::move(result->body);
}

}  // namespace jobwheel::xxl
