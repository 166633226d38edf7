/* Helper threads that share the rows of a kernel call with its caller.

   A box read decodes 1 to 8 chunks of tens of KiB: 40-300 us of work.  Handing
   half of it to a pool thread costs more than it saves when that thread sleeps:
   waking it takes 15-80 us on a virtual machine, and the pool's Python
   (futures, locks, the GIL) adds more.  This helper is a plain C thread that
   never touches Python: after each job it spins for `zf_helper_spin_ns` (pause
   instructions, no system calls) before it sleeps on a condition variable, so
   back-to-back box reads find it awake.

   A full read of many chunks is one kernel call too: its rows are shared with
   as many helpers as the caller asks for (`config threads` - 1), so that a read
   holds the GIL for one call however many threads decode it, where one call per
   thread of the pool held it for each.

   A caller fills a job (`zf_job` first in its own struct), posts it with
   `zf_helper_post(job, helpers)`, claims rows itself from the job's atomic
   cursor, and then calls `zf_helper_finish`, which closes the job to helpers
   that have not joined it and waits until those that did have let it go -- at
   most the rest of the one row each is on.  So a late helper never delays the
   caller by more than a row, and the job (memory the caller owns) is never
   touched after `zf_helper_finish` returns.

   The gate (`zf_helper_gate`, one atomic word) says whether a job is open, how
   many helpers it takes, and how many have joined: a helper joins by
   incrementing it while the job is open and not full, reads the job only
   then, and leaves by decrementing it (its last touch of the job).  One job is
   open at a time: a caller that finds the gate taken (another thread's read)
   runs its rows alone.  Each helper keeps its own decoding state (`zf_worker`),
   which each job's `run` grows as it needs.

   Windows: no helper; `zf_helper_post` returns 0 and callers run alone. */
#ifndef ZF_HELPER_H
#define ZF_HELPER_H

#include <stdint.h>
#include <stdlib.h>

/* one thread's decoding state (a zstd context, a scratch buffer for one decoded
   chunk, a buffer for one file, one for two blosc blocks, a gzip/zlib decompressor of
   the library `inflater_kind`: zf_inflate.h), grown by the jobs that use it */
typedef struct zf_worker {
    void* dctx;
    uint8_t* scratch;
    int64_t scratch_cap;
    uint8_t* filebuf;
    int64_t filecap;
    uint8_t* blocks;
    int64_t blocks_cap;
    int left;  /* the job's run let it go early (zf_helper_leave) */
    void* inflater;
    int inflater_kind;
} zf_worker;

typedef struct zf_job zf_job;
struct zf_job {
    /* claim rows of the job until none is left, with `worker`'s state */
    void (*run)(zf_job* job, zf_worker* worker);
};

#if defined(_WIN32)

static int zf_helper_post(zf_job* job, int helpers) { (void)job; (void)helpers; return 0; }
static void zf_helper_finish(zf_job* job) { (void)job; }
static void zf_helper_leave(zf_worker* w) { (void)w; }
static int64_t zf_helper_jobs(void) { return 0; }
static void zf_helper_count_rows(int64_t n) { (void)n; }
static int64_t zf_helper_rows(void) { return 0; }
static int zf_helper_threads(void) { return 0; }

#else

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <time.h>
#if defined(__linux__)
#include <sys/prctl.h>
#endif

/* the most helper threads (a caller asking for more gets this many) */
#define ZF_HELPERS_MAX 1023
/* the gate: JOINED helpers in the low bits, WANT (how many the open job takes)
   above them, OPEN and SETUP (a caller is posting) flags above that */
#define ZF_GATE_JOINED ((int64_t)0xFFFFF)
#define ZF_GATE_WANT_SHIFT 20
#define ZF_GATE_OPEN ((int64_t)1 << 41)
#define ZF_GATE_SETUP ((int64_t)1 << 42)

static int64_t zf_helper_gate = 0;      /* (atomic) see above */
static zf_job* zf_helper_job = NULL;    /* (atomic) the open job: read by joined helpers */
static int zf_helper_sleeping = 0;      /* (atomic) helpers waiting on zf_helper_wake */
static int zf_helper_started = 0;       /* under zf_helper_lock: helper threads running */
static int zf_helper_failed = 0;        /* under zf_helper_lock: a thread could not start */
static int zf_helper_forks = 0;         /* pthread_atfork registered */
static int64_t zf_helper_taken = 0;     /* (atomic) jobs helpers joined, for tests */
static int64_t zf_helper_done = 0;      /* (atomic) rows helpers did, for tests */
static int64_t zf_helper_spin_ns = 300000;
static pthread_mutex_t zf_helper_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t zf_helper_wake = PTHREAD_COND_INITIALIZER;

static inline void zf_helper_pause(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static int64_t zf_helper_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + (int64_t)t.tv_nsec;
}

/* Join the open job if it takes another helper: the job, or NULL. */
static zf_job* zf_helper_join(int order) {
    int64_t g = __atomic_load_n(&zf_helper_gate, order);
    for (;;) {
        if (!(g & ZF_GATE_OPEN)
                || (g & ZF_GATE_JOINED) >= ((g >> ZF_GATE_WANT_SHIFT) & ZF_GATE_JOINED))
            return NULL;
        if (__atomic_compare_exchange_n(&zf_helper_gate, &g, g + 1, 0, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE))
            return __atomic_load_n(&zf_helper_job, __ATOMIC_ACQUIRE);
    }
}

static void* zf_helper_main(void* arg) {
    zf_worker w = {NULL, NULL, 0, NULL, 0, NULL, 0, 0, NULL, 0};
    zf_job* job;
    int64_t until;
    unsigned k;
    (void)arg;
#if defined(__linux__)
    prctl(PR_SET_NAME, "zarrfast-helper", 0, 0, 0);  /* (as top -H and py-spy show it) */
#endif
    for (;;) {
        job = zf_helper_join(__ATOMIC_RELAXED);
        /* spin a while, then sleep; after a job it let go early (an I/O helper's, whose
           caller goes on decoding for longer than a spin), sleep at once: a spinning
           helper takes the core from the caller on a machine that is busy */
        if (job == NULL && !w.left) {
            until = zf_helper_now() + zf_helper_spin_ns;
            for (k = 1; (job = zf_helper_join(__ATOMIC_RELAXED)) == NULL; k++) {
                zf_helper_pause();
                if (k % 64 == 0 && zf_helper_now() > until) break;
            }
        }
        if (job == NULL) {
            pthread_mutex_lock(&zf_helper_lock);
            __atomic_add_fetch(&zf_helper_sleeping, 1, __ATOMIC_SEQ_CST);
            /* (seq_cst: ordered after the store above, as zf_helper_post's load of
               zf_helper_sleeping is after its opening of the gate) */
            while ((job = zf_helper_join(__ATOMIC_SEQ_CST)) == NULL)
                pthread_cond_wait(&zf_helper_wake, &zf_helper_lock);
            __atomic_sub_fetch(&zf_helper_sleeping, 1, __ATOMIC_SEQ_CST);
            pthread_mutex_unlock(&zf_helper_lock);
        }
        __atomic_fetch_add(&zf_helper_taken, 1, __ATOMIC_RELAXED);
        w.left = 0;
        job->run(job, &w);
        if (!w.left)
            __atomic_fetch_sub(&zf_helper_gate, 1, __ATOMIC_RELEASE);  /* (the last touch) */
    }
    return NULL;
}

/* in a forked child the helpers do not exist: start others when asked */
static void zf_helper_after_fork(void) {
    pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t wake = PTHREAD_COND_INITIALIZER;
    zf_helper_lock = lock;
    zf_helper_wake = wake;
    zf_helper_gate = 0;
    zf_helper_job = NULL;
    zf_helper_sleeping = 0;
    zf_helper_started = 0;
    zf_helper_failed = 0;
}

/* Start helper threads until `want` run (at most ZF_HELPERS_MAX): how many run. */
static int zf_helper_start(int want) {
    pthread_t t;
    pthread_attr_t attr;
    sigset_t all, old;
    int started;
    if (want > ZF_HELPERS_MAX) want = ZF_HELPERS_MAX;
    started = __atomic_load_n(&zf_helper_started, __ATOMIC_ACQUIRE);
    if (started >= want) return started;
    pthread_mutex_lock(&zf_helper_lock);
    if (!zf_helper_forks)
        zf_helper_forks = pthread_atfork(NULL, NULL, zf_helper_after_fork) == 0;
    while (zf_helper_forks && !zf_helper_failed && zf_helper_started < want) {
        if (pthread_attr_init(&attr) != 0) {
            zf_helper_failed = 1;
            break;
        }
        /* every asynchronous signal blocked in the helpers (they inherit the mask):
           they go to Python's threads, and the helpers' reads are never interrupted;
           the synchronous ones stay, so that a crash in one still reaches
           faulthandler */
        sigfillset(&all);
        sigdelset(&all, SIGSEGV);
        sigdelset(&all, SIGBUS);
        sigdelset(&all, SIGFPE);
        sigdelset(&all, SIGILL);
        sigdelset(&all, SIGABRT);
        sigdelset(&all, SIGTRAP);
#ifdef SIGSYS
        sigdelset(&all, SIGSYS);
#endif
        pthread_sigmask(SIG_SETMASK, &all, &old);
        if (pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED) == 0
                && pthread_create(&t, &attr, zf_helper_main, NULL) == 0)
            __atomic_store_n(&zf_helper_started, zf_helper_started + 1, __ATOMIC_RELEASE);
        else
            zf_helper_failed = 1;  /* (the ones running still serve) */
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        pthread_attr_destroy(&attr);
    }
    started = zf_helper_started;
    pthread_mutex_unlock(&zf_helper_lock);
    return started;
}

/* Post `job` for up to `helpers` helper threads (starting them the first time).
   1: posted (call zf_helper_finish before the job's memory goes); 0: not posted
   (no helper, or another job is open), the caller runs every row itself. */
static int zf_helper_post(zf_job* job, int helpers) {
    int64_t expected = 0;
    int running;
    if (helpers <= 0) return 0;
    running = zf_helper_start(helpers);
    if (running <= 0) return 0;
    if (helpers > running) helpers = running;
    if (!__atomic_compare_exchange_n(&zf_helper_gate, &expected, ZF_GATE_SETUP, 0,
                                     __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
        return 0;
    __atomic_store_n(&zf_helper_job, job, __ATOMIC_RELAXED);
    __atomic_store_n(&zf_helper_gate,
                     ZF_GATE_OPEN | ((int64_t)helpers << ZF_GATE_WANT_SHIFT), __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&zf_helper_sleeping, __ATOMIC_SEQ_CST)) {
        pthread_mutex_lock(&zf_helper_lock);
        pthread_cond_broadcast(&zf_helper_wake);
        pthread_mutex_unlock(&zf_helper_lock);
    }
    return 1;
}

/* After the caller's own rows: close the job to helpers that have not joined it,
   and wait until those that did let it go.  Their writes are then visible to the
   caller.  The wait is the rest of each helper's row: spun at first, then yielded,
   then (a read blocked on a slow file system) slept in steps of 50 us, so as not to
   burn a core.  (Once this job's helpers are gone the gate is free; another caller
   may open it meanwhile: a gate open or being set up is not this job's.) */
static void zf_helper_finish(zf_job* job) {
    int64_t g = __atomic_load_n(&zf_helper_gate, __ATOMIC_RELAXED);
    unsigned k = 0;
    struct timespec nap = {0, 50000};
    (void)job;
    while (!__atomic_compare_exchange_n(&zf_helper_gate, &g, g & ZF_GATE_JOINED, 0,
                                        __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
    }
    for (;;) {
        g = __atomic_load_n(&zf_helper_gate, __ATOMIC_ACQUIRE);
        if ((g & (ZF_GATE_OPEN | ZF_GATE_SETUP)) || (g & ZF_GATE_JOINED) == 0) break;
        if (++k < 4096) zf_helper_pause();
        else if (k < 8192) sched_yield();
        else nanosleep(&nap, NULL);
    }
}

/* Inside a job's `run`: let the job go now (its last touch of the job's memory; the
   caller's zf_helper_finish no longer waits for this helper, and the job takes no
   other in its place), to go on with work that no longer needs it (an I/O helper
   reading files into memory of its own). */
static void zf_helper_leave(zf_worker* w) {
    int64_t g = __atomic_load_n(&zf_helper_gate, __ATOMIC_RELAXED), left;
    w->left = 1;
    /* (while the job is open it takes one helper fewer, so that this one does not join
       it again; once its caller closed it, only the joined count is this helper's) */
    do {
        left = g - 1;
        if (g & ZF_GATE_OPEN) left -= (int64_t)1 << ZF_GATE_WANT_SHIFT;
    } while (!__atomic_compare_exchange_n(&zf_helper_gate, &g, left, 0, __ATOMIC_RELEASE,
                                          __ATOMIC_RELAXED));
}

static void zf_helper_count_rows(int64_t n) {
    __atomic_fetch_add(&zf_helper_done, n, __ATOMIC_RELAXED);
}

static int64_t zf_helper_rows(void) {
    return __atomic_load_n(&zf_helper_done, __ATOMIC_RELAXED);
}

static int64_t zf_helper_jobs(void) {
    return __atomic_load_n(&zf_helper_taken, __ATOMIC_RELAXED);
}

static int zf_helper_threads(void) {
    return __atomic_load_n(&zf_helper_started, __ATOMIC_ACQUIRE);
}

#endif
#endif
