#ifndef JOBWHEEL_TESTS_E2E_STACK_TEST_H_
#define JOBWHEEL_TESTS_E2E_STACK_TEST_H_

#include "common/testing/stack_test.h"

// The end-to-end tests' names for the one stack fixture, common/testing/stack_test.h (tests
// outside tests/e2e that still include this header get them too).
namespace jobwheel::e2e {

using testing::NewJob;
using testing::Stack;
using testing::StackTest;

}  // namespace jobwheel::e2e

#endif  // JOBWHEEL_TESTS_E2E_STACK_TEST_H_
