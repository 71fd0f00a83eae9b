#include "services/scheduler/admin/token_admin.h"

#include <set>
#include <string>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "common/time/proto_time.h"
#include "services/scheduler/admin/job_validation.h"

namespace jobwheel::scheduler::admin {
namespace {

absl::Status Invalid(absl::string_view field, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", why));
}

absl::StatusOr<Role> RoleFromProto(int role) {
  switch (role) {
    case jobwheel::v1::ROLE_ADMIN:
      return Role::kAdmin;
    case jobwheel::v1::ROLE_OPERATOR:
      return Role::kOperator;
    case jobwheel::v1::ROLE_VIEWER:
      return Role::kViewer;
    case jobwheel::v1::ROLE_EXECUTOR:
      return Role::kExecutor;
    default:
      return Invalid("role", absl::StrCat("must be ROLE_ADMIN, ROLE_OPERATOR, ROLE_VIEWER or "
                                          "ROLE_EXECUTOR, got ",
                                          role));
  }
}

absl::Status CheckAppName(absl::string_view field, absl::string_view app) {
  if (app.empty()) return Invalid(field, "must not be empty");
  if (app.size() > static_cast<size_t>(kMaxAppLength)) {
    return Invalid(field, absl::StrCat("must be at most ", kMaxAppLength, " characters"));
  }
  for (char c : app) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.' && c != '-') {
      return Invalid(field, "invalid character (allowed: letters, digits, '_', '.', '-')");
    }
  }
  return absl::OkStatus();
}

}  // namespace

jobwheel::v1::Role RoleToProto(Role role) {
  switch (role) {
    case Role::kAdmin:
      return jobwheel::v1::ROLE_ADMIN;
    case Role::kOperator:
      return jobwheel::v1::ROLE_OPERATOR;
    case Role::kViewer:
      return jobwheel::v1::ROLE_VIEWER;
    case Role::kExecutor:
      return jobwheel::v1::ROLE_EXECUTOR;
  }
  return jobwheel::v1::ROLE_UNSPECIFIED;
}

jobwheel::v1::Token TokenToProto(const TokenRow& row) {
  jobwheel::v1::Token t;
  t.set_id(row.id);
  t.set_name(row.name);
  t.set_role(RoleToProto(row.role));
  for (const std::string& a : row.apps) t.add_apps(a);
  *t.mutable_create_time() = ToProto(row.create_time);
  if (row.expire_time) *t.mutable_expire_time() = ToProto(*row.expire_time);
  if (row.revoke_time) *t.mutable_revoke_time() = ToProto(*row.revoke_time);
  if (row.last_used_time) *t.mutable_last_used_time() = ToProto(*row.last_used_time);
  return t;
}

absl::Status TokenAdmin::Validate(const jobwheel::v1::CreateTokenRequest& req, absl::Time now) {
  const std::string& name = req.name();
  if (absl::StripAsciiWhitespace(name).empty()) return Invalid("name", "must not be empty");
  if (name.size() > static_cast<size_t>(kMaxTokenNameLength)) {
    return Invalid(
        "name", absl::StrCat("must be at most ", kMaxTokenNameLength, " bytes, got ", name.size()));
  }
  for (char c : name) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) return Invalid("name", "must not contain control characters");
  }
  ASSIGN_OR_RETURN(const Role role, RoleFromProto(req.role()));
  if (req.apps_size() > kMaxTokenApps) {
    return Invalid("apps", absl::StrCat("at most ", kMaxTokenApps, " apps, got ", req.apps_size()));
  }
  std::set<std::string> seen;
  for (int i = 0; i < req.apps_size(); ++i) {
    const std::string field = absl::StrCat("apps[", i, "]");
    if (req.apps(i) == kAllApps) {
      if (role != Role::kViewer && role != Role::kOperator) {
        return Invalid(field, "\"*\" (every app) is for ROLE_VIEWER and ROLE_OPERATOR only");
      }
      if (req.apps_size() > 1) {
        return Invalid(field, "\"*\" (every app) must be the only app");
      }
      continue;
    }
    RETURN_IF_ERROR(CheckAppName(field, req.apps(i)));
    if (!seen.insert(req.apps(i)).second) {
      return Invalid(field, absl::StrCat("duplicate app ", req.apps(i)));
    }
  }
  if (role == Role::kAdmin && req.apps_size() > 0) {
    return Invalid("apps", "must be empty for ROLE_ADMIN (an admin acts on every app)");
  }
  // A VIEWER with no apps reads no app ("*" reads every app).
  if ((role == Role::kOperator || role == Role::kExecutor) && req.apps_size() == 0) {
    return Invalid("apps",
                   "must name at least one app (or \"*\" for every app, ROLE_OPERATOR "
                   "only) for ROLE_OPERATOR and ROLE_EXECUTOR");
  }
  if (req.has_expire_time()) {
    const auto& ts = req.expire_time();
    if (ts.seconds() < 0 || ts.seconds() > 253402300799 || ts.nanos() < 0 ||
        ts.nanos() > 999999999) {
      return Invalid("expire_time", "not a valid timestamp");
    }
    if (FromProto(ts) <= now) return Invalid("expire_time", "must be in the future");
  }
  return absl::OkStatus();
}

absl::StatusOr<jobwheel::v1::CreateTokenResponse> TokenAdmin::CreateToken(
    const jobwheel::v1::CreateTokenRequest& req, const jobwheel::v1::AuditEvent* audit) {
  const absl::Time now = clock_.Now();
  RETURN_IF_ERROR(Validate(req, now));
  ASSIGN_OR_RETURN(std::string secret, GenerateTokenSecret());
  NewToken t;
  t.name = req.name();
  t.role = *RoleFromProto(req.role());
  t.apps.assign(req.apps().begin(), req.apps().end());
  t.secret_hash = HashTokenSecret(secret);
  t.create_time = now;
  if (req.has_expire_time()) t.expire_time = FromProto(req.expire_time());
  ASSIGN_OR_RETURN(TokenRow row, store_.Create(t, audit));
  jobwheel::v1::CreateTokenResponse resp;
  *resp.mutable_token() = TokenToProto(row);
  resp.set_secret(std::move(secret));
  return resp;
}

absl::StatusOr<jobwheel::v1::ListTokensResponse> TokenAdmin::ListTokens(
    const jobwheel::v1::ListTokensRequest& req) {
  ASSIGN_OR_RETURN(std::vector<TokenRow> rows, store_.List(req.include_revoked()));
  jobwheel::v1::ListTokensResponse resp;
  for (const TokenRow& row : rows) *resp.add_tokens() = TokenToProto(row);
  return resp;
}

absl::StatusOr<jobwheel::v1::Token> TokenAdmin::RevokeToken(int64_t id,
                                                            const jobwheel::v1::AuditEvent* audit) {
  RETURN_IF_ERROR(ValidateId(id, "id"));
  ASSIGN_OR_RETURN(TokenRow row, store_.Revoke(id, clock_.Now(), audit));
  return TokenToProto(row);
}

absl::StatusOr<jobwheel::v1::Token> TokenAdmin::CurrentToken(const Principal& caller) {
  if (caller.token_id == 0) {
    jobwheel::v1::Token t;
    t.set_name(caller.name);
    t.set_role(RoleToProto(caller.role));
    if (!caller.all_apps) {
      for (const std::string& a : caller.apps) t.add_apps(a);
    }
    return t;
  }
  // Tokens are few (people and services, not requests): a scan is cheap.
  ASSIGN_OR_RETURN(std::vector<TokenRow> rows, store_.List(/*include_revoked=*/false));
  for (const TokenRow& row : rows) {
    if (row.id == caller.token_id) return TokenToProto(row);
  }
  return absl::UnauthenticatedError(absl::StrCat("token ", caller.name, " was revoked"));
}

}  // namespace jobwheel::scheduler::admin
