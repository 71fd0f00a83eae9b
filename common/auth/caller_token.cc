#include "common/auth/caller_token.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <cstdint>
#include <fstream>
#include <sstream>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace jobwheel {
namespace {

constexpr size_t kEd25519SignatureSize = 64;

struct PkeyDeleter {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
};
using PkeyPtr = std::unique_ptr<EVP_PKEY, PkeyDeleter>;
struct BioDeleter {
  void operator()(BIO* b) const { BIO_free(b); }
};
using BioPtr = std::unique_ptr<BIO, BioDeleter>;
struct MdCtxDeleter {
  void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};
using MdCtxPtr = std::unique_ptr<EVP_MD_CTX, MdCtxDeleter>;

BioPtr MemBio(absl::string_view data) {
  return BioPtr(BIO_new_mem_buf(data.data(), static_cast<int>(data.size())));
}

// Issuers and audiences go into the payload between quotes, unescaped.
absl::Status ValidateClaim(absl::string_view value, absl::string_view what) {
  if (value.empty() || value.size() > kMaxCallerTokenClaimSize) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": 1 to ", kMaxCallerTokenClaimSize, " bytes"));
  }
  for (char c : value) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f || c == '"' || c == '\\') {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": no quotes, backslashes or control characters"));
    }
  }
  return absl::OkStatus();
}

// Base64url without padding, refusing any encoding but the canonical one.
bool DecodeCanonical(absl::string_view in, std::string* out) {
  if (in.empty() || in.find('=') != absl::string_view::npos) return false;
  if (!absl::WebSafeBase64Unescape(in, out)) return false;
  return absl::WebSafeBase64Escape(*out) == in;
}

bool ConsumeString(absl::string_view* in, std::string* out) {
  const size_t end = in->find('"');
  if (end == absl::string_view::npos) return false;
  absl::string_view value = in->substr(0, end);
  if (!ValidateClaim(value, "claim").ok()) return false;
  *out = std::string(value);
  in->remove_prefix(end + 1);
  return true;
}

bool ConsumeSeconds(absl::string_view* in, int64_t* out) {
  size_t n = 0;
  while (n < in->size() && absl::ascii_isdigit((*in)[n])) ++n;
  if (n == 0 || n > 12 || ((*in)[0] == '0' && n > 1)) return false;
  if (!absl::SimpleAtoi(in->substr(0, n), out)) return false;
  in->remove_prefix(n);
  return true;
}

struct Claims {
  std::string iss;
  std::string aud;
  int64_t iat = 0;
  int64_t exp = 0;
};

std::string Payload(const Claims& c) {
  return absl::StrCat(R"({"iss":")", c.iss, R"(","aud":")", c.aud, R"(","iat":)", c.iat,
                      R"(,"exp":)", c.exp, "}");
}

bool ParsePayload(absl::string_view in, Claims* c) {
  return absl::ConsumePrefix(&in, R"({"iss":")") && ConsumeString(&in, &c->iss) &&
         absl::ConsumePrefix(&in, R"(,"aud":")") && ConsumeString(&in, &c->aud) &&
         absl::ConsumePrefix(&in, R"(,"iat":)") && ConsumeSeconds(&in, &c->iat) &&
         absl::ConsumePrefix(&in, R"(,"exp":)") && ConsumeSeconds(&in, &c->exp) &&
         absl::ConsumePrefix(&in, "}") && in.empty();
}

bool IsEd25519(const EVP_PKEY* key) { return EVP_PKEY_id(key) == EVP_PKEY_ED25519; }

absl::StatusOr<std::string> Ed25519Sign(EVP_PKEY* key, absl::string_view data) {
  MdCtxPtr ctx(EVP_MD_CTX_new());
  std::string sig(kEd25519SignatureSize, '\0');
  size_t len = sig.size();
  if (ctx == nullptr || EVP_DigestSignInit(ctx.get(), nullptr, nullptr, nullptr, key) != 1 ||
      EVP_DigestSign(ctx.get(), reinterpret_cast<unsigned char*>(sig.data()), &len,
                     reinterpret_cast<const unsigned char*>(data.data()), data.size()) != 1 ||
      len != kEd25519SignatureSize) {
    ERR_clear_error();
    return absl::InternalError("caller token: Ed25519 signing failed");
  }
  return sig;
}

bool Ed25519Verify(EVP_PKEY* key, absl::string_view data, absl::string_view sig) {
  MdCtxPtr ctx(EVP_MD_CTX_new());
  const bool ok =
      ctx != nullptr && EVP_DigestVerifyInit(ctx.get(), nullptr, nullptr, nullptr, key) == 1 &&
      EVP_DigestVerify(ctx.get(), reinterpret_cast<const unsigned char*>(sig.data()), sig.size(),
                       reinterpret_cast<const unsigned char*>(data.data()), data.size()) == 1;
  ERR_clear_error();
  return ok;
}

absl::StatusOr<std::vector<PkeyPtr>> ReadPublicKeys(absl::string_view pem,
                                                    absl::string_view issuer) {
  std::vector<PkeyPtr> keys;
  BioPtr bio = MemBio(pem);
  if (bio == nullptr) return absl::InternalError("caller token: out of memory");
  while (true) {
    PkeyPtr key(PEM_read_bio_PUBKEY(bio.get(), nullptr, nullptr, nullptr));
    if (key == nullptr) break;
    if (!IsEd25519(key.get())) {
      return absl::InvalidArgumentError(
          absl::StrCat("public key of ", issuer, ": not an Ed25519 key"));
    }
    keys.push_back(std::move(key));
  }
  ERR_clear_error();  // The end of the input reads as an error.
  if (keys.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("public key of ", issuer, ": no PEM public key found"));
  }
  return keys;
}

std::string ToPem(EVP_PKEY* key, bool private_key) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (bio == nullptr) return "";
  const int ok =
      private_key ? PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr)
                  : PEM_write_bio_PUBKEY(bio.get(), key);
  if (ok != 1) return "";
  char* data = nullptr;
  const long len = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(len));
}

}  // namespace

absl::StatusOr<CallerKeyPair> GenerateCallerKeyPair() {
  std::unique_ptr<EVP_PKEY_CTX, decltype(&EVP_PKEY_CTX_free)> ctx(
      EVP_PKEY_CTX_new_id(EVP_PKEY_ED25519, nullptr), &EVP_PKEY_CTX_free);
  EVP_PKEY* raw = nullptr;
  if (ctx == nullptr || EVP_PKEY_keygen_init(ctx.get()) != 1 ||
      EVP_PKEY_keygen(ctx.get(), &raw) != 1) {
    ERR_clear_error();
    return absl::InternalError("cannot generate an Ed25519 key");
  }
  PkeyPtr key(raw);
  CallerKeyPair pair{ToPem(key.get(), true), ToPem(key.get(), false)};
  if (pair.private_pem.empty() || pair.public_pem.empty()) {
    return absl::InternalError("cannot write an Ed25519 key as PEM");
  }
  return pair;
}

absl::StatusOr<std::string> ReadKeyFile(const std::string& path, absl::string_view flag) {
  if (path.empty()) return std::string();
  std::ifstream in(path);
  if (!in) return absl::InvalidArgumentError(absl::StrCat(flag, ": cannot read ", path));
  std::stringstream ss;
  ss << in.rdbuf();
  if (absl::StripAsciiWhitespace(ss.str()).empty()) {
    return absl::InvalidArgumentError(absl::StrCat(flag, ": ", path, " is empty"));
  }
  return ss.str();
}

// ---- Signer ----

struct CallerTokenSigner::Key {
  PkeyPtr pkey;
};

CallerTokenSigner::CallerTokenSigner(std::unique_ptr<Key> key, Options options, const Clock& clock)
    : key_(std::move(key)), options_(std::move(options)), clock_(clock) {}

CallerTokenSigner::~CallerTokenSigner() = default;

absl::StatusOr<std::unique_ptr<CallerTokenSigner>> CallerTokenSigner::Create(
    absl::string_view private_pem, Options options, const Clock& clock) {
  absl::Status s = ValidateClaim(options.issuer, "issuer");
  if (!s.ok()) return s;
  if (options.lifetime <= absl::ZeroDuration() || options.lifetime > kMaxCallerTokenLifetime) {
    return absl::InvalidArgumentError("caller token lifetime: more than 0 and at most 60 s");
  }
  BioPtr bio = MemBio(private_pem);
  PkeyPtr pkey(bio == nullptr ? nullptr
                              : PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
  ERR_clear_error();
  if (pkey == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("signing key of ", options.issuer, ": no PEM private key found"));
  }
  if (!IsEd25519(pkey.get())) {
    return absl::InvalidArgumentError(
        absl::StrCat("signing key of ", options.issuer, ": not an Ed25519 key"));
  }
  auto key = std::make_unique<Key>();
  key->pkey = std::move(pkey);
  return std::unique_ptr<CallerTokenSigner>(
      new CallerTokenSigner(std::move(key), std::move(options), clock));
}

absl::StatusOr<std::string> CallerTokenSigner::Sign(absl::string_view audience,
                                                    absl::Time issued_at,
                                                    absl::Time expires_at) const {
  absl::Status s = ValidateClaim(audience, "caller token audience");
  if (!s.ok()) return s;
  Claims c{options_.issuer, std::string(audience), absl::ToUnixSeconds(issued_at),
           absl::ToUnixSeconds(expires_at)};
  const std::string signed_part =
      absl::StrCat(kCallerTokenPrefix, absl::WebSafeBase64Escape(Payload(c)));
  absl::StatusOr<std::string> sig = Ed25519Sign(key_->pkey.get(), signed_part);
  if (!sig.ok()) return sig.status();
  return absl::StrCat(signed_part, ".", absl::WebSafeBase64Escape(*sig));
}

absl::StatusOr<std::string> CallerTokenSigner::TokenFor(absl::string_view audience) {
  const absl::Time now = clock_.Now();
  const std::string key(audience);
  {
    absl::MutexLock lock(&mu_);
    auto it = cache_.find(key);
    if (it != cache_.end() && now < it->second.renew_at) return it->second.token;
  }
  // Whole seconds: iat rounds down, so the token lives a little less than `lifetime`.
  const absl::Time iat = absl::FromUnixSeconds(absl::ToUnixSeconds(now));
  absl::StatusOr<std::string> token = Sign(audience, iat, iat + options_.lifetime);
  if (!token.ok()) return token.status();
  absl::MutexLock lock(&mu_);
  if (cache_.size() >= options_.max_cached_audiences) cache_.clear();
  cache_[key] = Cached{*token, iat + options_.lifetime / 2};
  return token;
}

// ---- Verifier ----

struct CallerTokenVerifier::Keys {
  std::map<std::string, std::vector<PkeyPtr>, std::less<>> by_issuer;
};

CallerTokenVerifier::CallerTokenVerifier(std::unique_ptr<Keys> keys, Options options,
                                         const Clock& clock)
    : keys_(std::move(keys)),
      max_clock_skew_(options.max_clock_skew),
      clock_(clock),
      audience_(std::move(options.audience)) {}

CallerTokenVerifier::~CallerTokenVerifier() = default;

absl::StatusOr<std::unique_ptr<CallerTokenVerifier>> CallerTokenVerifier::Create(
    Options options, const Clock& clock) {
  auto keys = std::make_unique<Keys>();
  for (const auto& [issuer, pem] : options.public_keys_pem) {
    absl::Status s = ValidateClaim(issuer, "issuer");
    if (!s.ok()) return s;
    absl::StatusOr<std::vector<PkeyPtr>> read = ReadPublicKeys(pem, issuer);
    if (!read.ok()) return read.status();
    keys->by_issuer[issuer] = std::move(*read);
  }
  if (keys->by_issuer.empty()) {
    return absl::InvalidArgumentError("caller token verifier: no issuer has a public key");
  }
  if (options.max_clock_skew < absl::ZeroDuration()) {
    return absl::InvalidArgumentError("caller token verifier: negative clock skew");
  }
  return std::unique_ptr<CallerTokenVerifier>(
      new CallerTokenVerifier(std::move(keys), std::move(options), clock));
}

void CallerTokenVerifier::SetAudience(absl::string_view audience) {
  absl::MutexLock lock(&mu_);
  audience_ = std::string(audience);
}

absl::StatusOr<CallerIdentity> CallerTokenVerifier::Verify(absl::string_view token) const {
  const auto refuse = [](absl::string_view why) {
    return absl::UnauthenticatedError(absl::StrCat("caller token: ", why));
  };
  if (token.size() > kMaxCallerTokenSize) return refuse("too long");
  if (!absl::ConsumePrefix(&token, kCallerTokenPrefix)) return refuse("not a caller token");
  const size_t dot = token.find('.');
  if (dot == absl::string_view::npos) return refuse("malformed");
  const absl::string_view payload_part = token.substr(0, dot);
  const absl::string_view signature_part = token.substr(dot + 1);
  std::string payload, signature;
  if (!DecodeCanonical(payload_part, &payload) || !DecodeCanonical(signature_part, &signature) ||
      signature.size() != kEd25519SignatureSize) {
    return refuse("malformed");
  }
  Claims c;
  if (!ParsePayload(payload, &c)) return refuse("malformed payload");
  auto keys = keys_->by_issuer.find(c.iss);
  if (keys == keys_->by_issuer.end()) return refuse("issuer not accepted here");

  const std::string signed_part = absl::StrCat(kCallerTokenPrefix, payload_part);
  bool signed_ok = false;
  for (const PkeyPtr& key : keys->second) {
    if (Ed25519Verify(key.get(), signed_part, signature)) {
      signed_ok = true;
      break;
    }
  }
  if (!signed_ok) return refuse("bad signature");
  {
    absl::MutexLock lock(&mu_);
    if (audience_.empty() || c.aud != audience_) return refuse("wrong audience");
  }
  const absl::Time iat = absl::FromUnixSeconds(c.iat);
  const absl::Time exp = absl::FromUnixSeconds(c.exp);
  if (exp <= iat || exp - iat > kMaxCallerTokenLifetime) return refuse("bad lifetime");
  const absl::Time now = clock_.Now();
  if (iat > now + max_clock_skew_) return refuse("not yet valid");
  if (exp <= now - max_clock_skew_) return refuse("expired");
  return CallerIdentity{c.iss};
}

}  // namespace jobwheel
