#include "common/auth/bearer.h"

#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace jobwheel {

bool ConstantTimeEquals(absl::string_view a, absl::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

absl::StatusOr<absl::string_view> BearerToken(absl::string_view authorization) {
  constexpr absl::string_view kPrefix = "Bearer ";
  if (authorization.size() <= kPrefix.size() ||
      authorization.substr(0, kPrefix.size()) != kPrefix) {
    return absl::UnauthenticatedError("authorization metadata is not a Bearer token");
  }
  return authorization.substr(kPrefix.size());
}

absl::StatusOr<absl::string_view> BearerTokenOf(
    const std::multimap<grpc::string_ref, grpc::string_ref>& metadata) {
  auto it = metadata.find("authorization");
  if (it == metadata.end()) {
    return absl::UnauthenticatedError("missing authorization metadata (Bearer token)");
  }
  return BearerToken(absl::string_view(it->second.data(), it->second.size()));
}

absl::Status CheckBearer(const std::multimap<grpc::string_ref, grpc::string_ref>& metadata,
                         const TokenPolicy& policy) {
  if (policy.insecure_dev) return absl::OkStatus();
  absl::StatusOr<absl::string_view> token = BearerTokenOf(metadata);
  if (!token.ok()) return token.status();
  bool ok = false;
  for (const std::string& t : policy.tokens) {
    if (!t.empty() && ConstantTimeEquals(*token, t)) ok = true;
  }
  if (ok) return absl::OkStatus();
  if (policy.callers != nullptr && absl::StartsWith(*token, kCallerTokenPrefix)) {
    return policy.callers->Verify(*token).status();
  }
  return absl::UnauthenticatedError("invalid token");
}

absl::StatusOr<std::string> ReadTokenFile(const std::string& path, absl::string_view flag) {
  if (path.empty()) return std::string();
  std::ifstream in(path);
  if (!in) return absl::InvalidArgumentError(absl::StrCat(flag, ": cannot read ", path));
  std::stringstream ss;
  ss << in.rdbuf();
  std::string token(absl::StripAsciiWhitespace(ss.str()));
  if (token.empty()) return absl::InvalidArgumentError(absl::StrCat(flag, ": ", path, " is empty"));
  return token;
}

void AddBearer(grpc::ClientContext& ctx, const std::string& token) {
  if (!token.empty()) ctx.AddMetadata("authorization", "Bearer " + token);
}

absl::Status AddCallerToken(grpc::ClientContext& ctx, CallerTokenSigner* signer,
                            absl::string_view audience) {
  if (signer == nullptr) return absl::OkStatus();
  absl::StatusOr<std::string> token = signer->TokenFor(audience);
  if (!token.ok()) return token.status();
  AddBearer(ctx, *token);
  return absl::OkStatus();
}

}  // namespace jobwheel
