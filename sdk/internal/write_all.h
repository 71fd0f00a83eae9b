#ifndef JOBWHEEL_SDK_INTERNAL_WRITE_ALL_H_
#define JOBWHEEL_SDK_INTERNAL_WRITE_ALL_H_

// WriteAll lives in file_io.h with the other file helpers; this header is kept for the files
// that still include it.
#include "sdk/internal/file_io.h"

#endif  // JOBWHEEL_SDK_INTERNAL_WRITE_ALL_H_
