#ifndef JOBWHEEL_COMMON_AUDIT_AUDIT_EVENT_H_
#define JOBWHEEL_COMMON_AUDIT_AUDIT_EVENT_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "common/auth/token_authenticator.h"
#include "grpcpp/grpcpp.h"
#include "jobwheel/v1/job_admin.pb.h"

namespace jobwheel {

// The audit event of an admin call by `caller`: actor (token id and name, never the secret),
// action, peer and request id. Target, apps and changes are filled in by the store that
// records it inside the transaction of the change.
jobwheel::v1::AuditEvent AuditOf(const Principal& caller, absl::string_view action,
                                 const std::string& peer, const std::string& request_id);

// The call's x-request-id when it is 1..128 printable ASCII characters, else a new random one.
std::string AuditRequestId(const grpc::CallbackServerContext& ctx);

// Appends a field change when `before` and `after` (as shown: "" for none) differ.
void AddAuditChange(jobwheel::v1::AuditEvent& event, absl::string_view field,
                    absl::string_view before, absl::string_view after);

// How a changed value is shown: a string quoted and C-escaped; a list of strings as its
// quoted elements joined by ", " (as the job diff shows repeated fields).
std::string AuditQuoted(absl::string_view value);
std::string AuditQuotedList(const std::vector<std::string>& values);

}  // namespace jobwheel

#endif  // JOBWHEEL_COMMON_AUDIT_AUDIT_EVENT_H_
