#ifndef JOBWHEEL_COMMON_AUTH_TOKEN_TEST_DATA_H_
#define JOBWHEEL_COMMON_AUTH_TOKEN_TEST_DATA_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "common/auth/token_authenticator.h"
#include "common/auth/token_store.h"

namespace jobwheel::store_testing {

// A token to insert in a token store test: `secret`'s hash, created at 2023-11-14T22:13:20Z.
inline NewToken Token(const std::string& name, Role role, std::vector<std::string> apps,
                      const std::string& secret) {
  NewToken t;
  t.name = name;
  t.role = role;
  t.apps = std::move(apps);
  t.secret_hash = HashTokenSecret(secret);
  t.create_time = absl::FromUnixSeconds(1700000000);
  return t;
}

}  // namespace jobwheel::store_testing

#endif  // JOBWHEEL_COMMON_AUTH_TOKEN_TEST_DATA_H_
