/* The embedded coordinator's network thread: Kafka's network threads, for steady heartbeats.
 *
 * A thread of its own accepts the connections of one plaintext listener and reads them. Each
 * client connection gets a socketpair: the asyncio server serves the other end exactly as it
 * serves any connection, and this thread passes the client's requests to it and its answers back.
 * One request is answered here instead: the heartbeat the server last told this connection's
 * entry about (`remember`), when it comes again byte for byte but for its correlation id, and
 * nothing the connection sent before is still unanswered. The answer is the remembered one with
 * the new correlation id, and the time is noted for the server to renew the member's session
 * (`renewals`). The server forgets every entry (`forget_all`) before anything else could change
 * what a heartbeat is answered, so an answer given here is one the server would give.
 *
 * This file frames requests and answers (a 4-byte size before each) and compares and copies
 * bytes the server's codec made: it encodes and decodes no Kafka message.
 *
 * Locking: one mutex guards every connection, entry and list. The thread holds it while it
 * handles what one epoll_wait returned; the server's calls hold it briefly. The thread never
 * takes the GIL, so the server's calls may hold it while they wait for the mutex.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* A side is read only while what waits to go the other way is less than one read: like the
 * server's own connections (a request the server has not taken stays in the socket), a client
 * that sends faster than the server reads, or reads slower than it answers, holds at most a
 * read or two here, whatever it sends. */
#define READ_CHUNK 65536
#define KEPT_CAPACITY 16384  /* what an empty buffer keeps of its room */
#define ACCEPT_PAUSE_MS 1000  /* out of descriptors or memory: accept again after this, as asyncio does */
#define EVENTS_PER_WAIT 256

typedef struct {
    char *data;
    size_t start, end, cap;
} Buf;

static size_t buf_len(const Buf *b) { return b->end - b->start; }

static int buf_reserve(Buf *b, size_t extra) {
    size_t used = b->end - b->start;
    if (b->end + extra <= b->cap) return 0;
    if (b->start > 0 && used + extra <= b->cap) {
        memmove(b->data, b->data + b->start, used);
        b->start = 0;
        b->end = used;
        return 0;
    }
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < used + extra) cap *= 2;
    char *data = malloc(cap);
    if (data == NULL) return -1;
    if (used) memcpy(data, b->data + b->start, used);
    free(b->data);
    b->data = data;
    b->cap = cap;
    b->start = 0;
    b->end = used;
    return 0;
}

static int buf_append(Buf *b, const char *p, size_t n) {
    if (buf_reserve(b, n)) return -1;
    memcpy(b->data + b->end, p, n);
    b->end += n;
    return 0;
}

static void buf_free(Buf *b);

static void buf_consume(Buf *b, size_t n) {
    b->start += n;
    if (b->start == b->end) {
        b->start = b->end = 0;
        if (b->cap > KEPT_CAPACITY) buf_free(b);  /* a burst's room goes back once it is sent */
    }
}

static void buf_free(Buf *b) {
    free(b->data);
    b->data = NULL;
    b->start = b->end = b->cap = 0;
}

static uint32_t be32(const unsigned char *p) {
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

static int64_t now_ms(void) {
    /* The clock of Python's time.monotonic(), which the server's event loop reads. */
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

typedef struct Conn {
    uint64_t id;
    int client;          /* the client's socket; -1 once closed */
    int pair;            /* this thread's end of the socketpair; -1 once closed */
    Buf in;              /* read from the client, neither answered nor passed on yet */
    Buf to_client;
    Buf to_pair;
    uint64_t forward_left;     /* bytes of the request being passed on still to come */
    unsigned char request_size[4];
    int request_size_len;      /* bytes of the next request's size passed on so far */
    long outstanding;          /* requests passed on and not answered yet */
    unsigned char answer_size[4];
    int answer_size_len;
    uint64_t answer_left;      /* bytes of the server's answer being passed back still to come */
    char *request;             /* the remembered heartbeat, without its size */
    size_t request_len;
    char *answer;              /* its answer, with its size */
    size_t answer_len;
    long renewal;              /* index in the renewals, or -1 */
    int pair_closed;           /* the server closed the connection: flush, then close */
    int client_eof;            /* the client sent all it will: the server is told, once it has it all */
    int pair_shut;
    uint32_t client_events, pair_events;
} Conn;

typedef struct {
    uint64_t id;
    int fd;
    char host[INET6_ADDRSTRLEN];
    int port;
} Accepted;

typedef struct {
    uint64_t id;
    int64_t ms;
} Renewal;

typedef struct {
    PyObject_HEAD
    pthread_mutex_t lock;
    pthread_t thread;
    int running;
    int stopping;
    int listen_fd;
    int epoll_fd;
    int wake_fd;     /* wakes the thread to stop */
    int notify_fd;   /* readable when connections were accepted */
    Conn **by_fd;    /* a connection by its client's fd and by its pair fd */
    size_t by_fd_len;
    uint32_t generation;
    Accepted *accepted;
    size_t accepted_len, accepted_cap;
    Renewal *renewals;
    size_t renewals_len, renewals_cap;
    long long answered;  /* heartbeats answered here, since the start */
    char scratch[READ_CHUNK];  /* what one read brings, before it is handled */
    int64_t accept_paused_until;  /* 0 while accepting */
    pid_t owner;         /* the process that started the thread (a forked child has no thread) */
} NetworkThread;

static int watch(NetworkThread *self, int fd, uint32_t events, int op) {
    struct epoll_event ev;
    memset(&ev, 0, sizeof ev);
    ev.events = events;
    ev.data.fd = fd;
    return epoll_ctl(self->epoll_fd, op, fd, &ev);
}

static void forget_entry(Conn *c) {
    free(c->request);
    free(c->answer);
    c->request = c->answer = NULL;
    c->request_len = c->answer_len = 0;
}

static void close_conn(NetworkThread *self, Conn *c) {
    if (c->client >= 0) {
        self->by_fd[c->client] = NULL;
        close(c->client);  /* closing removes it from the epoll set */
    }
    if (c->pair >= 0) {
        self->by_fd[c->pair] = NULL;
        close(c->pair);
    }
    forget_entry(c);
    buf_free(&c->in);
    buf_free(&c->to_client);
    buf_free(&c->to_pair);
    free(c);
}

static int note_renewal(NetworkThread *self, Conn *c) {
    int64_t ms = now_ms();
    if (c->renewal >= 0) {
        self->renewals[c->renewal].ms = ms;
        return 0;
    }
    if (self->renewals_len == self->renewals_cap) {
        size_t cap = self->renewals_cap ? self->renewals_cap * 2 : 256;
        Renewal *grown = realloc(self->renewals, cap * sizeof *grown);
        if (grown == NULL) return -1;
        self->renewals = grown;
        self->renewals_cap = cap;
    }
    self->renewals[self->renewals_len].id = c->id;
    self->renewals[self->renewals_len].ms = ms;
    c->renewal = (long)self->renewals_len++;
    return 0;
}

/* Answer what can be answered here, pass the rest on. -1: out of memory.
 *
 * Bytes are passed on as they arrive, so that the server sees a slow client's request begin
 * (its clocks for partial requests and idle connections run on what it reads); only when the
 * connection has a remembered heartbeat and nothing unanswered are a request's bytes held until
 * it is whole (at most the remembered request's size), to compare it. */
static int take_requests(NetworkThread *self, Conn *c) {
    while (buf_len(&c->in) > 0) {
        const unsigned char *p = (const unsigned char *)c->in.data + c->in.start;
        size_t avail = buf_len(&c->in);
        if (c->forward_left) {
            size_t n = avail < c->forward_left ? avail : (size_t)c->forward_left;
            if (buf_append(&c->to_pair, (const char *)p, n)) return -1;
            buf_consume(&c->in, n);
            c->forward_left -= n;
            continue;
        }
        if (c->request_size_len > 0 || c->outstanding > 0 || c->request == NULL) {
            /* Passed on, its size read on the way to count it. */
            size_t take = 4 - (size_t)c->request_size_len;
            if (take > avail) take = avail;
            memcpy(c->request_size + c->request_size_len, p, take);
            if (buf_append(&c->to_pair, (const char *)p, take)) return -1;
            buf_consume(&c->in, take);
            c->request_size_len += (int)take;
            if (c->request_size_len == 4) {
                c->request_size_len = 0;
                c->outstanding++;
                c->forward_left = be32(c->request_size);
            }
            continue;
        }
        if (avail < 4) break;
        uint32_t size = be32(p);
        if (size == c->request_len) {
            if (avail < 4 + (size_t)size) break;
            /* api key and version, then everything after the correlation id */
            if (memcmp(p + 4, c->request, 4) == 0 && memcmp(p + 12, c->request + 8, size - 8) == 0) {
                if (buf_reserve(&c->to_client, c->answer_len)) return -1;
                char *out = c->to_client.data + c->to_client.end;
                memcpy(out, c->answer, c->answer_len);
                memcpy(out + 4, p + 8, 4);  /* the correlation id */
                c->to_client.end += c->answer_len;
                buf_consume(&c->in, 4 + (size_t)size);
                if (note_renewal(self, c)) return -1;
                self->answered++;
                continue;
            }
        }
        /* Anything else, whatever its size (the server judges it): passed on. */
        c->outstanding++;
        c->forward_left = 4 + (uint64_t)size;
    }
    return 0;
}

/* Count the server's answers in what it wrote, so that a heartbeat is answered here only once
 * every request before it was. */
static void count_answers(Conn *c, const unsigned char *p, size_t n) {
    while (n > 0) {
        if (c->answer_left == 0) {
            size_t take = 4 - (size_t)c->answer_size_len;
            if (take > n) take = n;
            memcpy(c->answer_size + c->answer_size_len, p, take);
            c->answer_size_len += (int)take;
            p += take;
            n -= take;
            if (c->answer_size_len == 4) {
                c->answer_size_len = 0;
                c->answer_left = be32(c->answer_size);
                if (c->answer_left == 0 && c->outstanding > 0) c->outstanding--;
            }
            continue;
        }
        size_t take = n < c->answer_left ? n : (size_t)c->answer_left;
        p += take;
        n -= take;
        c->answer_left -= take;
        if (c->answer_left == 0 && c->outstanding > 0) c->outstanding--;
    }
}

/* Send what is waiting; -1 if the socket failed. */
static int flush(int fd, Buf *b) {
    while (buf_len(b) > 0) {
        ssize_t n = send(fd, b->data + b->start, buf_len(b), MSG_NOSIGNAL);
        if (n > 0) {
            buf_consume(b, (size_t)n);
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return 0;
        return -1;
    }
    return 0;
}

/* Read the client; 1 if the connection is gone. */
static int read_client(NetworkThread *self, Conn *c) {
    for (int round = 0; round < 4; round++) {
        ssize_t n = recv(c->client, self->scratch, READ_CHUNK, 0);
        if (n > 0) {
            if (buf_append(&c->in, self->scratch, (size_t)n) || take_requests(self, c))
                return close_conn(self, c), 1;
            if (n < READ_CHUNK || buf_len(&c->to_pair) > 0 || buf_len(&c->to_client) >= READ_CHUNK) break;
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
        if (n < 0) return close_conn(self, c), 1;  /* failed: so does the server's end */
        /* At the end of what the client sends, the server gets every byte of it (a held
         * heartbeat too) and then the end itself, and answers what it can, as it would on a
         * connection of its own. */
        c->client_eof = 1;
        if (buf_len(&c->in) && buf_append(&c->to_pair, c->in.data + c->in.start, buf_len(&c->in)))
            return close_conn(self, c), 1;
        buf_free(&c->in);
        break;
    }
    return 0;
}

/* Read the server's answers; 1 if the connection is gone. */
static int read_pair(NetworkThread *self, Conn *c) {
    for (int round = 0; round < 4; round++) {
        ssize_t n = recv(c->pair, self->scratch, READ_CHUNK, 0);
        if (n > 0) {
            if (buf_append(&c->to_client, self->scratch, (size_t)n)) return close_conn(self, c), 1;
            count_answers(c, (const unsigned char *)self->scratch, (size_t)n);
            if (n < READ_CHUNK || buf_len(&c->to_client) >= READ_CHUNK) break;
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
        /* The server closed the connection: what it wrote goes out, then the client's closes. */
        self->by_fd[c->pair] = NULL;
        close(c->pair);
        c->pair = -1;
        c->pair_closed = 1;
        buf_free(&c->in);
        buf_free(&c->to_pair);
        forget_entry(c);
        break;
    }
    if (c->outstanding == 0 && !c->pair_closed && take_requests(self, c)) return close_conn(self, c), 1;
    return 0;
}

/* Send what waits, close what is done, and read each side only while the other keeps up. */
static void settle(NetworkThread *self, Conn *c) {
    if (flush(c->client, &c->to_client)) {
        close_conn(self, c);
        return;
    }
    if (c->pair_closed && buf_len(&c->to_client) == 0) {
        close_conn(self, c);
        return;
    }
    if (c->pair >= 0 && flush(c->pair, &c->to_pair)) {
        close_conn(self, c);
        return;
    }
    if (c->client_eof && !c->pair_shut && c->pair >= 0 && buf_len(&c->to_pair) == 0) {
        shutdown(c->pair, SHUT_WR);
        c->pair_shut = 1;
    }
    int backed_up = buf_len(&c->to_client) >= READ_CHUNK || buf_len(&c->to_pair) > 0;
    uint32_t client_events = (c->pair_closed || c->client_eof || backed_up ? 0 : EPOLLIN) |
                             (buf_len(&c->to_client) ? EPOLLOUT : 0);
    if (client_events != c->client_events) {
        watch(self, c->client, client_events, EPOLL_CTL_MOD);
        c->client_events = client_events;
    }
    if (c->pair >= 0) {
        uint32_t pair_events = (buf_len(&c->to_client) >= READ_CHUNK ? 0 : EPOLLIN) |
                               (buf_len(&c->to_pair) ? EPOLLOUT : 0);
        if (pair_events != c->pair_events) {
            watch(self, c->pair, pair_events, EPOLL_CTL_MOD);
            c->pair_events = pair_events;
        }
    }
}

static int index_fd(NetworkThread *self, int fd, Conn *c) {
    if ((size_t)fd >= self->by_fd_len) {
        size_t len = self->by_fd_len ? self->by_fd_len : 1024;
        while (len <= (size_t)fd) len *= 2;
        Conn **grown = realloc(self->by_fd, len * sizeof *grown);
        if (grown == NULL) return -1;
        memset(grown + self->by_fd_len, 0, (len - self->by_fd_len) * sizeof *grown);
        self->by_fd = grown;
        self->by_fd_len = len;
    }
    self->by_fd[fd] = c;
    return 0;
}

static int out_of_room(int error) {
    return error == EMFILE || error == ENFILE || error == ENOBUFS || error == ENOMEM;
}

/* Out of descriptors or memory the listener stays ready while nothing can be accepted: stop
 * watching it for a while, as asyncio's event loop does, instead of spinning on it. */
static void pause_accepting(NetworkThread *self) {
    epoll_ctl(self->epoll_fd, EPOLL_CTL_DEL, self->listen_fd, NULL);
    self->accept_paused_until = now_ms() + ACCEPT_PAUSE_MS;
}

static void accept_clients(NetworkThread *self) {
    int accepted = 0;
    for (int round = 0; round < 64; round++) {
        struct sockaddr_storage peer;
        socklen_t peer_len = sizeof peer;
        int fd = accept4(self->listen_fd, (struct sockaddr *)&peer, &peer_len, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED) continue;
            if (out_of_room(errno)) pause_accepting(self);  /* it waits in the backlog */
            break;
        }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) < 0) {
            int failed = errno;
            close(fd);  /* accepted, but it cannot be served: closed, as a full server would */
            if (out_of_room(failed)) {
                pause_accepting(self);
                break;
            }
            continue;
        }
        Conn *c = calloc(1, sizeof *c);
        if (self->accepted_len == self->accepted_cap) {
            size_t cap = self->accepted_cap ? self->accepted_cap * 2 : 16;
            Accepted *grown = realloc(self->accepted, cap * sizeof *grown);
            if (grown != NULL) {
                self->accepted = grown;
                self->accepted_cap = cap;
            }
        }
        if (c == NULL || self->accepted_len == self->accepted_cap || index_fd(self, fd, c) ||
            index_fd(self, sv[0], c)) {
            if ((size_t)fd < self->by_fd_len) self->by_fd[fd] = NULL;
            free(c);
            close(fd);
            close(sv[0]);
            close(sv[1]);
            continue;
        }
        c->client = fd;
        c->pair = sv[0];
        c->renewal = -1;
        c->id = ((uint64_t)(uint32_t)sv[0] << 32) | ++self->generation;
        c->client_events = c->pair_events = EPOLLIN;
        watch(self, fd, EPOLLIN, EPOLL_CTL_ADD);
        watch(self, sv[0], EPOLLIN, EPOLL_CTL_ADD);
        Accepted *a = &self->accepted[self->accepted_len++];
        a->id = c->id;
        a->fd = sv[1];
        a->host[0] = '\0';
        a->port = 0;
        if (peer.ss_family == AF_INET) {
            struct sockaddr_in *in = (struct sockaddr_in *)&peer;
            inet_ntop(AF_INET, &in->sin_addr, a->host, sizeof a->host);
            a->port = ntohs(in->sin_port);
        } else if (peer.ss_family == AF_INET6) {
            struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&peer;
            inet_ntop(AF_INET6, &in6->sin6_addr, a->host, sizeof a->host);
            a->port = ntohs(in6->sin6_port);
        }
        accepted++;
    }
    if (accepted) {
        uint64_t one = 1;
        ssize_t ignored = write(self->notify_fd, &one, sizeof one);
        (void)ignored;
    }
}

static void *run(void *arg) {
    NetworkThread *self = arg;
    struct epoll_event events[EVENTS_PER_WAIT];
    for (;;) {
        int timeout = -1;
        if (self->accept_paused_until) {
            int64_t left = self->accept_paused_until - now_ms();
            timeout = left > 0 ? (int)left : 0;
        }
        int n = epoll_wait(self->epoll_fd, events, EVENTS_PER_WAIT, timeout);
        if (n < 0 && errno != EINTR) break;
        pthread_mutex_lock(&self->lock);
        if (self->stopping) {
            pthread_mutex_unlock(&self->lock);
            break;
        }
        if (self->accept_paused_until && now_ms() >= self->accept_paused_until) {
            self->accept_paused_until = 0;
            watch(self, self->listen_fd, EPOLLIN, EPOLL_CTL_ADD);
        }
        for (int i = 0; i < n; i++) {
            int fd = events[i].data.fd;
            uint32_t ev = events[i].events;
            if (fd == self->wake_fd) continue;
            if (fd == self->listen_fd) {
                accept_clients(self);
                continue;
            }
            Conn *c = (size_t)fd < self->by_fd_len ? self->by_fd[fd] : NULL;
            if (c == NULL) continue;
            int readable = ev & (EPOLLIN | EPOLLHUP | EPOLLERR);
            if (fd == c->client) {
                if ((c->pair_closed || c->client_eof) && (ev & (EPOLLHUP | EPOLLERR))) {
                    close_conn(self, c);  /* nobody left to flush to */
                    continue;
                }
                if (readable && !c->pair_closed && !c->client_eof && read_client(self, c)) continue;
            } else if (readable && read_pair(self, c)) {
                continue;
            }
            settle(self, c);
        }
        pthread_mutex_unlock(&self->lock);
    }
    return NULL;
}

static int NetworkThread_init(NetworkThread *self, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"listen_fd", NULL};
    int listen_fd;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "i", kwlist, &listen_fd)) return -1;
    if (self->running) {
        PyErr_SetString(PyExc_RuntimeError, "the network thread is already running");
        return -1;
    }
    self->listen_fd = listen_fd;
    self->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
    self->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    self->notify_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (self->epoll_fd < 0 || self->wake_fd < 0 || self->notify_fd < 0 ||
        watch(self, self->wake_fd, EPOLLIN, EPOLL_CTL_ADD) < 0 ||
        watch(self, listen_fd, EPOLLIN, EPOLL_CTL_ADD) < 0) {
        PyErr_SetFromErrno(PyExc_OSError);
        return -1;
    }
    if (pthread_mutex_init(&self->lock, NULL) != 0) {
        PyErr_SetString(PyExc_OSError, "cannot create the network thread's lock");
        return -1;
    }
    /* Signals stay with the interpreter's main thread. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int failed = pthread_create(&self->thread, NULL, run, self);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (failed) {
        PyErr_SetString(PyExc_OSError, "cannot start the network thread");
        return -1;
    }
    self->running = 1;
    self->owner = getpid();
    return 0;
}

static void stop_thread(NetworkThread *self) {
    if (!self->running || self->owner != getpid()) return;
    pthread_mutex_lock(&self->lock);
    self->stopping = 1;
    pthread_mutex_unlock(&self->lock);
    uint64_t one = 1;
    ssize_t ignored = write(self->wake_fd, &one, sizeof one);
    (void)ignored;
    Py_BEGIN_ALLOW_THREADS
    pthread_join(self->thread, NULL);
    Py_END_ALLOW_THREADS
    self->running = 0;
    for (size_t fd = 0; fd < self->by_fd_len; fd++) {
        Conn *c = self->by_fd[fd];
        if (c != NULL) close_conn(self, c);
    }
    for (size_t i = 0; i < self->accepted_len; i++) close(self->accepted[i].fd);
    self->accepted_len = 0;
}

static PyObject *NetworkThread_stop(NetworkThread *self, PyObject *Py_UNUSED(ignored)) {
    stop_thread(self);
    Py_RETURN_NONE;
}

static void NetworkThread_dealloc(NetworkThread *self) {
    stop_thread(self);
    if (self->epoll_fd > 0) close(self->epoll_fd);
    if (self->wake_fd > 0) close(self->wake_fd);
    if (self->notify_fd > 0) close(self->notify_fd);
    free(self->by_fd);
    free(self->accepted);
    free(self->renewals);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *NetworkThread_accepted(NetworkThread *self, PyObject *Py_UNUSED(ignored)) {
    uint64_t counter;
    ssize_t ignored = read(self->notify_fd, &counter, sizeof counter);
    (void)ignored;
    pthread_mutex_lock(&self->lock);
    PyObject *list = PyList_New((Py_ssize_t)self->accepted_len);
    for (size_t i = 0; list != NULL && i < self->accepted_len; i++) {
        Accepted *a = &self->accepted[i];
        PyObject *item = Py_BuildValue("(Kisi)", (unsigned long long)a->id, a->fd, a->host, a->port);
        if (item == NULL) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)i, item);
    }
    if (list != NULL) self->accepted_len = 0;
    pthread_mutex_unlock(&self->lock);
    return list;
}

static Conn *find(NetworkThread *self, unsigned long long id) {
    size_t fd = (size_t)(id >> 32);
    Conn *c = fd < self->by_fd_len ? self->by_fd[fd] : NULL;
    return c != NULL && c->id == id ? c : NULL;
}

static PyObject *NetworkThread_remember(NetworkThread *self, PyObject *args) {
    unsigned long long id;
    Py_buffer request, answer;
    if (!PyArg_ParseTuple(args, "Ky*y*", &id, &request, &answer)) return NULL;
    PyObject *result = Py_None;
    if (request.len < 8 || answer.len < 8 || request.len > UINT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "a request and an answer have 8 bytes at least");
        result = NULL;
    } else {
        pthread_mutex_lock(&self->lock);
        Conn *c = find(self, id);
        if (c != NULL && !c->pair_closed) {
            forget_entry(c);
            c->request = malloc((size_t)request.len);
            c->answer = malloc((size_t)answer.len);
            if (c->request == NULL || c->answer == NULL) {
                forget_entry(c);
            } else {
                memcpy(c->request, request.buf, (size_t)request.len);
                memcpy(c->answer, answer.buf, (size_t)answer.len);
                c->request_len = (size_t)request.len;
                c->answer_len = (size_t)answer.len;
            }
        }
        pthread_mutex_unlock(&self->lock);
    }
    PyBuffer_Release(&request);
    PyBuffer_Release(&answer);
    Py_XINCREF(result);
    return result;
}

static PyObject *NetworkThread_forget(NetworkThread *self, PyObject *arg) {
    unsigned long long id = PyLong_AsUnsignedLongLong(arg);
    if (id == (unsigned long long)-1 && PyErr_Occurred()) return NULL;
    pthread_mutex_lock(&self->lock);
    Conn *c = find(self, id);
    if (c != NULL) forget_entry(c);
    pthread_mutex_unlock(&self->lock);
    Py_RETURN_NONE;
}

static PyObject *NetworkThread_forget_all(NetworkThread *self, PyObject *Py_UNUSED(ignored)) {
    pthread_mutex_lock(&self->lock);
    for (size_t fd = 0; fd < self->by_fd_len; fd++) {
        Conn *c = self->by_fd[fd];
        if (c != NULL && c->client == (int)fd) forget_entry(c);
    }
    pthread_mutex_unlock(&self->lock);
    Py_RETURN_NONE;
}

static PyObject *NetworkThread_renewals(NetworkThread *self, PyObject *Py_UNUSED(ignored)) {
    pthread_mutex_lock(&self->lock);
    PyObject *list = PyList_New((Py_ssize_t)self->renewals_len);
    for (size_t i = 0; list != NULL && i < self->renewals_len; i++) {
        Renewal *r = &self->renewals[i];
        PyObject *item = Py_BuildValue("(KL)", (unsigned long long)r->id, (long long)r->ms);
        if (item == NULL) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)i, item);
    }
    if (list != NULL) {
        for (size_t i = 0; i < self->renewals_len; i++) {
            Conn *c = find(self, self->renewals[i].id);
            if (c != NULL) c->renewal = -1;
        }
        self->renewals_len = 0;
    }
    pthread_mutex_unlock(&self->lock);
    return list;
}

static PyObject *NetworkThread_answered(NetworkThread *self, void *Py_UNUSED(closure)) {
    pthread_mutex_lock(&self->lock);
    long long answered = self->answered;
    pthread_mutex_unlock(&self->lock);
    return PyLong_FromLongLong(answered);
}

static PyObject *NetworkThread_notify_fd(NetworkThread *self, void *Py_UNUSED(closure)) {
    return PyLong_FromLong(self->notify_fd);
}

static PyMethodDef NetworkThread_methods[] = {
    {"accepted", (PyCFunction)NetworkThread_accepted, METH_NOARGS,
     "The connections accepted since the last call: (id, the server's socket fd, host, port)."},
    {"remember", (PyCFunction)NetworkThread_remember, METH_VARARGS,
     "remember(id, request, answer): answer this request (without its size) with this framed "
     "answer, correlation id replaced, whenever the connection sends it again."},
    {"forget", (PyCFunction)NetworkThread_forget, METH_O,
     "forget(id): forget the connection's remembered request: it goes to the server again."},
    {"forget_all", (PyCFunction)NetworkThread_forget_all, METH_NOARGS,
     "Forget every remembered request: each goes to the server again."},
    {"renewals", (PyCFunction)NetworkThread_renewals, METH_NOARGS,
     "(id, monotonic ms) of the last heartbeat answered here on each connection, since the last call."},
    {"stop", (PyCFunction)NetworkThread_stop, METH_NOARGS,
     "Stop the thread and close every connection it holds."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef NetworkThread_getset[] = {
    {"notify_fd", (getter)NetworkThread_notify_fd, NULL, "Readable when connections were accepted.", NULL},
    {"answered", (getter)NetworkThread_answered, NULL, "Heartbeats answered by the thread.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject NetworkThreadType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "coordinator_api.server._network.NetworkThread",
    .tp_basicsize = sizeof(NetworkThread),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A listener's network thread (see the module).",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)NetworkThread_init,
    .tp_dealloc = (destructor)NetworkThread_dealloc,
    .tp_methods = NetworkThread_methods,
    .tp_getset = NetworkThread_getset,
};

static struct PyModuleDef network_module = {
    PyModuleDef_HEAD_INIT, "coordinator_api.server._network",
    "The embedded coordinator's network thread for steady heartbeats.", -1, NULL,
};

PyMODINIT_FUNC PyInit__network(void) {
    if (PyType_Ready(&NetworkThreadType) < 0) return NULL;
    PyObject *module = PyModule_Create(&network_module);
    if (module == NULL) return NULL;
    Py_INCREF(&NetworkThreadType);
    if (PyModule_AddObject(module, "NetworkThread", (PyObject *)&NetworkThreadType) < 0) {
        Py_DECREF(&NetworkThreadType);
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
