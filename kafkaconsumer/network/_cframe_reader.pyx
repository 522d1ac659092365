# cython: language_level=3
"""The rest of one large response read off a plaintext socket by a thread of its own that never
takes the GIL (Linux only).

A connection that has the first bytes of a large response hands the socket and the response's
buffer to a :class:`FrameRead`: a POSIX thread receives the remaining bytes into the buffer
while the interpreter's threads decode the previous response, and when it is done (all bytes
in, the peer gone, an error, or cancelled) it writes one byte to ``notify_fd`` (the network
client's wake-up socket) so that the thread polling the network looks at it. Receiving is the
copy out of the kernel, about a fifth of the consumer's CPU on 1 KiB records; on a thread
that needs no GIL it runs on another core while records are made.

A read may also be armed before its response begins (``whole_response``): the thread then
takes the response's 4-byte size first and goes on only when the response fits the buffer it
was given. A connection whose last response was large arms one for the next as soon as a
request is in flight, so that the response is taken off the socket from its first byte, not
when the polling thread next looks.

While a read runs the connection must not read the socket itself (it stops selecting it for
reading) and must :meth:`FrameRead.cancel` it, which waits for the thread, before it closes the
socket. The thread blocks every signal, so Ctrl-C still reaches the main thread.
"""

from cpython.buffer cimport PyBUF_WRITABLE, PyBuffer_Release, PyObject_GetBuffer
from libc.errno cimport EAGAIN, EINTR, errno
from libc.string cimport memset

cdef extern from *:
    """
    #ifdef __linux__
    #include <pthread.h>
    #include <poll.h>
    #include <signal.h>
    #include <sys/eventfd.h>
    #include <sys/socket.h>
    #include <unistd.h>
    #define KC_FR_AVAILABLE 1
    /* glibc 2.34 moved the pthread functions into libc under new symbol versions; binding
     * the original ones keeps a wheel built on a newer system loadable on older ones (the
     * manylinux tag auditwheel gives is the oldest glibc whose symbols are used). */
    #if defined(__GLIBC__) && defined(__x86_64__)
    __asm__(".symver pthread_create,pthread_create@GLIBC_2.2.5");
    __asm__(".symver pthread_join,pthread_join@GLIBC_2.2.5");
    __asm__(".symver pthread_sigmask,pthread_sigmask@GLIBC_2.2.5");
    #elif defined(__GLIBC__) && defined(__aarch64__)
    __asm__(".symver pthread_create,pthread_create@GLIBC_2.17");
    __asm__(".symver pthread_join,pthread_join@GLIBC_2.17");
    __asm__(".symver pthread_sigmask,pthread_sigmask@GLIBC_2.17");
    #endif
    #else
    #define KC_FR_AVAILABLE 0
    #endif
    #include <errno.h>
    #include <stddef.h>
    #include <stdint.h>

    /* States of a read: written by the reading thread with release order, read with acquire
     * order by the interpreter's threads. */
    #define KC_FR_NEW 0
    #define KC_FR_RUNNING 1
    #define KC_FR_DONE 2

    typedef struct {
        int fd;              /* the socket, owned by the connection */
        int notify_fd;       /* written once when the read ends */
        int cancel_fd;       /* an eventfd: readable once cancel was asked */
        char *buf;
        size_t pos;          /* bytes of the buffer filled; the reader's until DONE */
        size_t end;
        size_t lowat_max;    /* 0: leave SO_RCVLOWAT alone */
        int error;           /* 0 ok, -1 peer closed, -2 cancelled, else an errno */
        int state;
        int cancel;          /* set (atomically) before cancel_fd is written */
        unsigned char hdr[4];
        int hdr_got;         /* 4 unless the read started before the response's size */
        int64_t size;        /* the size read, or -1 */
        int begun;           /* set (atomically) once the response's size is in */
    #if KC_FR_AVAILABLE
        pthread_t thread;
        pid_t owner;         /* the process whose thread it is (a forked child has none) */
    #endif
    } kc_frame_read;

    #if KC_FR_AVAILABLE
    /* This process's id, cached: kc_fr_state() runs on every look at a read (several per
     * poll), and getpid() is a system call each time. Set at import; a forked child sets it
     * anew in an atfork handler, before any of its code runs. */
    static pid_t kc_fr_pid = 0;

    static void kc_fr_refresh_pid(void) { kc_fr_pid = getpid(); }

    /* 0, or an errno; once, at import, with the GIL held. */
    static int kc_fr_init(void) {
        kc_fr_refresh_pid();
        return pthread_atfork(NULL, NULL, kc_fr_refresh_pid);
    }

    static void kc_fr_set_lowat(kc_frame_read *r, int *current, size_t want) {
        int v = (int)want;
        if (v != *current &&
            setsockopt(r->fd, SOL_SOCKET, SO_RCVLOWAT, &v, sizeof(v)) == 0)
            *current = v;
    }

    static void *kc_fr_main(void *arg) {
        kc_frame_read *r = (kc_frame_read *)arg;
        struct pollfd fds[2];
        int lowat = 1;
        int err = 0;
        char one = 0;
        fds[0].fd = r->fd;
        fds[0].events = POLLIN;
        fds[1].fd = r->cancel_fd;
        fds[1].events = POLLIN;
        for (;;) {
            ssize_t n;
            if (__atomic_load_n(&r->cancel, __ATOMIC_ACQUIRE)) {
                err = -2;
                break;
            }
            if (r->hdr_got < 4) {
                /* The response's size first (a read armed before the response began). */
                n = recv(r->fd, r->hdr + r->hdr_got, 4 - r->hdr_got, MSG_DONTWAIT);
                if (n > 0) {
                    r->hdr_got += (int)n;
                    if (r->hdr_got == 4) {
                        int64_t size = ((int64_t)r->hdr[0] << 24) | ((int64_t)r->hdr[1] << 16) |
                                       ((int64_t)r->hdr[2] << 8) | (int64_t)r->hdr[3];
                        if (r->hdr[0] & 0x80)
                            size -= (int64_t)1 << 32;
                        r->size = size;
                        if (size < 0 || (size_t)size > r->end) {
                            err = -3; /* the caller checks it and finds a buffer for it */
                            break;
                        }
                        r->end = (size_t)size;
                        __atomic_store_n(&r->begun, 1, __ATOMIC_RELEASE);
                    }
                    continue;
                }
            } else {
                if (r->pos >= r->end)
                    break;
                n = recv(r->fd, r->buf + r->pos, r->end - r->pos, MSG_DONTWAIT);
                if (n > 0) {
                    r->pos += (size_t)n;
                    continue;
                }
            }
            if (n == 0) {
                err = -1;
                break;
            }
            if (errno == EINTR)
                continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK) {
                err = errno;
                break;
            }
            if (r->lowat_max && r->hdr_got == 4) {
                size_t rest = r->end - r->pos;
                kc_fr_set_lowat(r, &lowat, rest < r->lowat_max ? rest : r->lowat_max);
            }
            if (poll(fds, 2, -1) < 0 && errno != EINTR) {
                err = errno;
                break;
            }
            if (fds[1].revents) {
                err = -2;
                break;
            }
        }
        if (r->lowat_max && lowat != 1)
            kc_fr_set_lowat(r, &lowat, 1);
        r->error = err;
        __atomic_store_n(&r->state, KC_FR_DONE, __ATOMIC_RELEASE);
        if (r->notify_fd >= 0) {
            ssize_t w;
            do {
                w = write(r->notify_fd, &one, 1);
            } while (w < 0 && errno == EINTR);
        }
        return NULL;
    }

    /* 0, or an errno. The thread starts with every signal blocked. */
    static int kc_fr_start(kc_frame_read *r) {
        sigset_t all, old;
        int rc;
        r->cancel_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        if (r->cancel_fd < 0)
            return errno;
        sigfillset(&all);
        pthread_sigmask(SIG_BLOCK, &all, &old);
        r->state = KC_FR_RUNNING;
        r->owner = kc_fr_pid;
        rc = pthread_create(&r->thread, NULL, kc_fr_main, r);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (rc != 0) {
            r->state = KC_FR_NEW;
            close(r->cancel_fd);
            r->cancel_fd = -1;
        }
        return rc;
    }

    /* Ask the thread to stop (when ``cancel``) and wait for it; call once per started read.
     * In a forked child there is no thread to wait for (fork copies only the calling one). */
    static void kc_fr_join(kc_frame_read *r, int cancel) {
        if (r->owner != kc_fr_pid) {
            close(r->cancel_fd);
            r->cancel_fd = -1;
            return;
        }
        if (cancel) {
            unsigned long long v = 1;
            __atomic_store_n(&r->cancel, 1, __ATOMIC_RELEASE);
            ssize_t w;
            do {
                w = write(r->cancel_fd, &v, sizeof(v));
            } while (w < 0 && errno == EINTR);
        }
        pthread_join(r->thread, NULL);
        close(r->cancel_fd);
        r->cancel_fd = -1;
    }
    #else
    static int kc_fr_init(void) { return 0; }
    static int kc_fr_start(kc_frame_read *r) { (void)r; return ENOSYS; }
    static void kc_fr_join(kc_frame_read *r, int cancel) { (void)r; (void)cancel; }
    #endif

    static int kc_fr_state(kc_frame_read *r) {
        int state = __atomic_load_n(&r->state, __ATOMIC_ACQUIRE);
    #if KC_FR_AVAILABLE
        if (state == KC_FR_RUNNING && r->owner != kc_fr_pid) {
            /* A forked child's copy of a read its parent's thread was doing: ended, as if
             * cancelled, so that the child's connection closes instead of waiting. */
            r->error = -2;
            state = KC_FR_DONE;
            __atomic_store_n(&r->state, state, __ATOMIC_RELEASE);
        }
    #endif
        return state;
    }

    static int kc_fr_receiving(kc_frame_read *r) {
        return kc_fr_state(r) == KC_FR_RUNNING && __atomic_load_n(&r->begun, __ATOMIC_ACQUIRE);
    }
    """
    int KC_FR_AVAILABLE
    int KC_FR_NEW
    int KC_FR_RUNNING
    int KC_FR_DONE
    ctypedef struct kc_frame_read:
        int fd
        int notify_fd
        int cancel_fd
        char *buf
        size_t pos
        size_t end
        size_t lowat_max
        int error
        int state
        int cancel
        int hdr_got
        long long size
        int begun
    int kc_fr_init()
    int kc_fr_start(kc_frame_read *r) nogil
    void kc_fr_join(kc_frame_read *r, int cancel) nogil
    int kc_fr_state(kc_frame_read *r) nogil
    int kc_fr_receiving(kc_frame_read *r) nogil

#: Whether this platform has the reading thread (Linux).
AVAILABLE = bool(KC_FR_AVAILABLE)

if kc_fr_init() != 0:
    raise OSError("the reading threads' fork handler could not be registered")

#: :attr:`FrameRead.error` when the peer closed the connection before the response's end.
PEER_CLOSED = -1
#: :attr:`FrameRead.error` when :meth:`FrameRead.cancel` stopped the read.
CANCELLED = -2
#: :attr:`FrameRead.error` when a whole-response read found a size that is negative or larger
#: than its buffer (nothing after the 4 size bytes was read).
NEEDS_BUFFER = -3


cdef class FrameRead:
    """Bytes ``start`` to ``end`` of ``buffer`` received from socket ``fd`` on a thread of
    their own; see the module's docstring.

    Thread-safety: :meth:`start`, :attr:`done`, :meth:`finish` and :meth:`cancel` are called by
    the one thread driving the connection (under its network lock); the reading thread writes
    only the buffer and the read's own state, published by its release of :attr:`done`.
    """

    cdef kc_frame_read _r
    cdef Py_buffer _view
    cdef bint _has_view
    cdef bint _joined
    cdef readonly object buffer
    cdef readonly bint whole_response

    def __cinit__(
        self, int fd, object buffer, Py_ssize_t start, Py_ssize_t end, int notify_fd,
        Py_ssize_t lowat_max=0, bint whole_response=False,
    ):
        memset(&self._r, 0, sizeof(kc_frame_read))
        self._r.cancel_fd = -1
        self._has_view = False
        self._joined = True
        PyObject_GetBuffer(buffer, &self._view, PyBUF_WRITABLE)
        self._has_view = True
        if start < 0 or end < start or end > self._view.len:
            PyBuffer_Release(&self._view)
            self._has_view = False
            raise ValueError(f"bytes {start}-{end} are not within a buffer of {self._view.len}")
        self._r.fd = fd
        self._r.notify_fd = notify_fd
        self._r.buf = <char *>self._view.buf
        self._r.pos = <size_t>start
        self._r.end = <size_t>end
        self._r.lowat_max = <size_t>lowat_max if lowat_max > 0 else 0
        # A whole response: its 4-byte size first, then up to ``end`` bytes of it from
        # ``start`` (0); one that does not fit ends the read with NEEDS_BUFFER.
        self._r.hdr_got = 0 if whole_response else 4
        self._r.begun = 0 if whole_response else 1
        self.buffer = buffer
        self.whole_response = whole_response
        self._r.size = -1
        self._r.state = KC_FR_NEW

    def start(self) -> None:
        """Start the reading thread (once); raises OSError when the platform refuses one."""
        if self._r.state != KC_FR_NEW:
            return
        rc = kc_fr_start(&self._r)
        if rc != 0:
            raise OSError(rc, "the response's reading thread could not start")
        self._joined = False

    @property
    def started(self) -> bool:
        """Whether :meth:`start` started the thread."""
        return kc_fr_state(&self._r) != KC_FR_NEW

    @property
    def done(self) -> bool:
        """Whether the thread has ended (its results may be read after :meth:`finish`)."""
        return kc_fr_state(&self._r) == KC_FR_DONE

    @property
    def receiving(self) -> bool:
        """Whether the thread runs and the response has begun (its size is in): it ends
        without anything else arriving."""
        return bool(kc_fr_receiving(&self._r))

    def finish(self) -> tuple[int, int]:
        """Wait for the ended thread and release the buffer; returns ``(position, error)``:
        the end of the bytes received, and 0, :data:`PEER_CLOSED`, :data:`CANCELLED`,
        :data:`NEEDS_BUFFER` or an errno."""
        self._join(False)
        return self._r.pos, self._r.error

    @property
    def size(self) -> int:
        """The size a whole-response read found in the response's first 4 bytes (-1 until
        they are in)."""
        return self._r.size

    @property
    def size_bytes_read(self) -> int:
        """How many of the response's 4 size bytes a whole-response read took off the
        socket (4 for a read of the rest of a response)."""
        return self._r.hdr_got

    def cancel(self) -> None:
        """Stop the thread (it returns within one wait of its own) and wait for it; the
        buffer is released. Nothing is read from the socket after this returns."""
        self._join(True)

    cdef void _join(self, bint cancel):
        if not self._joined:
            with nogil:
                kc_fr_join(&self._r, cancel)
            self._joined = True
        if self._has_view:
            PyBuffer_Release(&self._view)
            self._has_view = False

    def __dealloc__(self):
        # A read dropped while running (its owner was interrupted) still must not outlive
        # its buffer.
        if not self._joined:
            kc_fr_join(&self._r, True)
            self._joined = True
        if self._has_view:
            PyBuffer_Release(&self._view)
            self._has_view = False
