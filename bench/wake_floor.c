/* The floor under any prober that wakes once per probe: a bare loop woken
 * by a 1 ms timerfd through epoll, doing nothing else. bench/probe_cost.sh
 * runs it side by side with the daemons and prints its CPU per second, so
 * the probe figures can be read against what a wake-up costs on the machine
 * at that moment. Runs for argv[1] seconds (default 20); argv[2], when
 * given, is the period in microseconds instead of 1000 (100000: the
 * congestion collector's 100 ms tick). On exit it prints its CPU per
 * wake-up (schedstat: what a thread that only sleeps and wakes costs). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <unistd.h>

/* This thread's CPU time so far, ns (/proc/thread-self/schedstat), or -1. */
static long long SchedNs(void) {
  long long ns = -1;
  FILE* f = fopen("/proc/thread-self/schedstat", "r");
  if (f == NULL) return -1;
  if (fscanf(f, "%lld", &ns) != 1) ns = -1;
  fclose(f);
  return ns;
}

int main(int argc, char** argv) {
  int seconds = argc > 1 ? atoi(argv[1]) : 20;
  long period_us = argc > 2 ? atol(argv[2]) : 1000;
  if (period_us < 1 || period_us >= 1000000) period_us = 1000;
  long wakeups = seconds * 1000000L / period_us;
  int t = timerfd_create(CLOCK_MONOTONIC, 0);
  struct itimerspec it = {{0, period_us * 1000}, {0, period_us * 1000}};
  int e = epoll_create1(0);
  struct epoll_event ev = {.events = EPOLLIN, .data.fd = t};
  if (t < 0 || e < 0 || timerfd_settime(t, 0, &it, NULL) != 0 ||
      epoll_ctl(e, EPOLL_CTL_ADD, t, &ev) != 0) {
    perror("wake_floor");
    return 1;
  }
  long long start_ns = SchedNs();
  for (long i = 0; i < wakeups; i++) {
    struct epoll_event out;
    uint64_t n;
    if (epoll_wait(e, &out, 1, -1) == 1 && read(t, &n, sizeof n) < 0) break;
  }
  if (start_ns >= 0 && wakeups > 0) {
    printf("%ld wake-ups every %ld us: %.1f us of CPU each (schedstat)\n",
           wakeups, period_us, (SchedNs() - start_ns) / 1e3 / wakeups);
  }
  return 0;
}
