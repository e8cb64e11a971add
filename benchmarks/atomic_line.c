/*
 * What a locked RMW costs when another core shares its line: the question behind the futex
 * model's rcuref_lines and atomic_forward (docs/futex.md). Not part of the package, not a test;
 * built by hand (the package needs no compiler):
 *
 *     gcc -O2 -pthread -o atomic_line benchmarks/atomic_line.c && ./atomic_line [W Z [repeats]]
 *
 * Each operation of a thread is the 6.16 private hash's reference pattern: an atomic increment
 * (rcuref_get), W iterations of local work (the futex operation), an atomic decrement
 * (rcuref_put), Z iterations of local work (the rest of the loop). It prints, per repeat:
 *
 *   one     one thread alone on CPU 0 (ns per operation)
 *   own     two threads (CPUs 0 and 1), each on a line of its own
 *   shared  the same two threads on one line: the RMW pair's cost of sharing is shared - own
 *   one-way a cache line handed between the two CPUs (a ping-pong of writes: half its round trip)
 *
 * so the sharing penalty can be read against one line transfer on the same pair of CPUs.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define OPS 2000000L
#define PINGS 2000000L

static _Atomic long counters[2][16] __attribute__((aligned(128)));
static volatile long ping[16] __attribute__((aligned(128)));
static int W = 200, Z = 600, shared;
static volatile int go;
static double per_op[2];

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

static void pin(int cpu)
{
	cpu_set_t s;
	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	sched_setaffinity(0, sizeof s, &s);
}

static inline void work(int n)
{
	for (volatile int i = 0; i < n; i++)
		;
}

static void *loop(void *arg)
{
	long id = (long)arg;
	_Atomic long *c = shared ? &counters[0][0] : &counters[id][0];

	pin((int)id);
	while (!go)
		;
	double t0 = now();
	for (long i = 0; i < OPS; i++) {
		atomic_fetch_add(c, 1);
		work(W);
		atomic_fetch_sub(c, 1);
		work(Z);
	}
	per_op[id] = (now() - t0) / OPS;
	return NULL;
}

static double run(int threads, int on_one_line)
{
	pthread_t t[2];

	shared = on_one_line;
	go = 0;
	for (long i = 0; i < threads; i++)
		pthread_create(&t[i], NULL, loop, (void *)i);
	go = 1;
	for (int i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	return threads == 2 ? (per_op[0] + per_op[1]) / 2 : per_op[0];
}

static void *pong(void *arg)
{
	(void)arg;
	pin(1);
	for (long i = 0; i < PINGS; i++) {
		while (ping[0] != 2 * i + 1)
			;
		ping[0] = 2 * i + 2;
	}
	return NULL;
}

static double one_way(void)
{
	pthread_t t;

	ping[0] = 0;
	pin(0);
	pthread_create(&t, NULL, pong, NULL);
	double t0 = now();
	for (long i = 0; i < PINGS; i++) {
		ping[0] = 2 * i + 1;
		while (ping[0] != 2 * i + 2)
			;
	}
	double ns = now() - t0;
	pthread_join(t, NULL);
	return ns / PINGS / 2;
}

int main(int argc, char **argv)
{
	int repeats = 4;

	if (argc >= 3) {
		W = atoi(argv[1]);
		Z = atoi(argv[2]);
	}
	if (argc >= 4)
		repeats = atoi(argv[3]);
	if (W < 0 || Z < 0 || repeats < 1) {
		fprintf(stderr, "usage: %s [W Z [repeats]]: W, Z >= 0 work iterations, repeats >= 1\n", argv[0]);
		return 2;
	}
	printf("W=%d Z=%d, ns per operation of a thread (one RMW pair); one-way: a line handed between CPUs 0 and 1\n",
	       W, Z);
	printf("%8s %8s %8s %8s %16s %8s\n", "one", "own", "shared", "one-way", "shared - own", "ratio");
	for (int r = 0; r < repeats; r++) {
		double one = run(1, 0), own = run(2, 0), sh = run(2, 1), ow = one_way();
		printf("%8.1f %8.1f %8.1f %8.1f %16.1f %8.2f\n", one, own, sh, ow, sh - own, (sh - own) / ow);
		fflush(stdout);
	}
	return 0;
}
