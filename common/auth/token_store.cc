#include "common/auth/token_store.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "common/audit/audit_event.h"

namespace jobwheel {
namespace {

std::string Time(const absl::optional<absl::Time>& t) {
  return t.has_value() ? absl::FormatTime("%Y-%m-%dT%H:%M:%E*SZ", *t, absl::UTCTimeZone()) : "";
}

}  // namespace

jobwheel::v1::AuditEvent TokenAuditEvent(const jobwheel::v1::AuditEvent& audit,
                                         const TokenRow* before, const TokenRow& after) {
  jobwheel::v1::AuditEvent e = audit;
  e.set_target(absl::StrCat("token ", after.id));
  // The secret is never at hand here: a row holds its name, role, apps and times only.
  AddAuditChange(e, "name", before ? AuditQuoted(before->name) : "", AuditQuoted(after.name));
  AddAuditChange(e, "role", before ? std::string(RoleName(before->role)) : "",
                 std::string(RoleName(after.role)));
  AddAuditChange(e, "apps", before ? AuditQuotedList(before->apps) : "",
                 AuditQuotedList(after.apps));
  AddAuditChange(e, "expire_time", before ? Time(before->expire_time) : "",
                 Time(after.expire_time));
  AddAuditChange(e, "revoke_time", before ? Time(before->revoke_time) : "",
                 Time(after.revoke_time));
  return e;
}

}  // namespace jobwheel
