#include "services/registry/validation.h"

#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/net/host_port.h"

namespace jobwheel::registry {
namespace {

constexpr size_t kMaxAppName = 64;
constexpr size_t kMaxHost = 253;
constexpr int kMaxHandlers = 1000;
constexpr size_t kMaxHandlerName = 128;
constexpr size_t kMaxSdkVersion = 64;
constexpr int kMaxLabels = 64;
constexpr size_t kMaxLabelKey = 63;
constexpr size_t kMaxLabelValue = 256;
constexpr size_t kMaxTitle = 128;
constexpr int kMaxManualAddresses = 1000;
constexpr size_t kMinInstanceId = 16;
constexpr size_t kMaxInstanceId = 64;

bool IsNameChar(char c) { return absl::ascii_isalnum(c) || c == '_' || c == '.' || c == '-'; }

absl::Status Invalid(absl::string_view field, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", what));
}

bool IsPrintableToken(absl::string_view s) {
  for (char c : s) {
    if (!absl::ascii_isgraph(c) || c == '|') return false;
  }
  return true;
}

}  // namespace

absl::Status ValidateAppName(absl::string_view name, absl::string_view field) {
  if (name.empty()) return Invalid(field, "must not be empty");
  if (name.size() > kMaxAppName) {
    return Invalid(field, absl::StrCat("longer than ", kMaxAppName, " characters"));
  }
  for (char c : name) {
    if (!IsNameChar(c)) {
      return Invalid(field, absl::StrCat("\"", name, "\" may contain only A-Z a-z 0-9 _ . -"));
    }
  }
  return absl::OkStatus();
}

namespace {

// One destination has one spelling (common/net CanonicalHostPort), so every comparison of
// addresses — the no-takeover rule, one app per address, the caller-token audience — is a
// string comparison that another spelling ("LOCALHOST.", "[::ffff:7f00:1]", "080") cannot
// get around.
absl::Status CheckCanonical(absl::string_view address, absl::string_view field) {
  absl::StatusOr<std::string> canonical = net::CanonicalHostPort(address);
  if (!canonical.ok()) {
    return Invalid(field, absl::StrCat("\"", address, "\": ", canonical.status().message()));
  }
  if (*canonical != address) {
    return Invalid(field,
                   absl::StrCat("\"", address, "\" is not in canonical spelling; advertise \"",
                                *canonical, "\""));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateAddress(absl::string_view address, absl::string_view field) {
  if (address.empty()) return Invalid(field, "must not be empty");
  const size_t colon = address.rfind(':');
  if (colon == absl::string_view::npos || colon == 0) {
    return Invalid(field, absl::StrCat("\"", address, "\" is not host:port"));
  }
  absl::string_view host = address.substr(0, colon);
  absl::string_view port_str = address.substr(colon + 1);
  int port = 0;
  if (port_str.empty() || !absl::SimpleAtoi(port_str, &port) || port < 1 || port > 65535 ||
      !absl::ascii_isdigit(port_str[0])) {
    return Invalid(field, absl::StrCat("\"", address, "\": port must be 1..65535"));
  }
  if (host.size() > kMaxHost) return Invalid(field, "host is too long");
  if (host.front() == '[') {
    if (host.back() != ']' || host.size() < 3) {
      return Invalid(field, absl::StrCat("\"", address, "\": bad IPv6 literal"));
    }
    for (char c : host.substr(1, host.size() - 2)) {
      if (!absl::ascii_isxdigit(c) && c != ':' && c != '.') {
        return Invalid(field, absl::StrCat("\"", address, "\": bad IPv6 literal"));
      }
    }
    return CheckCanonical(address, field);
  }
  for (char c : host) {
    if (!IsNameChar(c)) {
      return Invalid(field, absl::StrCat("\"", address, "\": bad character in host"));
    }
  }
  return CheckCanonical(address, field);
}

absl::Status ValidateRegistration(const v1::ExecutorRegistration& reg) {
  absl::Status s = ValidateAppName(reg.app(), "register.app");
  if (!s.ok()) return s;
  s = ValidateAddress(reg.address(), "register.address");
  if (!s.ok()) return s;
  if (reg.handlers_size() > kMaxHandlers) {
    return Invalid("register.handlers", absl::StrCat("more than ", kMaxHandlers, " handlers"));
  }
  for (int i = 0; i < reg.handlers_size(); ++i) {
    const std::string& h = reg.handlers(i);
    const std::string field = absl::StrCat("register.handlers[", i, "]");
    if (h.empty()) return Invalid(field, "must not be empty");
    if (h.size() > kMaxHandlerName) {
      return Invalid(field, absl::StrCat("longer than ", kMaxHandlerName, " characters"));
    }
    if (!IsPrintableToken(h))
      return Invalid(field, "must not contain spaces or control characters");
  }
  if (reg.sdk_version().size() > kMaxSdkVersion) {
    return Invalid("register.sdk_version",
                   absl::StrCat("longer than ", kMaxSdkVersion, " characters"));
  }
  if (reg.capacity() < 0) return Invalid("register.capacity", "must not be negative");
  if (reg.instance_id().empty()) {
    return Invalid("register.instance_id", "must not be empty");
  }
  if (reg.instance_id().size() < kMinInstanceId || reg.instance_id().size() > kMaxInstanceId) {
    return Invalid("register.instance_id",
                   absl::StrCat("must be ", kMinInstanceId, " to ", kMaxInstanceId, " characters"));
  }
  for (char c : reg.instance_id()) {
    if (!IsNameChar(c)) {
      return Invalid("register.instance_id", "may contain only A-Z a-z 0-9 _ . -");
    }
  }
  if (reg.labels_size() > kMaxLabels) {
    return Invalid("register.labels", absl::StrCat("more than ", kMaxLabels, " labels"));
  }
  for (const auto& [key, value] : reg.labels()) {
    const std::string field = absl::StrCat("register.labels[", key, "]");
    if (key.empty()) return Invalid("register.labels", "keys must not be empty");
    if (key.size() > kMaxLabelKey) {
      return Invalid(field, absl::StrCat("key longer than ", kMaxLabelKey, " characters"));
    }
    if (!IsPrintableToken(key)) return Invalid(field, "key must not contain spaces");
    if (value.size() > kMaxLabelValue) {
      return Invalid(field, absl::StrCat("value longer than ", kMaxLabelValue, " characters"));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateApp(const v1::App& app) {
  absl::Status s = ValidateAppName(app.name(), "app.name");
  if (!s.ok()) return s;
  if (app.title().size() > kMaxTitle) {
    return Invalid("app.title", absl::StrCat("longer than ", kMaxTitle, " characters"));
  }
  if (!v1::AddressType_IsValid(app.address_type())) {
    return Invalid("app.address_type", absl::StrCat("unknown value ", app.address_type()));
  }
  if (app.manual_addresses_size() > kMaxManualAddresses) {
    return Invalid("app.manual_addresses",
                   absl::StrCat("more than ", kMaxManualAddresses, " addresses"));
  }
  for (int i = 0; i < app.manual_addresses_size(); ++i) {
    const std::string field = absl::StrCat("app.manual_addresses[", i, "]");
    s = ValidateAddress(app.manual_addresses(i), field);
    if (!s.ok()) return s;
    for (int j = 0; j < i; ++j) {
      if (app.manual_addresses(j) == app.manual_addresses(i)) {
        return Invalid(field, absl::StrCat("duplicate address ", app.manual_addresses(i)));
      }
    }
  }
  if (app.address_type() == v1::ADDRESS_TYPE_MANUAL && app.manual_addresses_size() == 0) {
    return Invalid("app.manual_addresses", "must not be empty when address_type is MANUAL");
  }
  return absl::OkStatus();
}

}  // namespace jobwheel::registry
