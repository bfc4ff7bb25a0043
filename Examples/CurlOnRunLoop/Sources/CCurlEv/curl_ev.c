// libcurl's multi_socket callbacks on libev watchers, as a C program on a plain libev loop writes them.
#include "curl_ev.h"

#include <curl/curl.h>
#include <ev.h>
#include <stdlib.h>

struct curl_ev {
    struct ev_loop *loop;
    struct ev_timer timer_event;
    CURLM *multi;
    int still_running;
    int transfers;
    int sockets;
    curl_ev_done_cb done;
    void *context;
    struct conn_info *conns;   /* transfers not finished */
    struct sock_info *socks;   /* sockets watched */
};

typedef struct sock_info {
    curl_socket_t sockfd;
    int action;
    struct ev_io ev;
    int evset;
    curl_ev *global;
    struct sock_info *prev, *next;
} sock_info;

typedef struct conn_info {
    long tag;
    size_t bytes;
    CURL *easy;
    struct conn_info *prev, *next;
} conn_info;

#define LINK(head, item) do { (item)->prev = NULL; (item)->next = (head); if (head) (head)->prev = (item); (head) = (item); } while (0)
#define UNLINK(head, item) do { if ((item)->prev) (item)->prev->next = (item)->next; else (head) = (item)->next; \
    if ((item)->next) (item)->next->prev = (item)->prev; } while (0)

static void check_multi_info(curl_ev *g) {
    CURLMsg *msg;
    int left;
    while ((msg = curl_multi_info_read(g->multi, &left))) {
        if (msg->msg != CURLMSG_DONE) continue;
        CURL *easy = msg->easy_handle;
        CURLcode res = msg->data.result;
        conn_info *conn = NULL;
        curl_easy_getinfo(easy, CURLINFO_PRIVATE, &conn);
        curl_multi_remove_handle(g->multi, easy);
        curl_easy_cleanup(easy);
        g->transfers--;
        UNLINK(g->conns, conn);
        long tag = conn->tag;
        size_t bytes = conn->bytes;
        free(conn);
        g->done(g->context, tag, (int)res, bytes);
    }
}

static void timer_cb(struct ev_loop *loop, struct ev_timer *w, int revents) {
    (void)loop; (void)revents;
    curl_ev *g = (curl_ev *)w->data;
    curl_multi_socket_action(g->multi, CURL_SOCKET_TIMEOUT, 0, &g->still_running);
    check_multi_info(g);
}

static int multi_timer_cb(CURLM *multi, long timeout_ms, void *userp) {
    (void)multi;
    curl_ev *g = (curl_ev *)userp;
    ev_timer_stop(g->loop, &g->timer_event);
    if (timeout_ms >= 0) {
        double t = timeout_ms / 1000.0;
        ev_timer_init(&g->timer_event, timer_cb, t, 0.);
        g->timer_event.data = g;
        ev_timer_start(g->loop, &g->timer_event);
    }
    return 0;
}

static void event_cb(struct ev_loop *loop, struct ev_io *w, int revents) {
    (void)loop;
    curl_ev *g = (curl_ev *)w->data;
    int action = ((revents & EV_READ) ? CURL_CSELECT_IN : 0) | ((revents & EV_WRITE) ? CURL_CSELECT_OUT : 0);
    curl_multi_socket_action(g->multi, w->fd, action, &g->still_running);
    check_multi_info(g);
    if (g->still_running <= 0) ev_timer_stop(g->loop, &g->timer_event);
}

static void remsock(sock_info *f, curl_ev *g) {
    if (!f) return;
    if (f->evset) ev_io_stop(g->loop, &f->ev);
    g->sockets--;
    UNLINK(g->socks, f);
    free(f);
}

static void setsock(sock_info *f, curl_socket_t s, int act, curl_ev *g) {
    int kind = ((act & CURL_POLL_IN) ? EV_READ : 0) | ((act & CURL_POLL_OUT) ? EV_WRITE : 0);
    f->sockfd = s;
    f->action = act;
    if (f->evset) ev_io_stop(g->loop, &f->ev);
    ev_io_init(&f->ev, event_cb, f->sockfd, kind);
    f->ev.data = g;
    f->evset = 1;
    ev_io_start(g->loop, &f->ev);
}

static int sock_cb(CURL *e, curl_socket_t s, int what, void *cbp, void *sockp) {
    curl_ev *g = (curl_ev *)cbp;
    sock_info *fdp = (sock_info *)sockp;
    if (what == CURL_POLL_REMOVE) {
        remsock(fdp, g);
    } else if (!fdp) {
        sock_info *f = calloc(1, sizeof(sock_info));
        f->global = g;
        g->sockets++;
        LINK(g->socks, f);
        setsock(f, s, what, g);
        curl_multi_assign(g->multi, s, f);
    } else {
        setsock(fdp, s, what, g);
    }
    (void)e;
    return 0;
}

static size_t write_cb(void *ptr, size_t size, size_t nmemb, void *data) {
    (void)ptr;
    conn_info *conn = (conn_info *)data;
    conn->bytes += size * nmemb;
    return size * nmemb;
}

curl_ev *curl_ev_new(struct ev_loop *loop, curl_ev_done_cb done, void *context) {
    static int initialised = 0;
    if (!initialised) {
        curl_global_init(CURL_GLOBAL_DEFAULT);
        initialised = 1;
    }
    curl_ev *g = calloc(1, sizeof(curl_ev));
    g->loop = loop;
    g->done = done;
    g->context = context;
    g->multi = curl_multi_init();
    ev_timer_init(&g->timer_event, timer_cb, 0., 0.);
    g->timer_event.data = g;
    curl_multi_setopt(g->multi, CURLMOPT_SOCKETFUNCTION, sock_cb);
    curl_multi_setopt(g->multi, CURLMOPT_SOCKETDATA, g);
    curl_multi_setopt(g->multi, CURLMOPT_TIMERFUNCTION, multi_timer_cb);
    curl_multi_setopt(g->multi, CURLMOPT_TIMERDATA, g);
    return g;
}

int curl_ev_get(curl_ev *g, const char *url, long tag, int fresh_connect) {
    conn_info *conn = calloc(1, sizeof(conn_info));
    conn->tag = tag;
    CURL *easy = curl_easy_init();
    if (!easy) {
        free(conn);
        return -1;
    }
    curl_easy_setopt(easy, CURLOPT_URL, url);
    curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, write_cb);
    curl_easy_setopt(easy, CURLOPT_WRITEDATA, conn);
    curl_easy_setopt(easy, CURLOPT_PRIVATE, conn);
    curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(easy, CURLOPT_FRESH_CONNECT, (long)fresh_connect);
    curl_easy_setopt(easy, CURLOPT_FORBID_REUSE, (long)fresh_connect);
    curl_easy_setopt(easy, CURLOPT_TIMEOUT, 60L);
    CURLMcode rc = curl_multi_add_handle(g->multi, easy);
    if (rc != CURLM_OK) {
        curl_easy_cleanup(easy);
        free(conn);
        return -1;
    }
    conn->easy = easy;
    LINK(g->conns, conn);
    g->transfers++;
    return 0;
}

int curl_ev_running(const curl_ev *g) { return g->transfers; }

int curl_ev_watched_sockets(const curl_ev *g) { return g->sockets; }

void curl_ev_free(curl_ev *g) {
    while (g->conns) {
        conn_info *conn = g->conns;
        UNLINK(g->conns, conn);
        curl_multi_remove_handle(g->multi, conn->easy);
        curl_easy_cleanup(conn->easy);
        free(conn);
    }
    curl_multi_cleanup(g->multi);
    while (g->socks) remsock(g->socks, g);  /* any curl did not remove */
    ev_timer_stop(g->loop, &g->timer_event);
    free(g);
}
