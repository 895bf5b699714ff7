/* The floor under any prober that wakes once per probe: a bare loop woken
 * every argv[3] microseconds (default 1000), doing nothing else.
 * bench/probe_cost.sh runs it side by side with the daemons and prints its
 * CPU per second, so the probe figures can be read against what a wake-up
 * costs on the machine at that moment. Runs for argv[1] seconds (default
 * 20). argv[2] picks how it sleeps, to weigh the ways a prober could:
 *   epoll   a periodic timerfd through epoll (armed once; the floor)
 *   asio    epoll on a timerfd re-armed twice per wake-up, as Boost.Asio's
 *           reactor does for a steady_timer set again in its handler
 *   sleep   clock_nanosleep(TIMER_ABSTIME) to the next wake-up (a thread
 *           of its own, no descriptor)
 * A period of 100000 is the congestion collector's 100 ms tick. On exit it
 * prints its CPU per wake-up (schedstat: what a thread that only sleeps and
 * wakes costs). */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

static void add_ns(struct timespec* t, long ns) {
  t->tv_nsec += ns;
  while (t->tv_nsec >= 1000000000L) {
    t->tv_nsec -= 1000000000L;
    t->tv_sec++;
  }
}

/* This thread's CPU time so far, ns (/proc/thread-self/schedstat), or -1. */
static long long SchedNs(void) {
  long long ns = -1;
  FILE* f = fopen("/proc/thread-self/schedstat", "r");
  if (f == NULL) return -1;
  if (fscanf(f, "%lld", &ns) != 1) ns = -1;
  fclose(f);
  return ns;
}

static void Report(long long start_ns, long wakes, long period_us) {
  if (start_ns >= 0 && wakes > 0) {
    printf("%ld wake-ups every %ld us: %.1f us of CPU each (schedstat)\n",
           wakes, period_us, (SchedNs() - start_ns) / 1e3 / wakes);
  }
}

int main(int argc, char** argv) {
  int seconds = argc > 1 ? atoi(argv[1]) : 20;
  const char* mode = argc > 2 ? argv[2] : "epoll";
  long period_us = argc > 3 ? atol(argv[3]) : 1000;
  if (period_us < 1 || period_us >= 1000000) period_us = 1000;
  long wakes = seconds * 1000000L / period_us;
  long period_ns = period_us * 1000L;
  long long start_ns = SchedNs();
  if (strcmp(mode, "sleep") == 0) {
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    for (long i = 0; i < wakes; i++) {
      add_ns(&next, period_ns);
      clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
    }
    Report(start_ns, wakes, period_us);
    return 0;
  }
  int asio = strcmp(mode, "asio") == 0;
  int t = timerfd_create(CLOCK_MONOTONIC, 0);
  struct itimerspec it = {{0, asio ? 0 : period_ns}, {0, period_ns}};
  int e = epoll_create1(0);
  struct epoll_event ev = {.events = EPOLLIN, .data.fd = t};
  if (t < 0 || e < 0 || timerfd_settime(t, 0, &it, NULL) != 0 ||
      epoll_ctl(e, EPOLL_CTL_ADD, t, &ev) != 0) {
    perror("wake_floor");
    return 1;
  }
  struct timespec next;
  clock_gettime(CLOCK_MONOTONIC, &next);
  add_ns(&next, period_ns);
  for (long i = 0; i < wakes; i++) {
    struct epoll_event out;
    uint64_t n;
    if (epoll_wait(e, &out, 1, -1) != 1) break;
    if (!asio) {
      if (read(t, &n, sizeof n) < 0) break;
      continue;
    }
    /* Asio: after the wait the reactor sets the timerfd to the next timer
     * (none yet: far away), then the handler sets the timer again. */
    struct itimerspec far = {{0, 0}, {300, 0}};
    struct itimerspec at = {{0, 0}, next};
    add_ns(&next, period_ns);
    at.it_value = next;
    timerfd_settime(t, 0, &far, NULL);
    timerfd_settime(t, TFD_TIMER_ABSTIME, &at, NULL);
  }
  Report(start_ns, wakes, period_us);
  return 0;
}
