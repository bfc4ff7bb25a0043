// curl's multi_socket API on a libev loop, in the usual shape of its libev glue: a
// multi handle whose socket callback starts and stops ev_io watchers and whose timer callback
// arms one ev_timer. Every call on the loop's thread.
#ifndef CURL_EV_H
#define CURL_EV_H

#include <stddef.h>

struct ev_loop;
typedef struct curl_ev curl_ev;

/// Called once per finished transfer with its tag, curl's result code and the bytes received.
typedef void (*curl_ev_done_cb)(void *context, long tag, int result, size_t bytes);

/// A multi handle attached to `loop`; `done` gets every finished transfer.
curl_ev *curl_ev_new(struct ev_loop *loop, curl_ev_done_cb done, void *context);
/// Starts a GET of `url`; `fresh_connect` forbids reusing a connection (a new socket each time).
int curl_ev_get(curl_ev *multi, const char *url, long tag, int fresh_connect);
/// Transfers not finished yet.
int curl_ev_running(const curl_ev *multi);
/// Sockets curl has the loop watch now.
int curl_ev_watched_sockets(const curl_ev *multi);
/// Aborts what runs, stops every watcher and frees it all (no done callback).
void curl_ev_free(curl_ev *multi);

#endif
