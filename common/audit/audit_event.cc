#include "common/audit/audit_event.h"

#include <cstdint>

#include "absl/random/random.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace jobwheel {

jobwheel::v1::AuditEvent AuditOf(const Principal& caller, absl::string_view action,
                                 const std::string& peer, const std::string& request_id) {
  jobwheel::v1::AuditEvent e;
  e.set_actor_token_id(caller.token_id);
  e.set_actor_name(caller.name);
  e.set_action(std::string(action));
  e.set_peer(peer);
  e.set_request_id(request_id);
  return e;
}

std::string AuditRequestId(const grpc::CallbackServerContext& ctx) {
  auto it = ctx.client_metadata().find("x-request-id");
  if (it != ctx.client_metadata().end()) {
    const absl::string_view id(it->second.data(), it->second.size());
    bool ok = !id.empty() && id.size() <= 128;
    for (char c : id) ok = ok && c > ' ' && c < 127;
    if (ok) return std::string(id);
  }
  thread_local absl::BitGen gen;
  return absl::StrFormat("%016x%016x", absl::Uniform<uint64_t>(gen), absl::Uniform<uint64_t>(gen));
}

void AddAuditChange(jobwheel::v1::AuditEvent& event, absl::string_view field,
                    absl::string_view before, absl::string_view after) {
  if (before == after) return;
  jobwheel::v1::AuditFieldChange* c = event.add_changes();
  c->set_field(std::string(field));
  c->set_before(std::string(before));
  c->set_after(std::string(after));
}

std::string AuditQuoted(absl::string_view value) {
  return absl::StrCat("\"", absl::CEscape(value), "\"");
}

std::string AuditQuotedList(const std::vector<std::string>& values) {
  return absl::StrJoin(values, ", ", [](std::string* out, const std::string& v) {
    absl::StrAppend(out, AuditQuoted(v));
  });
}

}  // namespace jobwheel
