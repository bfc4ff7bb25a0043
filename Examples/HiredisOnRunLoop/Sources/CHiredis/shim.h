// hiredis's async client and its libev adapter, as a C program includes them. The adapter's
// functions (redisLibevAttach and the watchers' callbacks) are static functions of the header:
// each Swift module that calls one compiles its own copy, as each C file would.
#ifndef CHIREDIS_SHIM_H
#define CHIREDIS_SHIM_H

#include <hiredis/hiredis.h>
#include <hiredis/async.h>
#include <hiredis/adapters/libev.h>

#endif
