// The benchmark's view of the CoreFoundation run-loop C API: the root package's declarations
// (one file, shared with the conformance tests' CFConformanceSupport target) and the benchmark's
// own C helpers.
#ifndef CCFRUNLOOP_H
#define CCFRUNLOOP_H

#include "../../../Tests/CFConformanceSupport/include/CFRunLoopAPI.h"
#include "BenchSupport.h"

#endif
