// libev for the benchmark's raw-libev backend: the root package's shim (Sources/CLibev/shim.h,
// the one place libev's macros are wrapped), under a module name of the benchmark's own (the
// root's CLibev target is RunLoopKit's, and module names are unique in a package graph).
#ifndef BENCH_LIBEV_H
#define BENCH_LIBEV_H

#include "../../Sources/CLibev/shim.h"

#endif
