/* The floor under any prober that wakes once per probe: a bare loop woken
 * by a 1 ms timerfd through epoll, doing nothing else. bench/probe_cost.sh
 * runs it side by side with the daemons and prints its CPU per second, so
 * the probe figures can be read against what a wake-up costs on the machine
 * at that moment. Runs for argv[1] seconds (default 20). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <unistd.h>

int main(int argc, char** argv) {
  int seconds = argc > 1 ? atoi(argv[1]) : 20;
  int t = timerfd_create(CLOCK_MONOTONIC, 0);
  struct itimerspec it = {{0, 1000000}, {0, 1000000}};
  int e = epoll_create1(0);
  struct epoll_event ev = {.events = EPOLLIN, .data.fd = t};
  if (t < 0 || e < 0 || timerfd_settime(t, 0, &it, NULL) != 0 ||
      epoll_ctl(e, EPOLL_CTL_ADD, t, &ev) != 0) {
    perror("wake_floor");
    return 1;
  }
  for (long i = 0; i < seconds * 1000L; i++) {
    struct epoll_event out;
    uint64_t n;
    if (epoll_wait(e, &out, 1, -1) == 1 && read(t, &n, sizeof n) < 0) break;
  }
  return 0;
}
