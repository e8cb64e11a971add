// Who takes a protected huge page's fault when numa01's writers sweep one buffer? A user-space
// stand-in for the NUMA hinting fault, driven by benchmarks/fault_race.py.
//
// NT writer threads bzero() a shared buffer in whole-buffer sweeps (numa01's loop). A scanner
// thread plays task_numa_work: every SCAN_MS ms it makes the next SCAN_MIB of the buffer
// PROT_NONE (mprotect), cyclically. A writer that touches a protected 2 MiB chunk takes SIGSEGV;
// the handler plays do_huge_pmd_numa_page: the first thread to claim the chunk (an atomic
// compare-and-swap on its state, as the kernel's check that the PMD is still the one it read)
// records the fault, spends FAULT_US microseconds (the fault's kernel time; a migration of a
// 2 MiB folio takes a few hundred), and restores the chunk (mprotect read-write). A writer that
// loses the race records nothing and retries its access, as a kernel fault that finds the PMD
// changed returns and the access is retried.
//
//   usage: fault_race SIZE_MIB LOOPS NT MODE SCAN_MIB SCAN_MS FAULT_US
//   MODE 0: every writer starts at the buffer's beginning together (numa01's threads leave
//           their init sweep together); MODE 2: writer i first writes from i/NT of the way in
//           (the independent phases numalab's engine assumes, engine.batch._sweep_phase).
// Writer i is pinned to CPU i % ncpus; the scanner is not pinned and sleeps between passes.
// Prints one line per fault: "f CHUNK THREAD SECONDS" (in the order the faults were claimed),
// then one summary line.
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define CHUNK (2UL << 20)
#define MAXF (1 << 22)
static size_t SIZE, NCHUNK; static int LOOPS, NT, MODE, NCPU, SCAN_MS, FAULT_US; static size_t SCAN_CHUNKS;
static char *buf; static _Atomic int *state; static pthread_barrier_t bar;
static _Atomic int done_writers; static _Atomic long nf;
static int f_chunk[MAXF], f_thread[MAXF]; static double f_time[MAXF];
static __thread int me = -1;
static double t0;
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}

static void on_segv(int sig, siginfo_t *si, void *ctx) {
  (void)sig; (void)ctx;
  char *a = (char *)si->si_addr;
  if (a < buf || a >= buf + SIZE || me < 0) { signal(SIGSEGV, SIG_DFL); raise(SIGSEGV); return; }
  size_t c = (size_t)(a - buf) / CHUNK;
  int one = 1;
  if (atomic_compare_exchange_strong(&state[c], &one, 2)) {     // the first to reach it
    long k = atomic_fetch_add(&nf, 1);
    if (k < MAXF) { f_chunk[k] = (int)c; f_thread[k] = me; f_time[k] = now() - t0; }
    if (FAULT_US > 0) { double end = now() + FAULT_US * 1e-6; while (now() < end) ; }
    mprotect(buf + c * CHUNK, CHUNK, PROT_READ | PROT_WRITE);
    atomic_store(&state[c], 0);
  }
  // the loser (or a fault on a chunk being restored): return; the access is retried
}

static void *writer(void *a) {
  long i = (long)a; cpu_set_t s; CPU_ZERO(&s); CPU_SET(i % NCPU, &s);
  pthread_setaffinity_np(pthread_self(), sizeof s, &s);
  me = (int)i;
  pthread_barrier_wait(&bar);
  if (MODE == 2 && i) { size_t off = SIZE / NT * i / CHUNK * CHUNK; bzero(buf + off, SIZE - off); }
  for (int l = 0; l < LOOPS; l++) bzero(buf, SIZE);
  atomic_fetch_add(&done_writers, 1);
  return 0;
}

static void *scanner(void *a) {
  (void)a;
  pthread_barrier_wait(&bar);
  size_t next = 0;
  while (atomic_load(&done_writers) < NT) {
    struct timespec d = {SCAN_MS / 1000, (long)(SCAN_MS % 1000) * 1000000L};
    nanosleep(&d, 0);
    for (size_t k = 0; k < SCAN_CHUNKS; k++, next = (next + 1) % NCHUNK) {
      int zero = 0;                        // a chunk still protected from the last pass stays so
      if (atomic_compare_exchange_strong(&state[next], &zero, 3)) {
        mprotect(buf + next * CHUNK, CHUNK, PROT_NONE);
        atomic_store(&state[next], 1);
      }
    }
  }
  return 0;
}

int main(int c, char **v) {
  if (c != 8) { fprintf(stderr, "usage: %s SIZE_MIB LOOPS NT MODE SCAN_MIB SCAN_MS FAULT_US\n", v[0]); return 2; }
  SIZE = (size_t)atol(v[1]) << 20; LOOPS = atoi(v[2]); NT = atoi(v[3]); MODE = atoi(v[4]);
  SCAN_CHUNKS = ((size_t)atol(v[5]) << 20) / CHUNK; SCAN_MS = atoi(v[6]); FAULT_US = atoi(v[7]);
  NCHUNK = SIZE / CHUNK;
  if (NT < 1 || NT > 256 || LOOPS < 1 || NCHUNK < 1 || SCAN_CHUNKS < 1 || SCAN_MS < 1 || FAULT_US < 0
      || (MODE != 0 && MODE != 2)) {
    fprintf(stderr, "usage: %s SIZE_MIB LOOPS NT(1-256) MODE(0|2) SCAN_MIB SCAN_MS FAULT_US\n", v[0]); return 2;
  }
  NCPU = (int)sysconf(_SC_NPROCESSORS_ONLN);
  if (posix_memalign((void **)&buf, CHUNK, SIZE)) { perror("posix_memalign"); return 1; }
  madvise(buf, SIZE, MADV_HUGEPAGE);
  bzero(buf, SIZE);                        // first touch: the init sweep
  state = calloc(NCHUNK, sizeof *state);
  struct sigaction sa; memset(&sa, 0, sizeof sa); sa.sa_sigaction = on_segv; sa.sa_flags = SA_SIGINFO | SA_NODEFER;
  sigaction(SIGSEGV, &sa, 0);
  pthread_barrier_init(&bar, 0, NT + 1);
  pthread_t th[257];
  t0 = now();
  for (long i = 0; i < NT; i++) pthread_create(&th[i], 0, writer, (void *)i);
  pthread_create(&th[NT], 0, scanner, 0);
  for (int i = 0; i <= NT; i++) pthread_join(th[i], 0);
  double wall = now() - t0;
  long n = atomic_load(&nf); if (n > MAXF) n = MAXF;
  for (long k = 0; k < n; k++) printf("f %d %d %.6f\n", f_chunk[k], f_thread[k], f_time[k]);
  printf("mode %d threads %d size %zu MiB loops %d scan %zu MiB / %d ms fault %d us: %.2f s, %ld faults\n",
         MODE, NT, SIZE >> 20, LOOPS, SCAN_CHUNKS * CHUNK >> 20, SCAN_MS, FAULT_US, wall, n);
  return 0;
}
