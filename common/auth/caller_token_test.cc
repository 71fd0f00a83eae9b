#include "common/auth/caller_token.h"

#include <string>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace jobwheel {
namespace {

using ::testing::HasSubstr;

constexpr char kExecutorAddress[] = "10.0.0.7:7400";

class CallerTokenTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto scheduler = GenerateCallerKeyPair();
    auto dispatcher = GenerateCallerKeyPair();
    auto other = GenerateCallerKeyPair();
    ASSERT_TRUE(scheduler.ok() && dispatcher.ok() && other.ok());
    scheduler_ = *scheduler;
    dispatcher_ = *dispatcher;
    other_ = *other;
  }

  std::unique_ptr<CallerTokenSigner> Signer(const CallerKeyPair& pair, absl::string_view issuer) {
    auto s = CallerTokenSigner::Create(pair.private_pem, {std::string(issuer)}, clock_);
    EXPECT_TRUE(s.ok()) << s.status();
    return s.ok() ? std::move(*s) : nullptr;
  }

  // An executor's verifier: the dispatcher's and the scheduler's keys.
  std::unique_ptr<CallerTokenVerifier> ExecutorVerifier() {
    CallerTokenVerifier::Options o;
    o.public_keys_pem[std::string(kIssuerDispatcher)] = dispatcher_.public_pem;
    o.public_keys_pem[std::string(kIssuerScheduler)] = scheduler_.public_pem;
    o.audience = kExecutorAddress;
    auto v = CallerTokenVerifier::Create(o, clock_);
    EXPECT_TRUE(v.ok()) << v.status();
    return v.ok() ? std::move(*v) : nullptr;
  }

  FakeClock clock_;
  CallerKeyPair scheduler_, dispatcher_, other_;
};

TEST_F(CallerTokenTest, RoundTripNamesTheIssuer) {
  auto verifier = ExecutorVerifier();
  for (auto [pair, issuer] : {std::make_pair(&dispatcher_, kIssuerDispatcher),
                              std::make_pair(&scheduler_, kIssuerScheduler)}) {
    auto token = Signer(*pair, issuer)->TokenFor(kExecutorAddress);
    ASSERT_TRUE(token.ok()) << token.status();
    EXPECT_TRUE(absl::StartsWith(*token, "jwc1."));
    auto id = verifier->Verify(*token);
    ASSERT_TRUE(id.ok()) << id.status();
    EXPECT_EQ(id->issuer, issuer);
  }
}

TEST_F(CallerTokenTest, PayloadIsTheDocumentedJson) {
  auto token = Signer(dispatcher_, kIssuerDispatcher)->TokenFor("registry");
  ASSERT_TRUE(token.ok());
  std::vector<std::string> parts = absl::StrSplit(*token, '.');
  ASSERT_EQ(parts.size(), 3u);
  std::string payload;
  ASSERT_TRUE(absl::WebSafeBase64Unescape(parts[1], &payload));
  const int64_t now = absl::ToUnixSeconds(clock_.Now());
  EXPECT_EQ(payload, absl::StrCat(R"({"iss":"dispatcher","aud":"registry","iat":)", now,
                                  R"(,"exp":)", now + 60, "}"));
}

TEST_F(CallerTokenTest, WrongKeyUnknownIssuerAndWrongAudienceAreRefused) {
  auto verifier = ExecutorVerifier();
  // Signed with a key the executor does not know, claiming to be the dispatcher.
  auto forged = Signer(other_, kIssuerDispatcher)->TokenFor(kExecutorAddress);
  ASSERT_TRUE(forged.ok());
  EXPECT_THAT(verifier->Verify(*forged).status().message(), HasSubstr("bad signature"));
  // An issuer the verifier has no key for (an executor signing its own tokens).
  auto executor = Signer(other_, "executor")->TokenFor(kExecutorAddress);
  EXPECT_THAT(verifier->Verify(*executor).status().message(), HasSubstr("issuer"));
  // A token the dispatcher made for another executor (e.g. captured by a fake one).
  auto elsewhere = Signer(dispatcher_, kIssuerDispatcher)->TokenFor("10.6.6.6:7400");
  EXPECT_THAT(verifier->Verify(*elsewhere).status().message(), HasSubstr("wrong audience"));
  for (const auto& t : {*forged, *executor, *elsewhere}) {
    EXPECT_EQ(verifier->Verify(t).status().code(), absl::StatusCode::kUnauthenticated);
  }
}

TEST_F(CallerTokenTest, OnlyListedIssuersAreAccepted) {
  // The dispatcher's Dispatch: the scheduler only.
  CallerTokenVerifier::Options o;
  o.public_keys_pem[std::string(kIssuerScheduler)] = scheduler_.public_pem;
  o.audience = std::string(kAudienceDispatcher);
  auto verifier = CallerTokenVerifier::Create(o, clock_);
  ASSERT_TRUE(verifier.ok());
  auto from_dispatcher = Signer(dispatcher_, kIssuerDispatcher)->TokenFor(kAudienceDispatcher);
  EXPECT_EQ((*verifier)->Verify(*from_dispatcher).status().code(),
            absl::StatusCode::kUnauthenticated);
  auto from_scheduler = Signer(scheduler_, kIssuerScheduler)->TokenFor(kAudienceDispatcher);
  EXPECT_TRUE((*verifier)->Verify(*from_scheduler).ok());
}

TEST_F(CallerTokenTest, TamperedPayloadOrSignatureIsRefused) {
  auto verifier = ExecutorVerifier();
  auto signer = Signer(dispatcher_, kIssuerDispatcher);
  auto token = signer->TokenFor(kExecutorAddress);
  ASSERT_TRUE(token.ok());
  std::vector<std::string> parts = absl::StrSplit(*token, '.');
  // A payload naming another audience with the original signature.
  const int64_t now = absl::ToUnixSeconds(clock_.Now());
  const std::string other_payload = absl::WebSafeBase64Escape(absl::StrCat(
      R"({"iss":"dispatcher","aud":"10.0.0.8:7400","iat":)", now, R"(,"exp":)", now + 60, "}"));
  EXPECT_FALSE(verifier->Verify(absl::StrCat("jwc1.", other_payload, ".", parts[2])).ok());
  // A longer lifetime with the original signature.
  const std::string longer = absl::WebSafeBase64Escape(absl::StrCat(
      R"({"iss":"dispatcher","aud":"10.0.0.7:7400","iat":)", now, R"(,"exp":)", now + 59, "}"));
  EXPECT_THAT(verifier->Verify(absl::StrCat("jwc1.", longer, ".", parts[2])).status().message(),
              HasSubstr("bad signature"));
  // One signature bit flipped.
  std::string sig;
  ASSERT_TRUE(absl::WebSafeBase64Unescape(parts[2], &sig));
  sig[10] ^= 1;
  EXPECT_THAT(verifier->Verify(absl::StrCat("jwc1.", parts[1], ".", absl::WebSafeBase64Escape(sig)))
                  .status()
                  .message(),
              HasSubstr("bad signature"));
  // Shapes that are not a token at all.
  for (const std::string& junk :
       {std::string(""), std::string("jwc1."), std::string("jwc1.a.b"), std::string("cluster"),
        absl::StrCat("jwc2.", parts[1], ".", parts[2]), absl::StrCat(*token, "."),
        absl::StrCat("jwc1.", parts[1], "=.", parts[2]), absl::StrCat(*token, ".extra"),
        std::string(kMaxCallerTokenSize + 1, 'a')}) {
    EXPECT_EQ(verifier->Verify(junk).status().code(), absl::StatusCode::kUnauthenticated) << junk;
  }
}

TEST_F(CallerTokenTest, NonCanonicalPayloadsAreRefusedEvenWhenSigned) {
  auto verifier = ExecutorVerifier();
  auto signer = Signer(dispatcher_, kIssuerDispatcher);
  const absl::Time now = clock_.Now();
  auto good = signer->Sign(kExecutorAddress, now, now + absl::Seconds(30));
  ASSERT_TRUE(good.ok());
  EXPECT_TRUE(verifier->Verify(*good).ok());
  // Audiences with characters that would need escaping cannot be signed.
  EXPECT_FALSE(signer->Sign("a\"b", now, now + absl::Seconds(30)).ok());
  EXPECT_FALSE(signer->Sign("", now, now + absl::Seconds(30)).ok());
  EXPECT_FALSE(signer->Sign(std::string(300, 'a'), now, now + absl::Seconds(30)).ok());
}

TEST_F(CallerTokenTest, ExpiryAndClockSkew) {
  auto verifier = ExecutorVerifier();  // Skew 10 s.
  auto signer = Signer(dispatcher_, kIssuerDispatcher);
  const absl::Time now = clock_.Now();
  auto token = signer->Sign(kExecutorAddress, now, now + absl::Seconds(60));
  ASSERT_TRUE(token.ok());
  EXPECT_TRUE(verifier->Verify(*token).ok());
  clock_.Advance(absl::Seconds(69));  // Past exp, within the skew.
  EXPECT_TRUE(verifier->Verify(*token).ok());
  clock_.Advance(absl::Seconds(1));
  EXPECT_THAT(verifier->Verify(*token).status().message(), HasSubstr("expired"));

  // Issued by a caller whose clock is ahead.
  clock_.Set(now);
  auto ahead = signer->Sign(kExecutorAddress, now + absl::Seconds(10), now + absl::Seconds(40));
  EXPECT_TRUE(verifier->Verify(*ahead).ok());
  auto too_far = signer->Sign(kExecutorAddress, now + absl::Seconds(11), now + absl::Seconds(40));
  EXPECT_THAT(verifier->Verify(*too_far).status().message(), HasSubstr("not yet valid"));
  // Longer than 60 s, or ending before it starts.
  auto long_lived = signer->Sign(kExecutorAddress, now, now + absl::Seconds(61));
  EXPECT_THAT(verifier->Verify(*long_lived).status().message(), HasSubstr("lifetime"));
  auto backwards = signer->Sign(kExecutorAddress, now, now - absl::Seconds(1));
  EXPECT_THAT(verifier->Verify(*backwards).status().message(), HasSubstr("lifetime"));
}

TEST_F(CallerTokenTest, SignerCachesPerAudienceAndRenewsAhead) {
  auto verifier = ExecutorVerifier();
  auto signer = Signer(dispatcher_, kIssuerDispatcher);
  auto first = signer->TokenFor(kExecutorAddress);
  auto other = signer->TokenFor("10.0.0.8:7400");
  ASSERT_TRUE(first.ok() && other.ok());
  EXPECT_NE(*first, *other);
  clock_.Advance(absl::Seconds(29));
  EXPECT_EQ(*signer->TokenFor(kExecutorAddress), *first);
  clock_.Advance(absl::Seconds(1));  // Half the lifetime: renewed.
  auto renewed = signer->TokenFor(kExecutorAddress);
  EXPECT_NE(*renewed, *first);
  clock_.Advance(absl::Seconds(45));  // The first has expired; the renewed one has not.
  EXPECT_FALSE(verifier->Verify(*first).ok());
  EXPECT_TRUE(verifier->Verify(*renewed).ok());
}

TEST_F(CallerTokenTest, RotationAcceptsEveryListedKey) {
  CallerTokenVerifier::Options o;
  o.public_keys_pem[std::string(kIssuerDispatcher)] = dispatcher_.public_pem + other_.public_pem;
  o.audience = "registry";
  auto verifier = CallerTokenVerifier::Create(o, clock_);
  ASSERT_TRUE(verifier.ok()) << verifier.status();
  EXPECT_TRUE(
      (*verifier)->Verify(*Signer(dispatcher_, kIssuerDispatcher)->TokenFor("registry")).ok());
  EXPECT_TRUE((*verifier)->Verify(*Signer(other_, kIssuerDispatcher)->TokenFor("registry")).ok());
  EXPECT_FALSE(
      (*verifier)->Verify(*Signer(scheduler_, kIssuerDispatcher)->TokenFor("registry")).ok());
}

TEST_F(CallerTokenTest, AudienceSetLater) {
  CallerTokenVerifier::Options o;
  o.public_keys_pem[std::string(kIssuerDispatcher)] = dispatcher_.public_pem;
  auto verifier = CallerTokenVerifier::Create(o, clock_);
  ASSERT_TRUE(verifier.ok());
  auto token = Signer(dispatcher_, kIssuerDispatcher)->TokenFor(kExecutorAddress);
  EXPECT_FALSE((*verifier)->Verify(*token).ok());  // No audience yet: nothing is accepted.
  (*verifier)->SetAudience(kExecutorAddress);
  EXPECT_TRUE((*verifier)->Verify(*token).ok());
}

TEST_F(CallerTokenTest, BadKeysAreRefusedAtStart) {
  EXPECT_FALSE(CallerTokenSigner::Create("", {"scheduler"}, clock_).ok());
  EXPECT_FALSE(CallerTokenSigner::Create(scheduler_.public_pem, {"scheduler"}, clock_).ok());
  EXPECT_FALSE(CallerTokenSigner::Create(scheduler_.private_pem, {""}, clock_).ok());
  CallerTokenSigner::Options long_lived{"scheduler", absl::Seconds(61)};
  EXPECT_FALSE(CallerTokenSigner::Create(scheduler_.private_pem, long_lived, clock_).ok());

  CallerTokenVerifier::Options none;
  EXPECT_FALSE(CallerTokenVerifier::Create(none, clock_).ok());
  CallerTokenVerifier::Options garbage;
  garbage.public_keys_pem["scheduler"] = "not a key";
  EXPECT_FALSE(CallerTokenVerifier::Create(garbage, clock_).ok());
  // A private key where a public one belongs holds no PUBLIC KEY block.
  CallerTokenVerifier::Options swapped;
  swapped.public_keys_pem["scheduler"] = scheduler_.private_pem;
  EXPECT_FALSE(CallerTokenVerifier::Create(swapped, clock_).ok());
}

}  // namespace
}  // namespace jobwheel
