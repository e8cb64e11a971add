/* numa01 (autonuma-benchmark, spec benchmarks-and-reports.md §1.2-1.3) rewritten small for a
 * virtual machine: P processes (fork; no memory shared between them), T writer threads each, a
 * SIZE buffer per process malloc'ed after the fork.  Every thread sets MPOL_BIND to node B,
 * zero-writes the whole buffer once, returns to the default policy, then sweeps LOOPS times:
 * the whole buffer (numa01) or its slice i*S..(i+1)*S, S = SIZE/T (THREAD_ALLOC).
 *
 * usage: numa01 THREADS SIZE_MIB LOOPS THREAD_ALLOC NODE_B [PROCESSES [ALIGN]]
 * ALIGN=1 places the buffer on a 2 MiB boundary (aligned_alloc) instead of numa01's malloc, whose
 * 4 KiB chunk header leaves the mapping's first and last partial 2 MiB as base pages.
 * prints "numa01_elapsed_s SECONDS" (fork to the last join), one "thread" line a writer and one
 * "sweeps PID I T..." line a writer with the end of each of its sweeps (seconds after the fork). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MPOL_DEFAULT 0
#define MPOL_BIND 2

static size_t size;
static int threads, loops, thread_alloc, node_b;
static char *buf;

static double t0;

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

static void *worker(void *arg)
{
	long i = (long)arg;
	unsigned long mask = 1UL << node_b;
	size_t s = size / threads;
	char *lo = thread_alloc ? buf + i * s : buf;
	size_t n = thread_alloc ? s : size;

	if (syscall(SYS_set_mempolicy, MPOL_BIND, &mask, 8 * sizeof(mask)))
		perror("set_mempolicy(MPOL_BIND)");
	memset(buf, 0, size);
	if (syscall(SYS_set_mempolicy, MPOL_DEFAULT, NULL, 0))
		perror("set_mempolicy(MPOL_DEFAULT)");
	double t_init = now() - t0;
	/* when each sweep ended: the writers' phases against each other (are they a convoy?) */
	double *sweep_end = calloc(loops ? loops : 1, sizeof(double));
	for (int l = 0; l < loops; l++) {
		memset(lo, 0, n);
		if (sweep_end)
			sweep_end[l] = now() - t0;
	}
	/* one line a thread: when its bound init and its last sweep ended, seconds after the fork;
	 * then one "sweeps" line with every sweep's end (written after the loop: no stdio in it) */
	printf("thread %d %ld init_end_s %.3f loop_end_s %.3f\n", (int)getpid(), i, t_init, now() - t0);
	if (sweep_end && loops) {
		flockfile(stdout);
		printf("sweeps %d %ld", (int)getpid(), i);
		for (int l = 0; l < loops; l++)
			printf(" %.4f", sweep_end[l]);
		printf("\n");
		funlockfile(stdout);
	}
	free(sweep_end);
	return NULL;
}

int main(int argc, char **argv)
{
	int procs = 2, align = 0;
	pid_t child = 1;

	if (argc < 6 || argc > 8) {
		fprintf(stderr, "usage: numa01 THREADS SIZE_MIB LOOPS THREAD_ALLOC NODE_B [PROCESSES [ALIGN]]\n");
		return 2;
	}
	threads = atoi(argv[1]);
	size = (size_t)atol(argv[2]) << 20;
	loops = atoi(argv[3]);
	thread_alloc = atoi(argv[4]);
	node_b = atoi(argv[5]);
	if (argc >= 7)
		procs = atoi(argv[6]);
	if (argc == 8)
		align = atoi(argv[7]);
	if (threads < 1 || threads > 256 || size == 0 || loops < 0 || node_b < 0 || node_b > 63 ||
	    procs < 1 || procs > 2) {
		fprintf(stderr, "numa01: THREADS 1-256, SIZE_MIB > 0, LOOPS >= 0, NODE_B 0-63, PROCESSES 1-2\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	t0 = now();
	if (procs == 2)
		child = fork();
	buf = align ? aligned_alloc(2 << 20, size) : malloc(size);
	pthread_t *t = calloc(threads, sizeof(*t));
	if (!buf || !t) {
		perror("malloc");
		return 1;
	}
	for (long i = 0; i < threads; i++)
		pthread_create(&t[i], NULL, worker, (void *)i);
	for (long i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	if (child == 0)
		return 0;
	if (procs == 2)
		waitpid(child, NULL, 0);
	printf("numa01_elapsed_s %.3f\n", now() - t0);
	return 0;
}
