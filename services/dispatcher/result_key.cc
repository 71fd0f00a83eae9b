#include "services/dispatcher/result_key.h"

#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <openssl/sha.h>

#include <cstdlib>

#include "spdlog/spdlog.h"

namespace jobwheel::dispatcher {

std::string NewResultKey() {
  std::string key(kResultKeyBytes, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(key.data()), static_cast<int>(key.size())) != 1) {
    spdlog::critical("RAND_bytes failed: cannot make run result keys");
    std::abort();
  }
  return key;
}

std::string ResultKeyHash(absl::string_view key) {
  std::string hash(SHA256_DIGEST_LENGTH, '\0');
  SHA256(reinterpret_cast<const unsigned char*>(key.data()), key.size(),
         reinterpret_cast<unsigned char*>(hash.data()));
  return hash;
}

bool ResultKeyMatches(absl::string_view key, absl::string_view hash) {
  if (hash.size() != SHA256_DIGEST_LENGTH) return false;
  const std::string actual = ResultKeyHash(key);
  return CRYPTO_memcmp(actual.data(), hash.data(), SHA256_DIGEST_LENGTH) == 0;
}

}  // namespace jobwheel::dispatcher
