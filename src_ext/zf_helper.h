/* One helper thread that shares the rows of a small kernel call with its caller.

   A box read decodes 1 to 8 chunks of tens of KiB: 40-300 us of work.  Handing
   half of it to a pool thread costs more than it saves when that thread sleeps:
   waking it takes 15-80 us on a virtual machine, and the pool's Python
   (futures, locks, the GIL) adds more.  This helper is a plain C thread that
   never touches Python: after each job it spins for `zf_helper_spin_ns` (pause
   instructions, no system calls) before it sleeps on a condition variable, so
   back-to-back box reads find it awake.

   A caller fills a job (`zf_job` first in its own struct), posts it with
   `zf_helper_post`, claims rows itself from the job's atomic cursor, and then
   calls `zf_helper_finish`, which either takes the job back (the helper never
   started on it) or waits until the helper has let it go -- at most the rest of
   the one row the helper is on.  So a late helper never delays the caller by
   more than a row, and the job (memory the caller owns) is never touched after
   `zf_helper_finish` returns.

   One job is posted at a time: a caller that finds the slot taken (another
   thread's box read) runs its rows alone.  The helper keeps its own decoding
   state (`zf_worker`), which each job's `run` grows as it needs.

   Windows: no helper; `zf_helper_post` returns 0 and callers run alone. */
#ifndef ZF_HELPER_H
#define ZF_HELPER_H

#include <stdint.h>
#include <stdlib.h>

/* one thread's decoding state (a zstd context, a scratch buffer for one decoded
   chunk, a buffer for one file, one for two blosc blocks), grown by the jobs that
   use it */
typedef struct zf_worker {
    void* dctx;
    uint8_t* scratch;
    int64_t scratch_cap;
    uint8_t* filebuf;
    int64_t filecap;
    uint8_t* blocks;
    int64_t blocks_cap;
} zf_worker;

typedef struct zf_job zf_job;
struct zf_job {
    /* claim rows of the job until none is left, with `worker`'s state */
    void (*run)(zf_job* job, zf_worker* worker);
    int released;  /* (atomic) the helper is done with the job */
};

#if defined(_WIN32)

static int zf_helper_post(zf_job* job) { (void)job; return 0; }
static void zf_helper_finish(zf_job* job) { (void)job; }
static int64_t zf_helper_jobs(void) { return 0; }
static void zf_helper_count_rows(int64_t n) { (void)n; }
static int64_t zf_helper_rows(void) { return 0; }

#else

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <time.h>
#if defined(__linux__)
#include <sys/prctl.h>
#endif

static zf_job* zf_helper_slot = NULL;   /* (atomic) the posted job */
static int zf_helper_sleeping = 0;      /* (atomic) the helper waits on zf_helper_wake */
static int zf_helper_state = 0;         /* under zf_helper_lock: 0 none, 1 running, -1 failed */
static int zf_helper_forks = 0;         /* pthread_atfork registered */
static int64_t zf_helper_taken = 0;     /* (atomic) jobs the helper took, for tests */
static int64_t zf_helper_done = 0;      /* (atomic) rows the helper did, for tests */
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

static zf_job* zf_helper_take(int order) {
    if (__atomic_load_n(&zf_helper_slot, order) == NULL) return NULL;
    return __atomic_exchange_n(&zf_helper_slot, NULL, __ATOMIC_SEQ_CST);
}

static void* zf_helper_main(void* arg) {
    zf_worker w = {NULL, NULL, 0, NULL, 0, NULL, 0};
    zf_job* job;
    int64_t until;
    unsigned k;
    (void)arg;
#if defined(__linux__)
    prctl(PR_SET_NAME, "zarrfast-helper", 0, 0, 0);  /* (as top -H and py-spy show it) */
#endif
    for (;;) {
        job = zf_helper_take(__ATOMIC_RELAXED);
        if (job == NULL) {  /* spin a while, then sleep */
            until = zf_helper_now() + zf_helper_spin_ns;
            for (k = 1; (job = zf_helper_take(__ATOMIC_RELAXED)) == NULL; k++) {
                zf_helper_pause();
                if (k % 64 == 0 && zf_helper_now() > until) break;
            }
        }
        if (job == NULL) {
            pthread_mutex_lock(&zf_helper_lock);
            __atomic_store_n(&zf_helper_sleeping, 1, __ATOMIC_SEQ_CST);
            /* (seq_cst: ordered after the store above, as zf_helper_post's load of
               zf_helper_sleeping is after its store of the job) */
            while ((job = zf_helper_take(__ATOMIC_SEQ_CST)) == NULL)
                pthread_cond_wait(&zf_helper_wake, &zf_helper_lock);
            __atomic_store_n(&zf_helper_sleeping, 0, __ATOMIC_SEQ_CST);
            pthread_mutex_unlock(&zf_helper_lock);
        }
        __atomic_fetch_add(&zf_helper_taken, 1, __ATOMIC_RELAXED);
        job->run(job, &w);
        __atomic_store_n(&job->released, 1, __ATOMIC_RELEASE);
    }
    return NULL;
}

/* in a forked child the helper does not exist: start another when asked */
static void zf_helper_after_fork(void) {
    pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t wake = PTHREAD_COND_INITIALIZER;
    zf_helper_lock = lock;
    zf_helper_wake = wake;
    zf_helper_slot = NULL;
    zf_helper_sleeping = 0;
    zf_helper_state = 0;
}

static int zf_helper_start(void) {
    pthread_t t;
    pthread_attr_t attr;
    sigset_t all, old;
    int state = __atomic_load_n(&zf_helper_state, __ATOMIC_ACQUIRE);
    if (state != 0) return state == 1;
    pthread_mutex_lock(&zf_helper_lock);
    if (zf_helper_state == 0) {
        if (!zf_helper_forks)
            zf_helper_forks = pthread_atfork(NULL, NULL, zf_helper_after_fork) == 0;
        state = -1;
        if (zf_helper_forks && pthread_attr_init(&attr) == 0) {
            /* every asynchronous signal blocked in the helper (it inherits the mask):
               they go to Python's threads, and its reads are never interrupted; the
               synchronous ones stay, so that a crash in it still reaches faulthandler */
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
                state = 1;
            pthread_sigmask(SIG_SETMASK, &old, NULL);
            pthread_attr_destroy(&attr);
        }
        __atomic_store_n(&zf_helper_state, state, __ATOMIC_RELEASE);
    }
    state = zf_helper_state;
    pthread_mutex_unlock(&zf_helper_lock);
    return state == 1;
}

/* Post `job` for the helper (starting it the first time).  1: posted (call
   zf_helper_finish before the job's memory goes); 0: not posted (no helper, or the
   slot is taken), the caller runs every row itself. */
static int zf_helper_post(zf_job* job) {
    zf_job* expected = NULL;
    if (!zf_helper_start()) return 0;
    job->released = 0;
    if (!__atomic_compare_exchange_n(&zf_helper_slot, &expected, job, 0, __ATOMIC_SEQ_CST,
                                     __ATOMIC_SEQ_CST))
        return 0;
    if (__atomic_load_n(&zf_helper_sleeping, __ATOMIC_SEQ_CST)) {
        pthread_mutex_lock(&zf_helper_lock);
        pthread_cond_signal(&zf_helper_wake);
        pthread_mutex_unlock(&zf_helper_lock);
    }
    return 1;
}

/* After the caller's own rows: take a posted job back, or wait until the helper
   lets it go.  The helper's writes are then visible to the caller.  The wait is the
   rest of the helper's row: spun at first, then yielded, then (a read blocked on a
   slow file system) slept in steps of 50 us, so as not to burn a core. */
static void zf_helper_finish(zf_job* job) {
    zf_job* expected = job;
    unsigned k = 0;
    struct timespec nap = {0, 50000};
    if (__atomic_compare_exchange_n(&zf_helper_slot, &expected, NULL, 0, __ATOMIC_SEQ_CST,
                                    __ATOMIC_SEQ_CST))
        return;
    while (!__atomic_load_n(&job->released, __ATOMIC_ACQUIRE)) {
        if (++k < 4096) zf_helper_pause();
        else if (k < 8192) sched_yield();
        else nanosleep(&nap, NULL);
    }
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

#endif
#endif
