#ifndef JOBWHEEL_COMMON_BASE_STATUS_MACROS_H_
#define JOBWHEEL_COMMON_BASE_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define JW_CONCAT_INNER_(a, b) a##b
#define JW_CONCAT_(a, b) JW_CONCAT_INNER_(a, b)

// Returns the status from the enclosing function when it is not OK.
#define RETURN_IF_ERROR(expr)                \
  do {                                       \
    ::absl::Status jw_status_ = (expr);      \
    if (!jw_status_.ok()) return jw_status_; \
  } while (0)

#define JW_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                              \
  if (!tmp.ok()) return tmp.status();             \
  lhs = std::move(tmp).value()

// `ASSIGN_OR_RETURN(auto x, Foo());` assigns the value or returns the error.
#define ASSIGN_OR_RETURN(lhs, expr) \
  JW_ASSIGN_OR_RETURN_IMPL_(JW_CONCAT_(jw_statusor_, __LINE__), lhs, expr)

#endif  // JOBWHEEL_COMMON_BASE_STATUS_MACROS_H_
