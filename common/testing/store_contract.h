#ifndef JOBWHEEL_COMMON_TESTING_STORE_CONTRACT_H_
#define JOBWHEEL_COMMON_TESTING_STORE_CONTRACT_H_

#include <string>

namespace jobwheel::testing {

// For the typed suites that run a store's contract on its fake and on PostgreSQL: names each
// environment by its `kName` (TYPED_TEST_SUITE's third argument), so a case reads
// "Suite/Pg.Case". Each environment declares `static constexpr char kName[] = "Pg";`.
struct StoreEnvNames {
  template <typename Env>
  static std::string GetName(int) {
    return Env::kName;
  }
};

}  // namespace jobwheel::testing

#endif  // JOBWHEEL_COMMON_TESTING_STORE_CONTRACT_H_
