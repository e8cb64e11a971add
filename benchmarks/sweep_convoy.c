// numa01's loop on real hardware: NT threads bzero() a buffer in whole-buffer sweeps, as
// autonuma-benchmark's numa01.c does (forward, unsynchronised, writes only). Driven by
// benchmarks/convoy.py, which compiles and runs it and reads what it prints.
//   usage: sweep_convoy SIZE_MIB LOOPS NT MODE
//   MODE 0: one shared buffer, every thread starts at its beginning together (numa01: the
//           threads leave their init sweep together);
//   MODE 1: a private buffer per thread (numa01_THREAD_ALLOC's loop), first touched by it;
//   MODE 2: one shared buffer, thread i first writes from i/NT of the way in to the end (the
//           independent phases numalab's engine assumes, engine.batch._sweep_phase).
// Thread i is pinned to CPU i % ncpus. Prints, per thread, the monotonic seconds at which each
// sweep ended (from a common start after a barrier), then one summary line.
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <sched.h>
#include <unistd.h>
static size_t SIZE; static int LOOPS, NT, MODE, NCPU;
static char *shared; static pthread_barrier_t bar;
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
static double t0; static double *ends;
static void *run(void *a){ long i=(long)a; cpu_set_t s; CPU_ZERO(&s); CPU_SET(i%NCPU,&s); pthread_setaffinity_np(pthread_self(),sizeof s,&s);
  char *p = MODE!=1 ? shared : malloc(SIZE);
  if (MODE==1) bzero(p, SIZE);           // first touch, as the init sweep
  pthread_barrier_wait(&bar);
  if (i==0) t0=now();
  pthread_barrier_wait(&bar);
  if (MODE==2 && i) { size_t off = SIZE/NT*i/4096*4096; bzero(p+off, SIZE-off); }
  for(int l=0;l<LOOPS;l++){ bzero(p,SIZE); ends[i*LOOPS+l]=now()-t0; }
  return 0;}
int main(int c,char**v){ SIZE=(size_t)atol(v[1])<<20; LOOPS=atoi(v[2]); NT=atoi(v[3]); MODE=atoi(v[4]);
  if(c!=5||NT<1||NT>256||LOOPS<1||SIZE==0){fprintf(stderr,"usage: %s SIZE_MIB LOOPS NT(1-256) MODE(0-2)\n",v[0]);return 2;}
  NCPU=(int)sysconf(_SC_NPROCESSORS_ONLN);
  shared=malloc(SIZE); bzero(shared,SIZE); ends=calloc(NT*LOOPS,sizeof(double));
  pthread_barrier_init(&bar,0,NT); pthread_t th[256];
  for(long i=0;i<NT;i++) pthread_create(&th[i],0,run,(void*)i);
  for(int i=0;i<NT;i++) pthread_join(th[i],0);
  for(int i=0;i<NT;i++){ printf("t%d",i); for(int l=0;l<LOOPS;l++) printf(" %.4f",ends[i*LOOPS+l]); printf("\n"); }
  double gb = (double)SIZE*LOOPS*NT/1e9, tmax=0; for(int i=0;i<NT*LOOPS;i++) if(ends[i]>tmax) tmax=ends[i];
  printf("mode %d threads %d size %zu MiB loops %d: %.2f s, %.2f GB/s total\n", MODE, NT, SIZE>>20, LOOPS, tmax, gb/tmax);
}
